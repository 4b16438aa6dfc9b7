// The data connector status machine (contract §6.6), pure. Callers apply the returned changes (status,
// failingSince, dropping the queue) in the same transaction as the trigger.
import { badRequest } from './errors.ts';

export const CONNECTOR_STATUSES = ['ACTIVE', 'USER_DISABLED', 'SYSTEM_DISABLED'] as const;
export type ConnectorStatus = (typeof CONNECTOR_STATUSES)[number];

/** Continuous failure without any success that turns an ACTIVE connector SYSTEM_DISABLED [spec]. */
export const AUTO_DISABLE_AFTER_MICROS = 5 * 24 * 3600 * 1_000_000;

export interface ConnectorState {
  status: ConnectorStatus;
  /** Time (micros) of the first failed attempt after the last success or activation; null when not failing. */
  failingSince: number | null;
}

export interface Transition extends ConnectorState {
  /** The connector's queue must be deleted (disabling). */
  dropQueue: boolean;
  /** The status changed (worth a log line). */
  changed: boolean;
}

/** Only ACTIVE and USER_DISABLED may be written [spec]; SYSTEM_DISABLED and anything else is a 400. */
export function parseWritableStatus(value: unknown): 'ACTIVE' | 'USER_DISABLED' {
  if (value === 'ACTIVE' || value === 'USER_DISABLED') return value;
  if (value === 'SYSTEM_DISABLED')
    throw badRequest('status: SYSTEM_DISABLED is set by the service only; write ACTIVE or USER_DISABLED');
  throw badRequest('status must be ACTIVE or USER_DISABLED');
}

/** State of a new connector: status absent or ACTIVE → ACTIVE, USER_DISABLED → USER_DISABLED. */
export function initialState(requested: unknown): ConnectorState {
  return { status: requested === undefined ? 'ACTIVE' : parseWritableStatus(requested), failingSince: null };
}

/** A PATCH of `status`. Re-enabling clears failingSince (no backfill); disabling drops the queue. */
export function applyStatusWrite(current: ConnectorState, requested: unknown): Transition {
  const to = parseWritableStatus(requested);
  if (to === current.status) return { ...current, dropQueue: false, changed: false };
  if (to === 'ACTIVE') return { status: 'ACTIVE', failingSince: null, dropQueue: false, changed: true };
  // ACTIVE → USER_DISABLED drops the queue; SYSTEM_DISABLED has no queue left (it was dropped on disabling).
  return { status: 'USER_DISABLED', failingSince: current.failingSince, dropQueue: true, changed: true };
}

/** A successful (2xx) attempt: an ACTIVE connector is no longer failing. Other states are left alone. */
export function afterSuccess(current: ConnectorState): Transition {
  if (current.status !== 'ACTIVE') return { ...current, dropQueue: false, changed: false };
  return { status: 'ACTIVE', failingSince: null, dropQueue: false, changed: false };
}

/**
 * A failed attempt recorded at `now` (micros). The first failure starts the failing period; a failure when the
 * period has lasted 5 days or more disables the connector and drops its queue. Checked at every failure.
 */
export function afterFailure(current: ConnectorState, now: number): Transition {
  if (current.status !== 'ACTIVE') return { ...current, dropQueue: false, changed: false };
  if (current.failingSince === null) return { status: 'ACTIVE', failingSince: now, dropQueue: false, changed: false };
  if (now - current.failingSince >= AUTO_DISABLE_AFTER_MICROS) {
    return { status: 'SYSTEM_DISABLED', failingSince: current.failingSince, dropQueue: true, changed: true };
  }
  return { ...current, dropQueue: false, changed: false };
}
