// `:replay` (extensions §X2): the project's events of a time window, in the history's order, queued again for one
// connector as REPLAY deliveries with their original eventIds: how a user recovers a gap (a receiver's outage, a
// period while the connector was disabled). The spec's "no backfill" stays true of the status change itself.
//
// Two passes, each a piece at a time with the event loop free between pieces, so a replay of 100,000 events holds
// neither the event loop nor the store's writer for long: the first reads the window's events (no bodies kept) and
// applies the filters and the limit, so a refused replay queues nothing; the second reads the accepted events' bodies
// and queues them, a transaction per piece. The rows go through the durable queue: deferred, made due a piece at a
// time by the engine (delivery/deferred.ts) so live events keep flowing, then retried, expired and dropped under the
// normal rules.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { formatSpan } from '../config.ts';
import { EVENT_TYPES } from '../domain/device-types.ts';
import { badRequest } from '../domain/errors.ts';
import { dataConnectorName } from '../domain/names.ts';
import { formatTimestamp, parseTimestamp } from '../domain/time.ts';
import { series } from '../delivery/metrics.ts';
import { buildPushBody, forwards, matchesLabelFilters } from '../delivery/push-body.ts';
import { DEFERRED_DUE, type DataConnectorRecord, type NewDelivery } from '../store/contract/connector-repos.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import type { ReplayAnswer, ReplayBody } from '../wire/deliveries.ts';
import type { Principal } from '../auth/principal.ts';
import { reload, requireConnector } from './data-connectors.ts';
import { concreteConnectorId } from './deliveries.ts';
import { readsOverDeviceHistories, type EventKey, type HistoryReads } from './history-reads.ts';

/** Events per piece: a read of the window, or a transaction that queues them. */
export const REPLAY_PIECE = 1000;

interface ReplayWindow {
  startTime: number;
  endTime: number;
  onlyUndelivered: boolean;
  /** Only these types; undefined: every type. */
  eventTypes: string[] | undefined;
}

/** Validates the body, naming the field; nothing is read before it is all checked. */
function parseReplayBody(body: ReplayBody): ReplayWindow {
  if (body.startTime === undefined) throw badRequest('startTime is required (RFC 3339)');
  if (body.endTime === undefined) throw badRequest('endTime is required (RFC 3339)');
  const startTime = parseTimestamp(body.startTime, 'startTime');
  const endTime = parseTimestamp(body.endTime, 'endTime');
  if (startTime >= endTime) throw badRequest('startTime must be before endTime');
  let eventTypes: string[] | undefined;
  if (body.eventTypes !== undefined) {
    eventTypes = [];
    for (const t of body.eventTypes) {
      if (!(EVENT_TYPES as readonly string[]).includes(t))
        throw badRequest(`eventTypes: unknown event type "${t}" (valid: ${EVENT_TYPES.join(', ')})`);
      if (!eventTypes.includes(t)) eventTypes.push(t);
    }
    if (eventTypes.length === 0) eventTypes = undefined;
  }
  return { startTime, endTime, onlyUndelivered: body.onlyUndelivered === true, eventTypes };
}

/** The types to read: the connector's filter and the request's, together; [] = every type, null = none. */
function typesToRead(connector: DataConnectorRecord, asked: string[] | undefined): string[] | null {
  if (asked === undefined) return connector.events;
  const types = connector.events.length === 0 ? asked : asked.filter((t) => connector.events.includes(t));
  return types.length === 0 ? null : types;
}

const notActive = (status: string) =>
  badRequest(`data connector is ${status}; only an ACTIVE connector can replay events`);

export async function replayDataConnector(
  deps: Deps,
  principal: Principal,
  projectId: string,
  dc: string,
  body: ReplayBody,
): Promise<ReplayAnswer> {
  const { connector } = await requireConnector(
    deps,
    principal,
    projectId,
    concreteConnectorId(dc),
    'dataconnector.update',
  );
  const window = parseReplayBody(body);
  if (connector.status !== 'ACTIVE') throw notActive(connector.status);
  const now = nowMicros(deps);
  if (window.onlyUndelivered) {
    if (deps.config.deliveryLog.max === 0)
      throw badRequest('onlyUndelivered needs the delivery log, which is off (SENSORCLOUD_DELIVERY_LOG_MAX=0)');
    // What the log no longer holds would look undelivered.
    const kept = deps.config.deliveryLog.retentionSeconds * 1_000_000;
    if (window.startTime < now - kept)
      throw badRequest(
        `with onlyUndelivered the window must lie within the delivery log's retention, ${formatSpan(deps.config.deliveryLog.retentionSeconds)} (SENSORCLOUD_DELIVERY_LOG_RETENTION): startTime must be at or after ${formatTimestamp(now - kept)}`,
      );
  }
  const log = {
    connector: dataConnectorName(projectId, connector.id),
    by: `${principal.kind}:${principal.id}`,
    startTime: formatTimestamp(window.startTime),
    endTime: formatTimestamp(window.endTime),
    onlyUndelivered: window.onlyUndelivered,
    eventTypes: window.eventTypes ?? [],
  };

  const types = typesToRead(connector, window.eventTypes);
  const reads = readsOverDeviceHistories(deps.store);
  const keys = types === null ? [] : await acceptedEvents(deps, reads, connector, window, types);
  if (keys.length > deps.config.replayMaxEvents) {
    deps.logger.info({ ...log, limit: deps.config.replayMaxEvents }, 'data connector replay refused: over the limit');
    throw badRequest(
      `the window holds more than ${deps.config.replayMaxEvents} events to replay, the limit (SENSORCLOUD_REPLAY_MAX_EVENTS=${deps.config.replayMaxEvents}); nothing was queued: replay a shorter window or fewer event types`,
    );
  }

  let replayedCount = 0;
  for (let from = 0; from === 0 || from < keys.length; from += REPLAY_PIECE) {
    if (from > 0) await nextTurn();
    const piece = keys.slice(from, from + REPLAY_PIECE);
    const last = from + REPLAY_PIECE >= keys.length;
    replayedCount += await enqueuePiece(deps, reads, projectId, connector.id, piece, last, replayedCount);
  }
  deps.logger.info({ ...log, replayedCount }, 'data connector replay');
  return { replayedCount };
}

