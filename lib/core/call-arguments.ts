/** KEYS then ARGV in one list of its final length, as a `LuaRunner` takes them (`...keys, ...args` would grow one). */
export function joined(keys: readonly string[], args: readonly (string | number)[]): (string | number)[] {
  const list = new Array<string | number>(keys.length + args.length);
  for (let i = 0; i < keys.length; i++) list[i] = keys[i];
  for (let i = 0; i < args.length; i++) list[keys.length + i] = args[i];
  return list;
}
