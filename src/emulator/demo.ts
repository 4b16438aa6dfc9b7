// Demo mode (--demo / SENSORCLOUD_DEMO): a handful of emulated sensors in the bootstrap project produce
// plausible events every few seconds (temperature drifting, doors toggling, a button touched now and then), so
// the console, streams and data connectors show something moving without any client. Every demo device carries
// the label `demo: ""`; events go through the one pipeline like any other.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPeriodic } from '../runtime/periodic.ts';
import { leadsJob } from '../store/jobs/cluster.ts';
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { DEVICE_TYPES } from '../domain/device-types.ts';
import { formatTimestamp } from '../domain/time.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import { createEmulatedDevice } from './devices.ts';

export const DEMO_LABEL = 'demo';

/** The demo devices, found again on later starts by their `name` label. */
export const DEMO_DEVICES: ReadonlyArray<{ name: string; type: string }> = [
  { name: 'Demo: meeting room', type: 'temperature' },
  { name: 'Demo: server room', type: 'humidity' },
  { name: 'Demo: front door', type: 'proximity' },
  { name: 'Demo: reception button', type: 'touch' },
  { name: 'Demo: open office', type: 'co2' },
  { name: 'Demo: hot desk 3', type: 'deskOccupancy' },
];

export interface DemoOptions {
  /** Project to populate; default: the bootstrap project named in <data dir>/bootstrap.json. */
  projectId?: string;
  /** Milliseconds between demo ticks (default 3000). */
  tickMs?: number;
}

