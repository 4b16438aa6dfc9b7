// Small helpers shared by the route files.
import type { FastifyRequest } from 'fastify';
import { unauthenticated } from '../domain/errors.ts';
import type { Principal } from '../auth/principal.ts';

/** The authenticated caller (the onRequest hook guarantees one on authenticated routes). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthenticated();
  return request.principal;
}

/**
 * An empty body is no body (contract §1.2), and where a route's body is optional no body means "no fields": a
 * create without one takes the defaults, a PATCH without one changes nothing (the IaC provider sends such PATCHes
 * with the JSON content type), a :publish without one is told which key is missing.
 */
export const noBodyIsEmpty = async (request: FastifyRequest): Promise<void> => {
  if (request.body === undefined) request.body = {};
};

/** Parses update_mask: null when absent or empty (apply every field present). */
export function parseUpdateMask(raw: string | undefined): Set<string> | null {
  if (raw === undefined) return null;
  const fields = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return fields.length === 0 ? null : new Set(fields);
}
