// Attempt slots: how many push attempts each connector, and all of them together, may have in flight, from each
// connector's health, so a dead endpoint never slows the others (isolation).
//
// A dead endpoint holds each attempt for up to the 10 s timeout; probing it with a couple of attempts instead of a
// full share keeps the slots (and sockets) for the healthy connectors, while its queued rows wait durably. A new
// dead endpoint is only known to fail once its first attempts time out, so an attempt in flight for longer than
// `suspectAfterMs` makes the connector suspect too: a healthy endpoint answers long before.
//
// Probes add up, though: 1,000 dead endpoints anywhere, two probes each, held every one of the 1,024 overall slots,
// and a healthy connector of another project delivered 9 of 116 events. So failing and suspect connectors together
// may hold only `suspectTotal` slots (half the overall cap by default), whatever their number: the rest stays
// for the connectors that answer. New dead endpoints are only found out once their attempts hang, holding slots
// taken while their health was unknown until the 10 s timeout: meanwhile the connectors that answer may go past
// the overall cap, up to their reserve (room()). In a PostgreSQL cluster each process keeps this share of its own
// slots, so the cluster's failing connectors hold at most the same share of the cluster's.
import type { Clock } from '../runtime/clock.ts';

export interface SlotOptions {
  /** Attempts in flight per healthy connector. */
  perConnector: number;
  /** Attempts in flight per failing or suspect connector (it is probed, not flooded). */
  perFailingConnector: number;
  /** Attempts in flight overall. */
  total: number;
  /** Attempts in flight of failing and suspect connectors together (at most `total`). */
  suspectTotal: number;
  /** An attempt in flight for longer than this makes its connector suspect, ms. */
  suspectAfterMs: number;
}

export interface Slots {
  readonly options: Readonly<SlotOptions>;
  /** Slots taken now, all connectors together. */
  readonly inFlightTotal: number;
  /** Slots taken by connectors that were failing or suspect when they took them. */
  readonly inFlightSuspect: number;
  /**
   * Attempts that may start now. Within the overall cap; beyond it only for connectors that answer, while slots held
   * by connectors that turned suspect after taking them (new dead endpoints, until their 10 s timeouts) fill it: the
   * connectors that answer always have `total - suspectTotal` slots.
   */
  room(): number;
  /** Slots held now by connectors that are failing or suspect now, however they were taken. */
  suspectHeld(): number;
  /** Takes a slot of the connector (an attempt about to start, or a row handed off to start at commit). */
  take(connectorId: string): void;
  /** Gives a slot back. */
  give(connectorId: string): void;
  /** An attempt of the connector started at `startMs` (the suspect rule watches it until it ends). */
  started(connectorId: string, startMs: number): void;
  /** That attempt ended; `ok` is its outcome, the connector's health from now on. */
  ended(connectorId: string, startMs: number, ok: boolean): void;
  /** Failing (its last attempt failed), or an attempt of it has been in flight for too long. */
  suspect(connectorId: string): boolean;
  /**
   * Free slots of the connector now. While health is unknown, a fair share of the overall cap among `competitors`
   * connectors keeps any number of new dead endpoints from taking every slot before they are found out. The
   * connector's own `maxConcurrency` (extensions §X4), when given, bounds both its shares.
   */
  capacityOf(connectorId: string, competitors?: number, maxConcurrency?: number): number;
  /** Connectors with an attempt in flight for longer than suspectAfterMs, now. */
  hanging(): string[];
}

/** The smallest start time (a loop: spreading up to 64 of them into Math.min allocated for every event). */
function earliest(times: number[]): number {
  let min = Infinity;
  for (const t of times) if (t < min) min = t;
  return min;
}

export function createSlots(clock: Clock, options: SlotOptions): Slots {
  const inFlight = new Map<string, number>();
  let inFlightTotal = 0;
  /** Per connector, how many of its slots were taken while it was failing or suspect (they count in the share). */
  const takenSuspect = new Map<string, number>();
  let inFlightSuspect = 0;
  const failing = new Set<string>();
  const startedAt = new Map<string, number[]>();

  const suspect = (connectorId: string): boolean => {
    if (failing.has(connectorId)) return true;
    const starts = startedAt.get(connectorId);
    return starts !== undefined && starts.length > 0 && clock.now() - earliest(starts) > options.suspectAfterMs;
  };

  return {
    options,
    get inFlightTotal() {
      return inFlightTotal;
    },
    get inFlightSuspect() {
      return inFlightSuspect;
    },
    room() {
      const free = options.total - inFlightTotal;
      if (free > 0) return free;
      // Rare: only with the cap full. Slots of connectors that answer, against their reserve.
      return Math.max(0, options.total - options.suspectTotal - (inFlightTotal - this.suspectHeld()));
    },
    suspectHeld() {
      let held = 0;
      for (const [id, n] of inFlight) if (suspect(id)) held += n;
      return held;
    },
    take(id) {
      inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
      inFlightTotal += 1;
      if (suspect(id)) {
        takenSuspect.set(id, (takenSuspect.get(id) ?? 0) + 1);
        inFlightSuspect += 1;
      }
    },
    give(id) {
      const n = (inFlight.get(id) ?? 1) - 1;
      if (n <= 0) inFlight.delete(id);
      else inFlight.set(id, n);
      inFlightTotal -= 1;
      // Which slot ends does not matter: the connector's count of slots taken while suspect goes down first.
      const s = takenSuspect.get(id) ?? 0;
      if (s > 0) {
        if (s === 1) takenSuspect.delete(id);
        else takenSuspect.set(id, s - 1);
        inFlightSuspect -= 1;
      }
    },
    started(id, startMs) {
      let starts = startedAt.get(id);
      if (!starts) startedAt.set(id, (starts = []));
      starts.push(startMs);
    },
    ended(id, startMs, ok) {
      const starts = startedAt.get(id);
      if (starts) {
        // Attempts mostly end in the order they started: shift, unlike splice, leaves no array behind.
        const at = starts.indexOf(startMs);
        if (at === 0) starts.shift();
        else if (at > 0) starts.splice(at, 1);
        if (starts.length === 0) startedAt.delete(id);
      }
      if (ok) failing.delete(id);
      else failing.add(id);
    },
    suspect,
    hanging() {
      const now = clock.now();
      const out: string[] = [];
      for (const [id, starts] of startedAt) if (now - earliest(starts) > options.suspectAfterMs) out.push(id);
      return out;
    },
    capacityOf(id, competitors = 1, maxConcurrency = Infinity) {
      const share = Math.max(options.perFailingConnector, Math.floor(options.total / Math.max(1, competitors)));
      const own = inFlight.get(id) ?? 0;
      if (!suspect(id)) return Math.min(options.perConnector, share, maxConcurrency) - own;
      const probes = Math.min(options.perFailingConnector, share, maxConcurrency) - own;
      return Math.min(probes, options.suspectTotal - inFlightSuspect);
    },
  };
}
