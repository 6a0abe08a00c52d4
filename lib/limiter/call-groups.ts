import calculateSlot from 'cluster-key-slot';

/**
 * Splits the keys of one decision into groups that a single call can decide: all together when the
 * contract takes several keys and they share a cluster slot (the guard's keys share a hash tag per
 * client); per slot on a cluster otherwise (a multi-slot call would fail with CROSSSLOT); one key per
 * call for a one-key contract (v1). Groups are lists of indexes into `keys`.
 */
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
