// A data connector's delivery controls through the API (extensions §X4): the shape and defaults, validation before any
// write (clear 400s naming the field), PATCH merged key by key with label filters replaced whole, update_mask, and
// the label filters decided at publish (and by :sync and :replay), with the real engine and a loopback HTTPS receiver
// on the fake clock. Pacing, concurrency and the pause at work are in test/delivery/engine-controls.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createDeliveryEngine, type DeliveryEngine } from '../../src/delivery/engine.ts';
import { createDispatcher } from '../../src/delivery/dispatcher.ts';
import type { Dispatcher } from '../../src/delivery/types.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from '../helpers/receiver.ts';
import { testTls } from '../helpers/tls.ts';

const DEFAULTS = { maxConcurrency: 64, maxRate: 0, labelFilters: {}, paused: false };

let t: TestContext;
let receiver: Receiver;
let dispatcher: Dispatcher;
let engine: DeliveryEngine;

before(async () => {
  t = await createTestContext({
    env: { SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8', SENSORCLOUD_CA_FILE: testTls().caFile },
  });
  receiver = await startReceiver();
  dispatcher = createDispatcher({
    config: t.deps.config,
    clock: t.deps.clock,
    ids: t.deps.ids,
    logger: t.deps.logger,
    timeoutMs: 2000,
  });
  // Never started: the tests attempt what is due with runOnce(), at the fake clock's time.
  engine = createDeliveryEngine(t.deps, dispatcher);
});
after(async () => {
  await engine.stop();
  await dispatcher.close();
  await receiver.close();
  await t.close();
});

async function must(method: string, url: string, body?: unknown) {
  const res = await t.request(method, url, { body });
  assert.equal(res.status, 200, `${method} ${url}: ${res.text}`);
  return res.body;
}

let projects = 0;
async function project(): Promise<string> {
  return t.createProject(`delivery config ${++projects}`);
}
const url = (path: string) => `${receiver.url.replace(/\/hook$/, '')}${path}`;
const connectors = (p: string) => `/v2/projects/${p}/dataconnectors`;
const arrived = (path: string): ReceivedRequest[] => receiver.requests.filter((r) => r.path === path);
const deviceIdOf = (r: ReceivedRequest) => JSON.parse(r.body.toString('utf8')).metadata.deviceId as string;
const idOf = (name: string) => name.split('/').pop()!;

describe('shape and validation', () => {
  it('a connector has the defaults; create takes every key; GET and the list show them to every reader', async () => {
    const p = await project();
    const plain = await must('POST', connectors(p), {
      type: 'HTTP_PUSH',
      httpConfig: { url: 'https://example.org/a' },
    });
    assert.deepEqual(plain.deliveryConfig, DEFAULTS);
    const config = { maxConcurrency: 2, maxRate: 0.5, labelFilters: { site: 'oslo', rack: '' }, paused: true };
    const c = await must('POST', connectors(p), {
      type: 'HTTP_PUSH',
      httpConfig: { url: 'https://example.org/b' },
      deliveryConfig: config,
    });
    assert.deepEqual(c.deliveryConfig, config);
    assert.deepEqual((await must('GET', `/v2/${c.name}`)).deliveryConfig, config);
    const listed = (await must('GET', connectors(p))).dataConnectors.map((d: any) => d.deliveryConfig);
    assert.deepEqual(listed, [DEFAULTS, config]);
    // Only part of it: the rest takes the defaults.
    const part = await must('POST', connectors(p), {
      type: 'HTTP_PUSH',
      httpConfig: { url: 'https://example.org/c' },
      deliveryConfig: { maxRate: 100 },
    });
    assert.deepEqual(part.deliveryConfig, { ...DEFAULTS, maxRate: 100 });
  });

  it('answers 400 naming the field for every bad value, on create and on PATCH, and writes nothing', async () => {
    const p = await project();
    const c = await must('POST', connectors(p), { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.org/v' } });
    const bad: Array<[unknown, RegExp]> = [
      ['fast', /deliveryConfig must be an object/],
      [[1], /deliveryConfig must be an object/],
      [{ maxConcurrency: 0 }, /deliveryConfig\.maxConcurrency must be a whole number from 1 to 64/],
      [{ maxConcurrency: 65 }, /deliveryConfig\.maxConcurrency/],
      [{ maxConcurrency: 2.5 }, /deliveryConfig\.maxConcurrency/],
      [{ maxRate: -1 }, /deliveryConfig\.maxRate must be a number of attempts per second above 0 and at most 10000/],
      [{ maxRate: 10_001 }, /deliveryConfig\.maxRate/],
      [{ labelFilters: ['site'] }, /deliveryConfig\.labelFilters must be an object/],
      [{ labelFilters: { 'a=b': 'x' } }, /deliveryConfig\.labelFilters: label key must not contain '='/],
      [{ labelFilters: { '': 'x' } }, /deliveryConfig\.labelFilters: label key must be 1 to 128 characters/],
      [{ labelFilters: { site: 'x'.repeat(1025) } }, /deliveryConfig\.labelFilters: label value must be at most 1024/],
      [
        { labelFilters: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, ''])) },
        /at most 100 labels/,
      ],
    ];
    for (const [deliveryConfig, message] of bad) {
      const created = await t.request('POST', connectors(p), {
        body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.org/w' }, deliveryConfig },
      });
      assert.equal(created.status, 400, JSON.stringify(deliveryConfig));
      const patched = await t.request('PATCH', `/v2/${c.name}`, { body: { deliveryConfig, displayName: 'changed' } });
      assert.equal(patched.status, 400, JSON.stringify(deliveryConfig));
      // The route's own type check or the service's: either way the answer names the field.
      assert.match(`${created.body.error}`, message.source.startsWith('deliveryConfig') ? /deliveryConfig/ : message);
      assert.match(`${patched.body.error}`, /deliveryConfig/);
    }
    const paused = await t.request('PATCH', `/v2/${c.name}`, { body: { deliveryConfig: { paused: 'yes' } } });
    assert.equal(paused.status, 400);
    assert.match(paused.body.error, /deliveryConfig[./]paused/);
    // Nothing was written: one connector, unchanged.
    const after = await must('GET', connectors(p));
    assert.equal(after.dataConnectors.length, 1);
    assert.deepEqual(after.dataConnectors[0], c);
  });

  it('the service names the field in its own words for values the types let through', async () => {
    const p = await project();
    const c = await must('POST', connectors(p), { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.org/n' } });
    for (const [deliveryConfig, message] of [
      [{ maxConcurrency: 0 }, 'deliveryConfig.maxConcurrency must be a whole number from 1 to 64'],
      [{ maxConcurrency: 1.5 }, 'deliveryConfig.maxConcurrency must be a whole number from 1 to 64'],
      [
        { maxRate: 20_000 },
        'deliveryConfig.maxRate must be a number of attempts per second above 0 and at most 10000, or 0 for no limit',
      ],
      [{ labelFilters: { 'a/b': '' } }, 'deliveryConfig.labelFilters: label key must not contain \'/\' ("a/b")'],
    ] as const) {
      const res = await t.request('PATCH', `/v2/${c.name}`, { body: { deliveryConfig } });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, message);
    }
  });
});

describe('PATCH', () => {
  it('merges key by key, replaces label filters whole, and leaves the rest of the connector alone', async () => {
    const p = await project();
    const c = await must('POST', connectors(p), {
      type: 'HTTP_PUSH',
      displayName: 'keep me',
      httpConfig: { url: 'https://example.org/m' },
      deliveryConfig: { maxConcurrency: 8, labelFilters: { site: 'oslo', floor: '2' } },
    });
    let got = await must('PATCH', `/v2/${c.name}`, { deliveryConfig: { maxRate: 5 } });
    assert.deepEqual(got.deliveryConfig, {
      maxConcurrency: 8,
      maxRate: 5,
      labelFilters: { site: 'oslo', floor: '2' },
      paused: false,
    });
    assert.equal(got.displayName, 'keep me');
    got = await must('PATCH', `/v2/${c.name}`, { deliveryConfig: { labelFilters: { rack: '' }, paused: true } });
    assert.deepEqual(got.deliveryConfig, { maxConcurrency: 8, maxRate: 5, labelFilters: { rack: '' }, paused: true });
    got = await must('PATCH', `/v2/${c.name}`, { deliveryConfig: { labelFilters: {}, maxRate: 0, paused: false } });
    assert.deepEqual(got.deliveryConfig, { maxConcurrency: 8, maxRate: 0, labelFilters: {}, paused: false });
    // A body without deliveryConfig, or with null (contract §1.2: null = absent), changes none of it.
    got = await must('PATCH', `/v2/${c.name}`, { displayName: 'renamed', deliveryConfig: null });
    assert.deepEqual(got.deliveryConfig.maxConcurrency, 8);
    assert.equal(got.displayName, 'renamed');
  });

  it('update_mask names the whole object or single keys, in camelCase or snake_case; other keys are not applied', async () => {
    const p = await project();
    const c = await must('POST', connectors(p), { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.org/k' } });
    const body = { displayName: 'not applied', deliveryConfig: { maxConcurrency: 4, maxRate: 9, paused: true } };
    let got = await must('PATCH', `/v2/${c.name}?update_mask=delivery_config.max_rate`, body);
    assert.deepEqual(got.deliveryConfig, { ...DEFAULTS, maxRate: 9 });
    assert.equal(got.displayName, '');
    got = await must('PATCH', `/v2/${c.name}?updateMask=deliveryConfig.paused,deliveryConfig.maxConcurrency`, body);
    assert.deepEqual(got.deliveryConfig, { ...DEFAULTS, maxRate: 9, maxConcurrency: 4, paused: true });
    got = await must('PATCH', `/v2/${c.name}?update_mask=deliveryConfig`, {
      deliveryConfig: { maxConcurrency: 1, labelFilters: { a: '' } },
    });
    assert.deepEqual(got.deliveryConfig, { maxConcurrency: 1, maxRate: 9, labelFilters: { a: '' }, paused: true });
  });

  it('a project.user reads the controls but cannot change them', async () => {
    const p = await project();
    const c = await must('POST', connectors(p), { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.org/r' } });
    const reader = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: p });
    const read = await t.request('GET', `/v2/${c.name}`, { auth: reader.auth });
    assert.deepEqual(read.body.deliveryConfig, DEFAULTS);
    const res = await t.request('PATCH', `/v2/${c.name}`, {
      auth: reader.auth,
      body: { deliveryConfig: { paused: true } },
    });
    assert.equal(res.status, 403);
    assert.deepEqual((await must('GET', `/v2/${c.name}`)).deliveryConfig, DEFAULTS);
  });
});

describe('label filters', () => {
  /** A project with three devices: oslo on floor 2, oslo without a floor, bergen on floor 2. */
  async function site() {
    const p = await project();
    const devices = [];
    for (const labels of [{ site: 'oslo', floor: '2' }, { site: 'oslo' }, { site: 'bergen', floor: '2' }]) {
      devices.push(await must('POST', `/v2/projects/${p}/devices`, { type: 'touch', labels }));
    }
    return { p, devices };
  }
  const publishAll = async (devices: Array<{ name: string }>) => {
    for (const d of devices) await must('POST', `/v2/${d.name}:publish`, { touch: {} });
  };

  it('decide at publish: every listed label must match, "" only needs the key; a change applies to later events', async () => {
    const { p, devices } = await site();
    const make = async (path: string, labelFilters: Record<string, string>) =>
      must('POST', connectors(p), {
        type: 'HTTP_PUSH',
        httpConfig: { url: url(path) },
        deliveryConfig: { labelFilters },
      });
    await make('/filters/oslo', { site: 'oslo' });
    await make('/filters/floor', { floor: '' });
    await make('/filters/both', { site: 'oslo', floor: '2' });
    await make('/filters/none', {});
    await make('/filters/nowhere', { site: 'tromso' });
    await publishAll(devices);
    await engine.runOnce();
    // Touches only: relabelling a device below publishes a labelsChanged event, decided with the labels it sets.
    const ids = (path: string) =>
      arrived(path)
        .filter((r) => JSON.parse(r.body.toString('utf8')).event.eventType === 'touch')
        .map(deviceIdOf)
        .sort();
    const [osloFloor, osloBare, bergen] = devices.map((d: any) => idOf(d.name));
    assert.deepEqual(ids('/filters/oslo'), [osloFloor, osloBare].sort());
    assert.deepEqual(ids('/filters/floor'), [osloFloor, bergen].sort());
    assert.deepEqual(ids('/filters/both'), [osloFloor]);
    assert.deepEqual(ids('/filters/none'), [osloFloor, osloBare, bergen].sort());
    assert.deepEqual(ids('/filters/nowhere'), []);
    // Decided when the event is published: a device relabelled now sends its next events by its new labels.
    await must('PATCH', `/v2/${devices[2].name}/labels/site`, { value: 'oslo' });
    await publishAll([devices[2]]);
    await engine.runOnce();
    assert.deepEqual(ids('/filters/oslo'), [osloFloor, osloBare, bergen].sort());
    const changed = arrived('/filters/oslo').map((r) => JSON.parse(r.body.toString('utf8')).event.eventType);
    assert.deepEqual(changed.sort(), ['labelsChanged', 'touch', 'touch', 'touch']);
  });

  it(':sync and :replay apply them too, with the devices’ labels as they are now', async () => {
    const { p, devices } = await site();
    const t0 = t.clock.now();
    await publishAll(devices);
    t.clock.advance(1000);
    const c = await must('POST', connectors(p), {
      type: 'HTTP_PUSH',
      httpConfig: { url: url('/filters/sync') },
      deliveryConfig: { labelFilters: { floor: '2' } },
    });
    const synced = await must('POST', `/v2/${c.name}:sync`, {});
    assert.ok(synced !== null);
    await engine.runOnce();
    const [osloFloor, , bergen] = devices.map((d: any) => idOf(d.name));
    assert.deepEqual(arrived('/filters/sync').map(deviceIdOf).sort(), [osloFloor, bergen].sort());
    const replayed = await must('POST', `/v2/${c.name}:replay`, {
      startTime: new Date(t0 - 1000).toISOString(),
      endTime: new Date(t0 + 500).toISOString(),
    });
    assert.equal(replayed.replayedCount, 2);
    await engine.runOnce();
    assert.deepEqual(arrived('/filters/sync').slice(2).map(deviceIdOf).sort(), [osloFloor, bergen].sort());
  });
});
