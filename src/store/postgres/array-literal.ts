// Array parameters as PostgreSQL array literals, written here rather than by node-postgres: its encoder runs a type
// dispatch and two regular expressions over every element, and a group-commit batch sends ~20 elements per event
// (the event, its queue row, its device); that encoder was 5 % of the main thread's busy time at saturation (CPU
// profile of `npm run bench:cost -- max 15 --postgres`). The literal is the same one node-postgres would send.

const SPECIAL = /["\\]/;
const SPECIALS = /["\\]/g;

/**
 * The literal of a one-dimensional array of strings, numbers, booleans, bigints, byte arrays and nulls; undefined
 * for anything else (a nested array, a date, an object), which is left to node-postgres.
 */
export function arrayLiteral(values: readonly unknown[]): string | undefined {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v === 'string') out += SPECIAL.test(v) ? `"${v.replace(SPECIALS, '\\$&')}"` : `"${v}"`;
    else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') out += String(v);
    else if (v instanceof Uint8Array)
      out += `"\\\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}"`;
    else return undefined;
  }
  return `${out}}`;
}

/** The parameters with each array that arrayLiteral can write replaced by its literal. */
export function withArrayLiterals(params: readonly unknown[] | undefined): unknown[] | undefined {
  if (params === undefined) return undefined;
  let out: unknown[] | undefined;
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (!Array.isArray(p)) continue;
    const literal = arrayLiteral(p);
    if (literal === undefined) continue;
    out ??= params.slice();
    out[i] = literal;
  }
  return out ?? (params as unknown[]);
}
