/*
 * How values cross the boundary between Redis and the Lua of the function libraries (Redis 7.0,
 * Lua 5.1, x86-64), so that the in-memory model reads its ARGV and writes its replies exactly as the
 * Lua does, garbage included. Each function names the C code it stands for.
 */

const TWO_TO_63 = 2 ** 63;

/** C `isspace` in the "C" locale. */
const SPACE = /^[ \t\n\v\f\r]*/;

/**
 * The longest prefix glibc's `strtod` converts: optional spaces and sign, then `inf`/`infinity`,
 * `nan`/`nan(chars)`, a hexadecimal float (`0x1.8p3`) or a decimal one (`1.5e3`, `.5`, `5.`).
 */
const STRTOD =
  /^[ \t\n\v\f\r]*([+-]?)(?:(inf(?:inity)?)|(nan(?:\([0-9A-Za-z_]*\))?)|0x([0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p([+-]?[0-9]+))?|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?))/i;

/** glibc `strtod(text, &end)`: the value and what follows it, or undefined when nothing converts. */
export function strtod(text: string): { value: number; rest: string } | undefined {
  const match = STRTOD.exec(text);
  if (!match) return undefined;
  const [consumed, sign, inf, nan, hexDigits, hexExponent, decimal] = match;
  let value: number;
  if (inf !== undefined) value = Infinity;
  else if (nan !== undefined) value = NaN;
  else if (hexDigits !== undefined) value = hexToNumber(hexDigits, hexExponent);
  else value = Number(decimal);
  return { value: sign === '-' ? -value : value, rest: text.slice(consumed.length) };
}

/**
 * `0x<digits>p<exponent>` as glibc rounds it: to the nearest double, ties to even, except that a
 * subnormal result forgets the 54th significant bit (glibc keeps 53 bits and a sticky flag for the
 * bits after the 54th, then rounds again, so `0x1…8…1p-1100` can come out one ulp low).
 */
function hexToNumber(digits: string, exponent = '0'): number {
  const point = digits.indexOf('.');
  const fraction = point === -1 ? 0 : digits.length - point - 1;
  let mantissa = BigInt(`0x${digits.replace('.', '') || '0'}`);
  let binaryExponent = Number(exponent) - 4 * fraction;
  if (mantissa === 0n) return 0;
  let bits = mantissa.toString(2).length;
  // Bits the result can hold: 53, fewer below the normal range (the smallest subnormal is 2^-1074).
  const keep = Math.min(53, binaryExponent + bits + 1074);
  let sticky = false;
  if (keep < 53 && bits > 53) {
    const shift = BigInt(bits - 53);
    sticky = (mantissa & ((1n << (shift - 1n)) - 1n)) !== 0n;
    mantissa >>= shift;
    binaryExponent += Number(shift);
    bits = 53;
  }
  if (keep < bits) {
    const shift = BigInt(Math.min(bits - keep, bits + 1));
    const dropped = mantissa & ((1n << shift) - 1n);
    const half = 1n << (shift - 1n);
    mantissa >>= shift;
    if (dropped > half || (dropped === half && (sticky || (mantissa & 1n) === 1n))) mantissa += 1n;
    binaryExponent += Number(shift);
  }
  // The result is exact from here; scale in two steps so no intermediate underflows or overflows early.
  const value = Number(mantissa);
  if (binaryExponent < -1000) return value * 2 ** (binaryExponent + 1074) * 2 ** -1074;
  if (binaryExponent > 1000) return value * 2 ** (binaryExponent - 1000) * 2 ** 1000;
  return value * 2 ** binaryExponent;
}

/**
 * Lua 5.1 `tonumber(s)` for a string argument (`luaO_str2d`): `strtod`, then only spaces may follow.
 * The string ends at its first NUL, as the C code reads it. `undefined` stands for Lua's nil,
 * also for a missing argument (`tonumber(nil)`).
 */
export function luaToNumber(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const nul = text.indexOf('\0');
  const converted = strtod(nul === -1 ? text : text.slice(0, nul));
  if (!converted) return undefined;
  // luaO_str2d retries an "x" with strtoul(s, 16); glibc's strtod already took every hex number it
  // could, so that retry never reaches the end of the string.
  if (/^x/i.test(converted.rest)) return undefined;
  return converted.rest.replace(SPACE, '') === '' ? converted.value : undefined;
}

/** The Lua script's `is_finite`. */
export function isFiniteNumber(n: number | undefined): n is number {
  return n !== undefined && Number.isFinite(n);
}

/**
 * A Lua number in a reply becomes an integer by the C cast `(long long)n`: truncated toward zero;
 * out of range (and NaN) it is what x86-64 gives, the minimum 64-bit integer.
 */
export function toRedisInteger(n: number): number {
  if (Number.isNaN(n) || n >= TWO_TO_63 || n < -TWO_TO_63) return -TWO_TO_63;
  return Math.trunc(n) + 0; // + 0 turns -0 into 0
}

/** Lua 5.1 `string.format('%d', n)`: the same cast, printed exactly. */
export function formatLuaInteger(n: number): string {
  return BigInt(toRedisInteger(n)).toString();
}

/**
 * Whether a command that takes an integer (PEXPIRE, HINCRBY's increment) accepts the Lua number `n`
 * given to `redis.call`. Redis 7.0 passes numbers as `%.17g` text, and those commands take only plain
 * integer text (`string2ll`): no exponent (|n| ≥ 1e17 prints as `1e+17`), no fraction, no `-0`,
 * nothing infinite.
 */
export function isIntegerArgument(n: number): boolean {
  return Number.isInteger(n) && Math.abs(n) < 1e17 && !Object.is(n, -0);
}

/** Redis' `string2ll`: the 64-bit integer that `text` spells exactly (no spaces, `+`, leading zeros or `-0`), or undefined. */
export function parseRedisInteger(text: string): bigint | undefined {
  if (!/^(0|-?[1-9][0-9]*)$/.test(text)) return undefined;
  const value = BigInt(text);
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Redis' `zslParseRange` for one bound (`1.5`, `(1.5` exclusive, `-inf`); undefined for "min or max is not a float". */
export function parseScoreBound(text: string): { value: number; exclusive: boolean } | undefined {
  const exclusive = text.startsWith('(');
  const converted = strtod(exclusive ? text.slice(1) : text);
  // The C string ends at a NUL; anything else after the number is an error.
  if (!converted || !/^(\0|$)/.test(converted.rest) || Number.isNaN(converted.value)) return undefined;
  return { value: converted.value, exclusive };
}