export interface Demo {
  projectId: string;
  /** Creates the demo devices that are missing; returns all of them. */
  ensureDevices(): Promise<DeviceRecord[]>;
  /** Emits one round of demo events; resolves to the number emitted. */
  tickOnce(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

/** The bootstrap project id, or null when bootstrap.json is gone or names a project that no longer exists. */
export async function findBootstrapProject(deps: Deps): Promise<string | null> {
  try {
    const boot = JSON.parse(readFileSync(join(deps.config.dataDir, 'bootstrap.json'), 'utf8')) as { project?: unknown };
    const id = typeof boot.project === 'string' ? boot.project.replace(/^projects\//, '') : '';
    return id && (await deps.store.projects.get(id)) ? id : null;
  } catch {
    return null;
  }
}

type Data = Record<string, unknown>;
type Rand = () => number;

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;
const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));
/** A random walk pulled back towards `mean`. */
const drift = (rand: Rand, current: unknown, mean: number, step: number, lo: number, hi: number) => {
  const v = typeof current === 'number' ? current : mean;
  return clamp(v + (mean - v) * 0.1 + (rand() - 0.5) * 2 * step, lo, hi);
};
const reported = (device: DeviceRecord, type: string): Data => (device.reported[type] as Data | null) ?? {};

/** The device's own next event (data in the §5.2 key order). */
function nextEvent(device: DeviceRecord, rand: Rand, t: string): [string, Data] {
  switch (device.type) {
    case 'temperature': {
      const value = round(drift(rand, reported(device, 'temperature').value, 21.5, 0.3, 15, 30), 2);
      return [
        'temperature',
        { temperature: { value, updateTime: t, samples: [{ value, sampleTime: t }], isBackfilled: false } },
      ];
    }
    case 'humidity': {
      const prev = reported(device, 'humidity');
      const temperature = round(drift(rand, prev.temperature, 19, 0.2, 12, 28), 2);
      const relativeHumidity = round(drift(rand, prev.relativeHumidity, 40, 1, 20, 70), 1);
      return [
        'humidity',
        {
          humidity: {
            temperature,
            relativeHumidity,
            samples: [{ temperature, relativeHumidity, sampleTime: t }],
            isBackfilled: false,
            updateTime: t,
          },
        },
      ];
    }
    case 'proximity': {
      const state = reported(device, 'objectPresent').state === 'PRESENT' ? 'NOT_PRESENT' : 'PRESENT';
      return ['objectPresent', { objectPresent: { state, updateTime: t } }];
    }
    case 'co2': {
      const r = rand();
      if (r < 0.15) {
        const pascal = round(drift(rand, reported(device, 'pressure').pascal, 101325, 40, 98000, 104000), 0);
        return ['pressure', { pressure: { pascal, updateTime: t } }];
      }
      if (r < 0.25) {
        const prev = reported(device, 'humidity');
        const temperature = round(drift(rand, prev.temperature, 22, 0.2, 15, 30), 2);
        const relativeHumidity = round(drift(rand, prev.relativeHumidity, 35, 1, 15, 70), 1);
        return [
          'humidity',
          {
            humidity: {
              temperature,
              relativeHumidity,
              samples: [{ temperature, relativeHumidity, sampleTime: t }],
              isBackfilled: false,
              updateTime: t,
            },
          },
        ];
      }
      const ppm = Math.round(drift(rand, reported(device, 'co2').ppm, 650, 40, 400, 2000));
      return ['co2', { co2: { ppm, updateTime: t } }];
    }
    case 'deskOccupancy': {
      const state = reported(device, 'deskOccupancy').state === 'OCCUPIED' ? 'NOT_OCCUPIED' : 'OCCUPIED';
      return ['deskOccupancy', { deskOccupancy: { state, remarks: [], updateTime: t } }];
    }
    default:
      return ['touch', { touch: { updateTime: t } }];
  }
}

export async function createDemo(deps: Deps, options: DemoOptions & { projectId: string }): Promise<Demo> {
  const { projectId } = options;
  const tickMs = options.tickMs ?? 3000;
  const rand: Rand = () => deps.random.bytes(4).readUInt32BE(0) / 2 ** 32;
  let deviceIds: string[] = [];

  async function ensureDevices(): Promise<DeviceRecord[]> {
    const found = new Map<string, DeviceRecord>();
    for (let after = ''; ; ) {
      const page = await deps.store.devices.listByProject(projectId, { after, limit: 500 });
      for (const d of page)
        if (d.labels[DEMO_LABEL] !== undefined && d.labels.name !== undefined && !found.has(d.labels.name))
          found.set(d.labels.name, d);
      if (page.length < 500) break;
      after = page[page.length - 1]!.id;
    }
    const devices: DeviceRecord[] = [];
    for (const spec of DEMO_DEVICES) {
      const existing = found.get(spec.name);
      devices.push(
        existing ??
          (await createEmulatedDevice(deps, projectId, {
            type: spec.type,
            labels: { name: spec.name, [DEMO_LABEL]: '' },
          })),
      );
    }
    deviceIds = devices.map((d) => d.id);
    return devices;
  }

  async function tickOnce(): Promise<number> {
    if (deviceIds.length === 0) return 0;
    const now = nowMicros(deps);
    const t = formatTimestamp(now);
    // One or two devices report each round; now and then someone touches one of them.
    const picks = new Set([deviceIds[Math.floor(rand() * deviceIds.length)]!]);
    if (rand() < 0.5) picks.add(deviceIds[Math.floor(rand() * deviceIds.length)]!);
    const touched = rand() < 0.15 ? deviceIds[Math.floor(rand() * deviceIds.length)]! : null;
    const gone: string[] = [];
    const count = await deps.events.transaction(async (tx, emit) => {
      gone.length = 0; // the pipeline may call this again after undoing a call
      let n = 0;
      for (const id of deviceIds) {
        let device = await tx.devices.get(id);
        if (!device || device.projectId !== projectId) {
          gone.push(id);
          continue;
        }
        // A device that has never reported its own type starts right away, so the console is never empty.
        const primary = DEVICE_TYPES[device.type]?.reported[0] ?? 'touch';
        if (picks.has(id) || device.reported[primary] === undefined) {
          const [type, data] = nextEvent(device, rand, t);
          device = (await emit(device, type, data, now)).device;
          n++;
        }
        if (touched === id) {
          await emit(device, 'touch', { touch: { updateTime: t } }, now);
          n++;
        }
      }
      return n;
    });
    if (gone.length > 0) deviceIds = deviceIds.filter((id) => !gone.includes(id)); // deleted or moved away
    return count;
  }

  const periodic = createPeriodic(
    async () => {
      if (await leadsJob(deps.store, 'demo')) await tickOnce();
    },
    deps.logger,
    { failing: 'demo mode: emitting events failed', recovered: 'demo mode: emitting events works again' },
    () => deps.clock.now(),
  );
  return {
    projectId,
    ensureDevices,
    tickOnce,
    start: () => periodic.start(tickMs),
    stop: () => periodic.stop(),
  };
}

/** Starts demo mode for main.ts: devices ensured, events flowing, one clear log line. Null when impossible. */
export async function startDemo(deps: Deps, options: DemoOptions = {}): Promise<Demo | null> {
  const projectId = options.projectId ?? (await findBootstrapProject(deps));
  if (!projectId) {
    deps.logger.warn(
      'demo mode: the bootstrap project (bootstrap.json in the data dir) was not found; demo mode is off',
    );
    return null;
  }
  const demo = await createDemo(deps, { ...options, projectId });
  const devices = await demo.ensureDevices();
  demo.start();
  deps.logger.info(
    { project: `projects/${projectId}`, devices: devices.map((d) => `${d.labels.name} (${d.type})`) },
    `demo mode: ${devices.length} emulated sensors labelled "demo" produce events every ${(options.tickMs ?? 3000) / 1000} s`,
  );
  return demo;
}
