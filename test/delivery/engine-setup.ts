// What the engine tests share (engine-*.test.ts): a test context with a scripted dispatcher and an engine, connectors
// and events made the way clients make them, and waits in real time for what the running loop does.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createDeliveryEngine, type DeliveryEngine, type EngineOptions } from '../../src/delivery/engine.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import { createTestContext, type ContextOptions, type TestContext } from '../helpers/context.ts';
import { FakeDispatcher } from '../helpers/fake-dispatcher.ts';
import { createPostgresTestStore } from '../helpers/store.ts';
import { sleep, until as waitUntil } from '../helpers/until.ts';

export const HOUR = 3600_000;
export const DAY = 24 * HOUR;

export interface Setup {
  t: TestContext;
  fake: FakeDispatcher;
  engine: DeliveryEngine;
}

export async function setup(
  options: ConstructorParameters<typeof FakeDispatcher>[0] = {},
  store?: ContextOptions['store'],
): Promise<Setup> {
  const t = await createTestContext({ store });
  const fake = new FakeDispatcher(options);
  return { t, fake, engine: createDeliveryEngine(t.deps, fake) };
}

let urlCounter = 0;
export async function createConnector(
  t: TestContext,
  body: Record<string, unknown> = {},
  projectId = t.projectId,
): Promise<{ id: string; url: string; name: string }> {
  const url = `https://receiver${++urlCounter}.example/hook`;
  const res = await t.request('POST', `/v2/projects/${projectId}/dataconnectors`, {
    body: { type: 'HTTP_PUSH', displayName: 'test', ...body, httpConfig: { url, ...(body.httpConfig as object) } },
  });
  assert.equal(res.status, 200, res.text);
  return { id: res.body.name.split('/')[3], url: res.body.httpConfig.url, name: res.body.name };
}

/** Emits one event through the pipeline, as the device API and the emulator do. */
export async function publish(t: TestContext, device: DeviceRecord, eventType = 'touch', data?: unknown) {
  const ts = nowMicros(t.deps);
  const fresh = (await t.deps.store.devices.get(device.id)) ?? device;
  const payload =
    data ??
    (eventType === 'labelsChanged'
      ? { added: {}, modified: {}, removed: [] }
      : { [eventType]: { updateTime: formatTimestamp(ts) } });
  return t.deps.events.transaction((_tx, emit) => emit(fresh, eventType, payload, ts));
}

/**
 * Waits until `cond` holds, polling every millisecond in real time, for at most 5 s, without failing: the assertions
 * after it say what was missing. Real time, not a count of event-loop turns: a store across the network takes
 * milliseconds per claim.
 */
export async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  await waitUntil('the engine', cond, { timeoutMs: 5000, everyMs: 1 }).catch(() => undefined);
}

/** Time for the engine to act on all it has (claims, attempts) before a test asserts that nothing more happened. */
export const settle = (): Promise<void> => sleep(50);

export const queueDepth = (t: TestContext) => t.deps.store.deliveries.count();
export const getConnector = async (t: TestContext, id: string) =>
  (await t.request('GET', `/v2/projects/${t.projectId}/dataconnectors/${id}`)).body;
export const metricsOf = async (t: TestContext, id: string) =>
  (await t.request('GET', `/v2/projects/${t.projectId}/dataconnectors/${id}:metrics`)).body.metrics;
/** The connectors with rows due now: what a claim would find. */
export const dueNow = (t: TestContext) => t.deps.store.deliveries.connectorsWithDue(nowMicros(t.deps), 0);

/**
 * A test with its own context and an engine that polls only once a minute (hand-offs and wakes do the rest), on
 * the test store (`any`), or on SQLite or PostgreSQL whatever the test store is: the line exists only on a store
 * one process owns (on a shared store a row in line would count against the cluster's limit as in flight), and
 * the cluster's limit only on a shared one.
 */
export const withEngine = async (
  options: EngineOptions,
  body: (s: Setup) => Promise<void>,
  store: 'any' | 'sqlite' | 'postgres' = 'sqlite',
) => {
  const { t, fake } = await setup(
    {},
    store === 'any'
      ? undefined
      : store === 'sqlite'
        ? (dir) => createSqliteStore(join(dir, 'sensorcloud.db'))
        : createPostgresTestStore,
  );
  const engine = createDeliveryEngine(t.deps, fake, { pollIntervalMs: 60_000, ...options });
  try {
    await body({ t, fake, engine });
  } finally {
    fake.release();
    await engine.stop();
    await t.close();
  }
};

/** A connector with one slot, taken by the held push of `first`. */
export const busyConnector = async ({ t, fake, engine }: Setup) => {
  const dc = await createConnector(t);
  const device = await t.createDevice();
  engine.start();
  fake.hold();
  const first = await publish(t, device);
  await until(() => fake.calls.length > 0);
  return { dc, device, first };
};
