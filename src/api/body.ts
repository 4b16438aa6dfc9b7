// Request bodies as the API reads them (contract §1.2): JSON whatever the Content-Type, an empty body is no body,
// and a null value means the field is absent. Shared by the fastify routes and the lean :publish path.
import { badRequest } from '../domain/errors.ts';

export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Deeper bodies are refused (400) rather than risking a stack overflow while walking them. */
export const MAX_BODY_DEPTH = 64;

/**
 * "A null value means the field is absent" (contract §1.2): drops null-valued keys of objects, recursively, in place
 * (the value is fresh from JSON.parse, which makes a "__proto__" key an own field, never the prototype). In place,
 * not copied: a copy made every key of every publish again, ~1 % of the main thread under load.
 * Also refuses text that is not Unicode: JSON escapes can spell a lone UTF-16 surrogate (`"\ud800"`), which cannot
 * be encoded as UTF-8 (in a resource name, a push body, a log line), so no field, key or value may hold one. The
 * walk only says "bad"; the field is named by a second walk, on that error alone.
 */
function stripNullsCheckingText(value: unknown, depth = 0): boolean {
  if (depth > MAX_BODY_DEPTH) throw badRequest(`request body is nested more than ${MAX_BODY_DEPTH} levels deep`);
  let wellFormed = true;
  if (Array.isArray(value)) {
    for (const v of value) {
      if (typeof v === 'string') wellFormed &&= v.isWellFormed();
      else wellFormed = stripNullsCheckingText(v, depth + 1) && wellFormed;
    }
  } else if (value && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    for (const k of Object.keys(object)) {
      const v = object[k];
      wellFormed &&= k.isWellFormed();
      if (v === null) delete object[k];
      else if (typeof v === 'string') wellFormed &&= v.isWellFormed();
      else wellFormed = stripNullsCheckingText(v, depth + 1) && wellFormed;
    }
  }
  return wellFormed;
}

/** The path of the first field name or text that is not Unicode (see stripNullsCheckingText). */
function malformedTextPath(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.isWellFormed() ? null : path;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = malformedTextPath(v, `${path}[${i}]`);
      if (found !== null) return found;
    }
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (!k.isWellFormed()) return path === '' ? 'a field name' : `a field name in ${path}`;
      const found = malformedTextPath(v, path === '' ? k : `${path}.${k}`);
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
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw badRequest('request body must be a JSON object');
  if (!stripNullsCheckingText(parsed)) {
    throw badRequest(`${malformedTextPath(parsed, '') ?? 'request body'}: the text is not valid Unicode (it holds a lone surrogate)`);
  }
  return parsed;
}
