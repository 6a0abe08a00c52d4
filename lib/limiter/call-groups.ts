import calculateSlot from 'cluster-key-slot';

/** The keys of a decision in groups (indexes) one call can decide: all, per cluster slot, or one each (v1). */
export function callGroups(keys: readonly string[], multiKey: boolean, clustered: boolean): number[][] {
  if (!multiKey) return keys.map((_, i) => [i]);
  if (!clustered || keys.length === 1) return [keys.map((_, i) => i)];
  const bySlot = new Map<number, number[]>();
  keys.forEach((key, i) => {
    const slot = calculateSlot(key);
    const group = bySlot.get(slot);
    if (group) group.push(i);
    else bySlot.set(slot, [i]);
  });
  return [...bySlot.values()];
}
