// Request bodies as the API reads them (contract §1.2): JSON whatever the Content-Type, an empty body is no body,
// and a null value means the field is absent. Shared by the fastify routes and the lean :publish path.
import { badRequest } from '../domain/errors.ts';

export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Deeper bodies are refused (400) rather than risking a stack overflow while walking them. */
export const MAX_BODY_DEPTH = 64;

/** Text that can be stored (a field name, or a value): valid Unicode, without the NUL character. */
const storable = (text: string): boolean => text.isWellFormed() && !text.includes('\u0000');

/** A resource name (`organizations/…`, `projects/…`, `roles/…`): looked up, never stored as given. */
const RESOURCE_NAME = /^(?:organizations|projects|roles)\//;

/** A value that can be stored, or a resource name to look up (see stripNullsCheckingText). */
const storableValue = (text: string): boolean => storable(text) || (text.isWellFormed() && RESOURCE_NAME.test(text));

/** Why `text` cannot be stored (storable is false). */
const unstorableWhy = (text: string): string =>
  text.isWellFormed()
    ? 'the text may not contain the NUL character (U+0000)'
    : 'the text is not valid Unicode (it holds a lone surrogate)';

/**
 * "A null value means the field is absent" (contract §1.2): drops null-valued keys of objects, recursively, in place
 * (the value is fresh from JSON.parse, which makes a "__proto__" key an own field, never the prototype). In place,
 * not copied: a copy made every key of every publish again, ~1 % of the main thread under load.
 * Also refuses text that cannot be stored: JSON escapes can spell a lone UTF-16 surrogate (`"\ud800"`), which
 * cannot be encoded as UTF-8 (in a resource name, a push body, a log line), and the NUL character (`"\u0000"`),
 * which PostgreSQL's text (and its JSON, in label filters and latest events) cannot hold; refused on both backends,
 * so a body means the same on either. No field, key or value may hold one, but for NUL in a value that names a
 * resource (`projects/…`): an id of any format that matches nothing is a 404, never a 400 (contract §1.4), and a
 * lookup by a name with NUL finds nothing on either backend. The walk only says "bad"; the field is named by a
 * second walk, on that error alone.
 */
function stripNullsCheckingText(value: unknown, depth = 0): boolean {
  if (depth > MAX_BODY_DEPTH) throw badRequest(`request body is nested more than ${MAX_BODY_DEPTH} levels deep`);
  let wellFormed = true;
  if (Array.isArray(value)) {
    for (const v of value) {
      if (typeof v === 'string') wellFormed &&= storableValue(v);
      else wellFormed = stripNullsCheckingText(v, depth + 1) && wellFormed;
    }
  } else if (value && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    for (const k of Object.keys(object)) {
      const v = object[k];
      wellFormed &&= storable(k);
      if (v === null) delete object[k];
      else if (typeof v === 'string') wellFormed &&= storableValue(v);
      else wellFormed = stripNullsCheckingText(v, depth + 1) && wellFormed;
    }
  }
  return wellFormed;
}

/** The first field name or text that cannot be stored, as `<path>: <why>` (see stripNullsCheckingText). */
function unstorableText(value: unknown, path: string): string | null {
  if (typeof value === 'string') return storableValue(value) ? null : `${path}: ${unstorableWhy(value)}`;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = unstorableText(v, `${path}[${i}]`);
      if (found !== null) return found;
    }
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (!storable(k)) return `${path === '' ? 'a field name' : `a field name in ${path}`}: ${unstorableWhy(k)}`;
      const found = unstorableText(v, path === '' ? k : `${path}.${k}`);
      if (found !== null) return found;
    }
  }
  return null;
}

/** A request body as the API reads it: undefined when empty, else a JSON object without null-valued keys. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest('request body is not valid JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw badRequest('request body must be a JSON object');
  if (!stripNullsCheckingText(parsed))
    throw badRequest(unstorableText(parsed, '') ?? 'request body: the text cannot be stored');
  return parsed;
}
