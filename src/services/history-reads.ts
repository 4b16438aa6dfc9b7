// What `:resend` and `:replay` (extensions §X2) read of the event history beyond a device's page of it: one event by
// id, and a project's events of a time window in the history's order. EventRepo has neither yet (asked of the store:
// EventRepo.getMany(ids) and EventRepo.listProjectWindow(query), see HistoryReads); until it does,
// readsOverDeviceHistories() makes them from EventRepo.listByDevice, the only read of the history there is.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { EventRecord } from '../store/contract/records.ts';
import type { Store } from '../store/contract/store.ts';
import { badRequest } from '../domain/errors.ts';

/** An event as a replay walks the window: enough to filter it and to fetch it again, without its body. */
export interface EventKey {
  id: string;
  deviceId: string;
  eventType: string;
  /** Event time (micros). */
  timestamp: number;
}

export interface WindowQuery {
  projectId: string;
  /** Only these types; empty: every type. */
  eventTypes: readonly string[];
  /** Half-open on the event's timestamp (micros): startTime <= timestamp < endTime. */
  startTime: number;
  endTime: number;
  /** Only events after this [timestamp, id] in the history's order; null: from the start of the window. */
  after: readonly [number, string] | null;
  limit: number;
}

/**
 * The reads `:resend` and `:replay` make of the history. A store offering `EventRepo.listProjectWindow(query):
 * EventRecord[]` (the project's events, by EventRecord.projectId, of the window, in the history's order: timestamp,
 * then id, ascending; an index on (project_id, timestamp, id) serves it) and `EventRepo.getMany(ids): EventRecord[]`
 * (by primary key) answers each method with one statement.
 */
export interface HistoryReads {
  /**
   * Events of the project in the window, in the history's order (timestamp, then id, ascending), at most `limit`.
   * May leave out events of devices no longer in the project: a replay skips them anyway.
   */
  keysInWindow(query: WindowQuery): Promise<EventKey[]>;
  /** The events of these keys still in the history (retention may have removed some), keyed by id. */
  eventsOf(keys: readonly EventKey[]): Promise<Map<string, EventRecord>>;
  /** One event of the history, of the device and type the delivery log names; null once it is gone. */
  find(eventId: string, deviceId: string, eventType: string): Promise<EventRecord | null>;
}

/** Rows per read of a device's history. */
const PAGE = 1000;
/** Devices per read of the project's devices. */
const DEVICE_PAGE = 500;
/**
 * The most events of a window the stop-gap below holds the keys of (~150 bytes each): a larger window is refused
 * with 400 until the store reads a window in pieces. It is ten times the default replay limit.
 */
export const STOP_GAP_MAX_WINDOW_EVENTS = 1_000_000;
/** EventRepo.listByDevice's bounds are inclusive: the whole history of a device. */
const ALL_TIME = { startTime: 0, endTime: Number.MAX_SAFE_INTEGER };

/** The stop-gap: HistoryReads over EventRepo.listByDevice (newest first per device). */
export function readsOverDeviceHistories(store: Pick<Store, 'devices' | 'events'>): HistoryReads {
  // A device's history is read newest first only, so the window's order comes from holding its keys: read once, per
  // device (the devices now in the project), at the first call, then handed out a piece at a time.
  let window: { query: string; keys: EventKey[] } | null = null;

  async function readWindow(q: WindowQuery): Promise<EventKey[]> {
    const keys: EventKey[] = [];
    for (let after: string | null = null; ; ) {
      const devices = await store.devices.listByProject(q.projectId, { after, limit: DEVICE_PAGE });
      for (const device of devices) {
        for (let before: [number, string] | null = null; ; ) {
          const rows = await store.events.listByDevice({
            deviceId: device.id,
            eventTypes: [...q.eventTypes],
            startTime: q.startTime,
            // Inclusive there, exclusive here.
            endTime: q.endTime - 1,
            before,
            limit: PAGE,
          });
          for (const e of rows) {
            // Events of a device moved in from another project are that project's (EventRecord.projectId).
            if (e.projectId === q.projectId)
              keys.push({ id: e.id, deviceId: e.deviceId, eventType: e.eventType, timestamp: e.timestamp });
          }
          if (keys.length > STOP_GAP_MAX_WINDOW_EVENTS)
            throw badRequest(
              `the window holds more than ${STOP_GAP_MAX_WINDOW_EVENTS} events of the project; replay a shorter window`,
            );
          if (rows.length < PAGE) break;
          const last = rows[rows.length - 1]!;
          before = [last.timestamp, last.id];
          // A store may answer without waiting (SQLite reads at once): other requests get their turn between pages.
          await nextTurn();
        }
      }
      if (devices.length < DEVICE_PAGE) break;
      after = devices[devices.length - 1]!.id;
    }
    return keys.sort(historyOrder);
  }

  return {
    async keysInWindow(q) {
      const query = JSON.stringify([q.projectId, q.eventTypes, q.startTime, q.endTime]);
      if (window?.query !== query) window = { query, keys: await readWindow(q) };
      const { keys } = window;
      let from = 0;
      if (q.after !== null) {
        const after = { timestamp: q.after[0], id: q.after[1] };
        // The first key after `after` (binary search: the keys are in the history's order).
        let hi = keys.length;
        while (from < hi) {
          const mid = (from + hi) >>> 1;
          if (historyOrder(keys[mid]!, after) <= 0) from = mid + 1;
          else hi = mid;
        }
      }
      return keys.slice(from, from + q.limit);
    },

    async eventsOf(keys) {
      const found = new Map<string, EventRecord>();
      const byDevice = new Map<string, EventKey[]>();
      for (const k of keys) {
        const list = byDevice.get(k.deviceId);
        if (list) list.push(k);
        else byDevice.set(k.deviceId, [k]);
      }
      for (const [deviceId, list] of byDevice) {
        const wanted = new Set(list.map((k) => k.id));
        const eventTypes = [...new Set(list.map((k) => k.eventType))];
        const startTime = Math.min(...list.map((k) => k.timestamp));
        const endTime = Math.max(...list.map((k) => k.timestamp));
        for (let before: [number, string] | null = null; ; ) {
          const rows = await store.events.listByDevice({
            deviceId,
            eventTypes,
            startTime,
            endTime,
            before,
            limit: PAGE,
          });
          for (const e of rows) if (wanted.has(e.id)) found.set(e.id, e);
          if (rows.length < PAGE) break;
          const last = rows[rows.length - 1]!;
          before = [last.timestamp, last.id];
        }
      }
      return found;
    },

    async find(eventId, deviceId, eventType) {
      for (let before: [number, string] | null = null; ; ) {
        const rows = await store.events.listByDevice({
          deviceId,
          eventTypes: [eventType],
          ...ALL_TIME,
          before,
          limit: PAGE,
        });
        const event = rows.find((e) => e.id === eventId);
        if (event) return event;
        if (rows.length < PAGE) return null;
        const last = rows[rows.length - 1]!;
        before = [last.timestamp, last.id];
      }
    },
  };
}

/** The history's order: event time, then id. */
export function historyOrder(a: Pick<EventKey, 'timestamp' | 'id'>, b: Pick<EventKey, 'timestamp' | 'id'>): number {
  if (a.timestamp !== b.timestamp) return a.timestamp - b.timestamp;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
