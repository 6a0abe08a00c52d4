/**
 * KEYS then ARGV in one list of its final length, as a `LuaRunner` takes them: a runner spreads
 * the list last into the FCALL (EVALSHA), which V8 passes on as it is, where `...keys, ...args`
 * would build a list of its own and grow it on the way (a third of the bytes an FCALL allocated in
 * this package, by V8's heap sampler).
 */
export function joined(keys: readonly string[], args: readonly (string | number)[]): (string | number)[] {
  const list = new Array<string | number>(keys.length + args.length);
  for (let i = 0; i < keys.length; i++) list[i] = keys[i];
  for (let i = 0; i < args.length; i++) list[keys.length + i] = args[i];
  return list;
}
