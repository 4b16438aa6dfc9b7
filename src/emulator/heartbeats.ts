// Emulated heartbeats (spec: devices emit events "on their periodic heartbeat"): every heartbeat interval each
// emulated sensor emits networkStatus and batteryStatus; a cloud connector (ccon, which has neither, §5.5)
// emits connectionStatus instead. A heartbeat repeats the device's current reported values with a new
// updateTime, so a value published by a user (say 12 % battery) stays until the next publish.
// Due-ness is read from the store (the event time of the latest networkStatus / connectionStatus in
// `reported`), so restarts do not burst and several processes agree; time comes from deps.clock only.
import { createPeriodic } from '../runtime/periodic.ts';
import { leadsJob } from '../store/jobs/cluster.ts';
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { DEFAULT_CLOUD_CONNECTOR_ID, DEFAULT_RSSI, DEFAULT_SIGNAL_STRENGTH } from '../domain/event-data.ts';
import { formatTimestamp } from '../domain/time.ts';
import type { Emit } from '../events/pipeline.ts';
import type { DeviceRecord } from '../store/contract/records.ts';

export interface Heartbeats {
  /** Emits the heartbeats that are due now (per deps.clock); resolves to the number of events emitted. */
  tickOnce(): Promise<number>;
  /** Checks for due heartbeats on an unref'd timer (no-op when the interval is 0). */
  start(): void;
  /** Stops the timer and waits for a running check. */
  stop(): Promise<void>;
}

export interface HeartbeatOptions {
  /** Overrides config.heartbeatIntervalSeconds; 0 disables. */
  intervalSeconds?: number;
  /** Device summaries read per store page. */
  pageSize?: number;
  /** Due devices emitted per transaction. */
  sliceSize?: number;
}

const CCON = 'ccon';
export const DEFAULT_BATTERY_PERCENTAGE = 100;
/**
 * A slice of heartbeats (one transaction, the event loop blocked meanwhile, SQLite being synchronous) ends after
 * this much work, measured on the process's own monotonic clock (scheduling only: what is emitted and when it is
 * due comes from deps.clock). A device with the largest labels and state takes a few milliseconds.
 */
const SLICE_BUDGET_MS = 10;
export const DEFAULT_CONNECTION = { connection: 'ETHERNET', available: ['ETHERNET', 'CELLULAR'] };

/** The event type whose reported time says when the device last sent a heartbeat. */
export const heartbeatType = (device: Pick<DeviceRecord, 'type'>): string =>
  device.type === CCON ? 'connectionStatus' : 'networkStatus';

const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const num = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);

/** networkStatus data in the §5.2 key order, repeating the reported values (defaults as for :publish, §5.3). */
export function networkStatusData(previous: unknown, updateTime: string): Record<string, unknown> {
  const p = obj(previous);
  const signalStrength = num(p.signalStrength, DEFAULT_SIGNAL_STRENGTH);
  const rssi = num(p.rssi, DEFAULT_RSSI);
  const cloudConnectors = Array.isArray(p.cloudConnectors)
    ? p.cloudConnectors.map((c) => {
        const o = obj(c);
        return {
          id: typeof o.id === 'string' ? o.id : DEFAULT_CLOUD_CONNECTOR_ID,
          signalStrength: num(o.signalStrength, signalStrength),
          rssi: num(o.rssi, rssi),
        };
      })
    : [{ id: DEFAULT_CLOUD_CONNECTOR_ID, signalStrength, rssi }];
  const transmissionMode = typeof p.transmissionMode === 'string' ? p.transmissionMode : 'LOW_POWER_STANDARD_MODE';
  return { networkStatus: { signalStrength, rssi, updateTime, cloudConnectors, transmissionMode } };
}

export function batteryStatusData(previous: unknown, updateTime: string): Record<string, unknown> {
  return { batteryStatus: { percentage: num(obj(previous).percentage, DEFAULT_BATTERY_PERCENTAGE), updateTime } };
}

export function connectionStatusData(previous: unknown, updateTime: string): Record<string, unknown> {
  const p = obj(previous);
  const connection = typeof p.connection === 'string' ? p.connection : DEFAULT_CONNECTION.connection;
  const available = Array.isArray(p.available) ? p.available : DEFAULT_CONNECTION.available;
  return { connectionStatus: { connection, available, updateTime } };
}

/** Emits one device's heartbeat at `now`; returns the number of events. */
export async function emitHeartbeat(emit: Emit, device: DeviceRecord, now: number): Promise<number> {
  const updateTime = formatTimestamp(now);
  if (device.type === CCON) {
    await emit(device, 'connectionStatus', connectionStatusData(device.reported.connectionStatus, updateTime), now);
    return 1;
  }
  const after = await emit(device, 'networkStatus', networkStatusData(device.reported.networkStatus, updateTime), now);
  await emit(after.device, 'batteryStatus', batteryStatusData(after.device.reported.batteryStatus, updateTime), now);
  return 2;
}

export function createHeartbeats(deps: Deps, options: HeartbeatOptions = {}): Heartbeats {
  const intervalSeconds = options.intervalSeconds ?? deps.config.heartbeatIntervalSeconds;
  const intervalMicros = Math.round(intervalSeconds * 1_000_000);
  const pageSize = options.pageSize ?? 500;
  const sliceSize = options.sliceSize ?? 20;
  const isDue = (device: Pick<DeviceRecord, 'type' | 'latestEvents'>, now: number): boolean => {
    const last = device.latestEvents[heartbeatType(device)]?.[0];
    return last === undefined || now - last >= intervalMicros;
  };
  // SQLite transactions resolve without touching the event loop; requests and sockets run between slices.
  const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve));

  // Bounded in memory and time whatever the number and size of devices: the scan reads a page of small
  // summaries; only due devices are read in full, a slice at a time, each slice its own short transaction.
  async function tickOnce(): Promise<number> {
    if (intervalMicros <= 0) return 0;
    let emitted = 0;
    let after = '';
    for (;;) {
      const page = await deps.store.devices.listEmulated({ after, limit: pageSize });
      const now = nowMicros(deps);
      const due = page.filter((d) => isDue(d, now)).map((d) => d.id);
      for (let i = 0; i < due.length; ) {
        const start = i;
        emitted += await deps.events.transaction(async (tx, emit) => {
          // The pipeline may run this again after a rollback: it starts over from the same device.
          i = start;
          let n = 0;
          const began = performance.now();
          while (i < due.length && i - start < sliceSize && performance.now() - began < SLICE_BUDGET_MS) {
            // Re-read inside the transaction: the pipeline writes `reported` from the record it is given.
            const device = await tx.devices.get(due[i++]!);
            if (device?.emulated && isDue(device, now)) n += await emitHeartbeat(emit, device, now);
          }
          return n;
        });
        await yieldToEventLoop();
      }
      if (page.length < pageSize) return emitted;
      after = page[page.length - 1]!.id;
      await yieldToEventLoop();
    }
  }

  // One process of a cluster sends them (it leads the job); another takes over when it stops.
  const periodic = createPeriodic(
    async () => {
      if (await leadsJob(deps.store, 'heartbeats')) await tickOnce();
    },
    deps.logger,
    { failing: 'emulated heartbeats failed', recovered: 'emulated heartbeats work again' },
    () => deps.clock.now(),
  );
  return {
    tickOnce,
    start() {
      if (intervalMicros <= 0) return;
      // A heartbeat is late by at most one check period: a tenth of the interval, between 1 s and 60 s.
      periodic.start(Math.min(60_000, Math.max(1000, (intervalSeconds * 1000) / 10)));
    },
    stop: () => periodic.stop(),
  };
}
