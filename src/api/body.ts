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
 */
function stripNulls(value: unknown, depth = 0): void {
  if (depth > MAX_BODY_DEPTH) throw badRequest(`request body is nested more than ${MAX_BODY_DEPTH} levels deep`);
  if (Array.isArray(value)) {
    for (const v of value) stripNulls(v, depth + 1);
  } else if (value && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    for (const k of Object.keys(object)) {
      if (object[k] === null) delete object[k];
      else stripNulls(object[k], depth + 1);
    }
  }
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
  stripNulls(parsed);
  return parsed;
}
