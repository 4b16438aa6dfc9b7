// Request bodies as the API reads them (contract §1.2): JSON whatever the Content-Type, an empty body is no body,
// and a null value means the field is absent. Shared by the fastify routes and the lean :publish path.
import { badRequest } from '../domain/errors.ts';

export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Deeper bodies are refused (400) rather than risking a stack overflow while walking them. */
export const MAX_BODY_DEPTH = 64;

/** "A null value means the field is absent" (contract §1.2): drops null-valued keys of objects, recursively. */
export function stripNulls(value: unknown, depth = 0): unknown {
  if (depth > MAX_BODY_DEPTH) throw badRequest(`request body is nested more than ${MAX_BODY_DEPTH} levels deep`);
  if (Array.isArray(value)) return value.map((v) => stripNulls(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    // defineProperty, not assignment: a "__proto__" key stays an own field instead of replacing the prototype.
    for (const [k, v] of Object.entries(value)) {
      if (v !== null) Object.defineProperty(out, k, { value: stripNulls(v, depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
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
  return stripNulls(parsed);
}