/**
 * The first pass: the window's events the connector and the request accept, in the history's order, of devices still
 * in the project, without a DELIVERED delivery to the connector when asked; it stops one past the limit.
 */
async function acceptedEvents(
  deps: Deps,
  reads: HistoryReads,
  connector: DataConnectorRecord,
  window: ReplayWindow,
  eventTypes: readonly string[],
): Promise<EventKey[]> {
  const accepted: EventKey[] = [];
  // Whether the connector takes each device seen's events: the device is (still) in the project and carries the
  // connector's label filters (§X4), as the live path decides, with its labels as they are now.
  const takes = new Map<string, boolean>();
  for (let after: [number, string] | null = null; ; ) {
    const page = await reads.keysInWindow({
      projectId: connector.projectId,
      eventTypes,
      startTime: window.startTime,
      endTime: window.endTime,
      after,
      limit: REPLAY_PIECE,
    });
    for (const deviceId of new Set(page.map((k) => k.deviceId))) {
      if (takes.has(deviceId)) continue;
      const device = await deps.store.devices.get(deviceId);
      takes.set(deviceId, device?.projectId === connector.projectId && matchesLabelFilters(connector, device.labels));
    }
    let candidates = page.filter((k) => forwards(connector, k.eventType) && takes.get(k.deviceId) === true);
    if (window.onlyUndelivered && candidates.length > 0) {
      const delivered = await deps.store.deliveryLog.deliveredEventIds(
        connector.id,
        candidates.map((k) => k.id),
      );
      candidates = candidates.filter((k) => !delivered.has(k.id));
    }
    accepted.push(...candidates);
    if (accepted.length > deps.config.replayMaxEvents || page.length < REPLAY_PIECE) return accepted;
    const last = page[page.length - 1]!;
    after = [last.timestamp, last.id];
    await nextTurn();
  }
}

/**
 * The second pass, one piece: its events' bodies read again (retention may have removed some since), then, in one
 * transaction that holds the connector's row (a concurrent disable waits, then drops what was queued), the rows with
 * the labels of the devices as they are now, and the counters. `last`: the request's counter goes with it.
 */
async function enqueuePiece(
  deps: Deps,
  reads: HistoryReads,
  projectId: string,
  connectorId: string,
  piece: readonly EventKey[],
  last: boolean,
  queuedBefore: number,
): Promise<number> {
  const events = piece.length === 0 ? new Map() : await reads.eventsOf(piece);
  return deps.store.transaction(async (tx) => {
    const c = await reload(tx, projectId, connectorId);
    if (c.status !== 'ACTIVE') {
      if (queuedBefore === 0) throw notActive(c.status);
      throw badRequest(
        `data connector became ${c.status} during the replay; the ${queuedBefore} events queued before were dropped with its queue`,
      );
    }
    const devices = new Map<string, DeviceRecord | null>();
    const now = nowMicros(deps);
    const rows: NewDelivery[] = [];
    for (const key of piece) {
      const event = events.get(key.id);
      if (event === undefined) continue;
      if (!devices.has(key.deviceId)) devices.set(key.deviceId, await tx.devices.get(key.deviceId));
      const device = devices.get(key.deviceId);
      if (!device || device.projectId !== projectId) continue;
      rows.push({
        connectorId: c.id,
        eventId: event.id,
        body: buildPushBody(event.body, device, c.labels),
        enqueueTime: now,
        // Deferred: claims take a connector's due rows by due time, then id, so rows all due at once would put every
        // event published after them behind the whole replay. The engine makes them due a piece at a time
        // (delivery/deferred.ts).
        dueTime: DEFERRED_DUE,
        trigger: 'REPLAY',
      });
    }
    if (rows.length > 0) await tx.deliveries.add(rows);
    const counters: Record<string, number> = {};
    if (rows.length > 0) counters[series.replayedEvents] = rows.length;
    if (last) counters[series.recoveryRequests('replay')] = 1;
    if (Object.keys(counters).length > 0) await tx.connectorMetrics.addCounters(counters);
    return rows.length;
  });
}
