// Signature secret rotation without a gap (extensions §X3): the overlap's rules, shared by the API (what a rotation
// leaves, what a connector shows) and the delivery engine (whether a push is signed with the previous secret too).
import { badRequest } from './errors.ts';
import type { Micros } from './time.ts';

/** The overlap of a rotation that names none: 24 h. */
export const DEFAULT_OVERLAP_SECONDS = 86_400;
/** The longest overlap: 7 days, inclusive. */
export const MAX_OVERLAP_SECONDS = 7 * 86_400;

/** A connector's sealed secrets, as the store holds them (store/contract/connector-repos.ts). */
export interface RotationState {
  signatureSecretSealed: string;
  previousSignatureSecretSealed?: string;
  previousSignatureSecretExpireTime?: number | null;
}

/** The previous secret's fields of a connector with none (a PATCH of the secret ends the overlap so). */
export const NO_PREVIOUS_SECRET = { previousSignatureSecretSealed: '', previousSignatureSecretExpireTime: null };

/**
 * Whether the previous secret still signs at `at` (micros): it is stored and its overlap ends after `at`. An overlap
 * that has ended needs no write to end: every reader compares with its own now, the engine with the attempt's start.
 */
export function overlapRuns(c: RotationState, at: Micros): boolean {
  const until = c.previousSignatureSecretExpireTime;
  return (c.previousSignatureSecretSealed ?? '') !== '' && until !== null && until !== undefined && until > at;
}

// Protobuf JSON's duration: whole seconds with up to 9 decimals, then "s" (api-contract §1).
const DURATION = /^(\d{1,15})(?:\.(\d{1,9}))?s$/;

/** `overlap` of a rotation in micros (truncated), or a 400 naming the rule; absent: the default. */
export function parseOverlap(input: unknown): Micros {
  if (input === undefined) return DEFAULT_OVERLAP_SECONDS * 1_000_000;
  const m = typeof input === 'string' ? DURATION.exec(input) : null;
  const micros = m ? Number(m[1]) * 1_000_000 + Number((m[2] ?? '').padEnd(6, '0').slice(0, 6)) : Number.NaN;
  if (!(micros <= MAX_OVERLAP_SECONDS * 1_000_000))
    throw badRequest(
      `overlap must be a duration of 0 to ${MAX_OVERLAP_SECONDS} seconds (7 days) such as "86400s", got ${JSON.stringify(input)}`,
    );
  return micros;
}

/**
 * The previous secret's fields after a rotation at `now` from `current` (the connector as it is) with an overlap of
 * `overlap` micros: the current secret signs alongside the new one until now + overlap. Nothing to keep (no secret
 * until now, or an overlap of 0) leaves none; a rotation during an overlap drops the older previous secret, so a push
 * carries at most two signatures.
 */
export function previousAfterRotation(
  current: RotationState,
  overlap: Micros,
  now: Micros,
): Required<Omit<RotationState, 'signatureSecretSealed'>> {
  if (current.signatureSecretSealed === '' || overlap <= 0) return { ...NO_PREVIOUS_SECRET };
  return {
    previousSignatureSecretSealed: current.signatureSecretSealed,
    previousSignatureSecretExpireTime: now + overlap,
  };
}
