// Rate pacing of a connector with `deliveryConfig.maxRate` (extensions §X4): its attempts start at least 1/maxRate s
// apart, one process or many. The store keeps the time from which the connector's next attempt may start (its
// "next start"); a claim locks it (DeliveryRepo.pacingForUpdate), gives each row it claims a start time from there
// at that spacing, never later than PACE_AHEAD past now, and moves it on by the rows it took, in one transaction.
// An attempt waits for its start time (attempts.ts); rows over the rate stay due in the queue, within the 12-hour
// expiry, and nothing is dropped for it.
//
// Spacing starts rather than counting them per second keeps any one-second window at or under ⌈maxRate⌉ + 1 starts
// (the extension's bound), across processes, as long as their clocks agree. Such a connector's rows are never
// handed off at publish (intake.ts): every one goes through a paced claim.
import type { DeliveryRecord, InFlightCap } from '../store/contract/connector-repos.ts';
import type { Repos } from '../store/contract/store.ts';

/**
 * How far ahead of now a claim gives start times (micros): the engine's fallback poll (250 ms), so that one poll's
 * claim covers the time until the next one at any rate.
 */
export const PACE_AHEAD_MICROS = 250_000;

/** Micros between two attempts' starts at `maxRate` attempts per second. */
export const spacingOf = (maxRate: number): number => 1_000_000 / maxRate;

/**
 * How many starts fit from `next` (micros; the stored next start, or now when it is past) up to, not including,
 * now + PACE_AHEAD_MICROS, at `spacing`; at least none.
 */
export function startsWithin(next: number, now: number, spacing: number): number {
  const horizon = now + PACE_AHEAD_MICROS;
  if (next >= horizon) return 0;
  return Math.floor((horizon - next - 1) / spacing) + 1;
}

/** Rows a paced claim took, each with the time (micros) its attempt may start. */
export interface PacedRows {
  rows: Array<{ delivery: DeliveryRecord; startAt: number }>;
  /** The connector's next start after this claim: a claim before then finds no start within reach. */
  next: number;
  /** How many rows the pace let it take: fewer rows than that means none was left due. */
  wanted: number;
}

/**
 * Claims up to `limit` due rows of the connector at its rate, inside the caller's transaction (which the store's lock
 * on the next start lasts): each claimed row gets the next free start time, and the next start moves past them.
 */
export async function claimPaced(
  tx: Repos,
  ask: { connectorId: string; limit: number; cap?: InFlightCap; maxRate: number },
  now: number,
  enqueuedAfter: number,
  leaseUntil: number,
): Promise<PacedRows> {
  const spacing = spacingOf(ask.maxRate);
  const stored = await tx.deliveries.pacingForUpdate(ask.connectorId);
  const first = stored === null || stored < now ? now : stored;
  const fit = Math.min(ask.limit, startsWithin(first, now, spacing));
  if (fit <= 0) return { rows: [], next: first, wanted: 0 };
  const claimed = await tx.deliveries.claim(ask.connectorId, now, enqueuedAfter, leaseUntil, fit, ask.cap);
  const rows = claimed.map((delivery, i) => ({ delivery, startAt: Math.ceil(first + i * spacing) }));
  const next = Math.ceil(first + claimed.length * spacing);
  if (claimed.length > 0) await tx.deliveries.setPacing(ask.connectorId, next);
  return { rows, next, wanted: fit };
}

/**
 * What this process last learnt of each paced connector's next start: a claim skips a connector whose next start is
 * beyond its reach without a transaction. Another process may have moved it further since: the claim's own read
 * decides; this only saves the read.
 */
export class PaceMemo {
  private readonly next = new Map<string, number>();

  /** Whether a claim now could give the connector a start time. */
  reachable(connectorId: string, now: number): boolean {
    const next = this.next.get(connectorId);
    return next === undefined || next < now + PACE_AHEAD_MICROS;
  }

  learnt(connectorId: string, next: number): void {
    this.next.set(connectorId, next);
  }

  /** The connector is no longer paced (or gone): nothing to remember. */
  forget(connectorId: string): void {
    this.next.delete(connectorId);
  }
}
