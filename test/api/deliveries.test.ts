// The delivery log, :resend and :replay (extensions §X1, §X2) through the API, the real engine and dispatcher, and a
// loopback HTTPS receiver (test CA), with the fake clock: shapes, filters and paging, `-` across connectors, a resend
// and replays arriving with the trigger header, the replay limit, bad input, roles, and the Prometheus counters.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createDeliveryEngine, type DeliveryEngine } from '../../src/delivery/engine.ts';
import { createDispatcher } from '../../src/delivery/dispatcher.ts';
import type { Dispatcher } from '../../src/delivery/types.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from '../helpers/receiver.ts';
import { testTls } from '../helpers/tls.ts';

/** The replay limit of this file's service (SENSORCLOUD_REPLAY_MAX_EVENTS). */
const REPLAY_MAX = 5;
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const DELIVERY_KEYS = [
  'name',
  'eventId',
  'eventType',
  'targetName',
  'trigger',
  'state',
  'attemptCount',
  'createTime',
  'updateTime',
  'nextAttemptTime',
];

let t: TestContext;
let receiver: Receiver;
let dispatcher: Dispatcher;
let engine: DeliveryEngine;

before(async () => {
  t = await createTestContext({
    env: {
      SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
      SENSORCLOUD_CA_FILE: testTls().caFile,
      SENSORCLOUD_REPLAY_MAX_EVENTS: String(REPLAY_MAX),
    },
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

interface Setup {
  project: string;
  /** projects/{p}/dataconnectors/{dc} */
  connector: string;
  /** projects/{p}/devices/{d} */
  device: string;
  /** The receiver's path of this connector. */
  path: string;
}

let setups = 0;
/** A project of its own with a connector pushing to the receiver (a path of its own) and a device. */
async function setup(connector: Record<string, unknown> = {}): Promise<Setup> {
  const project = await t.createProject(`deliveries ${++setups}`);
  const path = `/hook/${setups}`;
  const dc = await must('POST', `/v2/projects/${project}/dataconnectors`, {
    type: 'HTTP_PUSH',
    labels: ['name'],
    ...connector,
    httpConfig: { url: `${receiver.url.replace(/\/hook$/, '')}${path}` },
  });
  const device = await must('POST', `/v2/projects/${project}/devices`, {
    type: 'temperature',
    labels: { name: 'Cold room' },
  });
  return { project, connector: dc.name, device: device.name, path };
}

async function publish(device: string, body: Record<string, unknown>): Promise<void> {
  await must('POST', `/v2/${device}:publish`, body);
}

/** What reached the receiver on the path, in order. */
function arrived(path: string): ReceivedRequest[] {
  return receiver.requests.filter((r) => r.path === path);
}
const eventOf = (r: ReceivedRequest) => JSON.parse(r.body.toString('utf8')).event;
const triggerOf = (r: ReceivedRequest) => r.headers['x-sensorcloud-delivery-trigger'];
const iso = (ms: number) => new Date(ms).toISOString();
const idOf = (name: string) => name.split('/').pop()!;

async function list(connector: string, query = '') {
  return must('GET', `/v2/${connector}/deliveries${query}`);
}

describe('the log', () => {
  it('lists deliveries newest first without attempts, and reads one with its attempts, oldest first', async () => {
    const s = await setup();
    const start = t.clock.now();
    receiver.replyOnce({ status: 500, body: 'try later' });
    await publish(s.device, { temperature: { value: 4.5 } });
    const first = await engine.runOnce();
    assert.deepEqual([first.attempted, first.failed], [1, 1]);

    let page = await list(s.connector);
    assert.equal(page.nextPageToken, '');
    assert.equal(page.deliveries.length, 1);
    let d = page.deliveries[0];
    assert.deepEqual(Object.keys(d).sort(), [...DELIVERY_KEYS].sort(), 'a listed delivery has no attempts key');
    assert.match(d.name, new RegExp(`^${s.connector}/deliveries/[1-9][0-9]*$`));
    assert.equal(d.targetName, s.device);
    assert.equal(d.eventType, 'temperature');
    assert.equal(d.eventId, eventOf(arrived(s.path)[0]!).eventId);
    assert.deepEqual([d.trigger, d.state, d.attemptCount], ['EVENT', 'RETRYING', 1]);
    assert.equal(d.createTime, iso(start).replace('Z', '000Z'));
    // The first retry is 8 s after the first attempt ended (contract §6.5); the fake clock stood still meanwhile.
    assert.equal(d.nextAttemptTime, iso(start + 8000).replace('Z', '000Z'));

    let one = await must('GET', `/v2/${d.name}`);
    assert.deepEqual(Object.keys(one).sort(), [...DELIVERY_KEYS, 'attempts'].sort());
    assert.deepEqual(one.attempts.length, 1);
    const [failed] = one.attempts;
    assert.deepEqual(
      { ...failed, duration: undefined },
      {
        attemptTime: iso(start).replace('Z', '000Z'),
        duration: undefined,
        outcome: 'HTTP_ERROR',
        httpStatus: 500,
        responseBody: 'try later',
        responseBodyTruncated: false,
        error: 'HTTP 500',
      },
    );
    assert.match(failed.duration, /^\d+\.\d{3}s$/);

    t.clock.advance(8000);
    const second = await engine.runOnce();
    assert.deepEqual([second.attempted, second.acked], [1, 1]);
    one = await must('GET', `/v2/${d.name}`);
    assert.deepEqual([one.state, one.attemptCount, one.nextAttemptTime], ['DELIVERED', 2, '']);
    assert.deepEqual(
      one.attempts.map((a: any) => [a.outcome, a.httpStatus, a.error]),
      [
        ['HTTP_ERROR', 500, 'HTTP 500'],
        ['SUCCESS', 200, ''],
      ],
    );
    assert.match(one.updateTime, TIME);
    assert.ok(one.updateTime > one.createTime);
    page = await list(s.connector);
    d = page.deliveries[0];
    assert.equal(d.state, 'DELIVERED');
    assert.equal(d.attempts, undefined);
  });

  it('filters by state, trigger, eventId, device and time, in camelCase and snake_case, and pages newest first', async () => {
    const s = await setup();
    const t0 = t.clock.now();
    for (let i = 0; i < 5; i++) {
      await publish(s.device, { temperature: { value: i } });
      t.clock.advance(1000);
    }
    await engine.runOnce();
    receiver.replyOnce({ status: 503 });
    await publish(s.device, { touch: {} });
    await engine.runOnce();
    const ids = arrived(s.path).map((r) => eventOf(r).eventId);
    assert.equal(ids.length, 6);

    const all = await list(s.connector);
    assert.equal(all.deliveries.length, 6);
    assert.deepEqual(
      all.deliveries.map((d: any) => d.eventId),
      [...ids].reverse(),
      'newest first',
    );
    const count = async (query: string) => (await list(s.connector, query)).deliveries.length;
    assert.equal(await count('?state=DELIVERED'), 5);
    assert.equal(await count('?state=RETRYING'), 1);
    assert.equal(await count('?state=DELIVERED&state=RETRYING'), 6);
    assert.equal(await count('?state=EXPIRED'), 0);
    assert.equal(await count('?trigger=EVENT'), 6);
    assert.equal(await count('?trigger=RESEND'), 0);
    assert.equal(await count(`?eventId=${ids[2]}`), 1);
    assert.equal(await count(`?event_id=${ids[2]}`), 1);
    assert.equal(await count(`?device=${idOf(s.device)}`), 6);
    assert.equal(await count(`?device=${s.device}`), 6);
    assert.equal(await count('?device=emu00000000000000000000'), 0);
    // On createTime, half-open: the 2nd, 3rd and 4th deliveries.
    assert.equal(await count(`?startTime=${iso(t0 + 1000)}&endTime=${iso(t0 + 4000)}`), 3);
    assert.equal(await count(`?start_time=${iso(t0 + 1000)}&end_time=${iso(t0 + 4000)}`), 3);
    assert.equal(await count(`?start_time=${iso(t0 + 4000)}&state=DELIVERED`), 1);

    const seen: string[] = [];
    let token = '';
    let pages = 0;
    do {
      const page = await list(s.connector, `?pageSize=4&state=DELIVERED${token ? `&pageToken=${token}` : ''}`);
      seen.push(...page.deliveries.map((d: any) => d.eventId));
      token = page.nextPageToken;
      pages++;
    } while (token !== '');
    assert.equal(pages, 2);
    assert.deepEqual(seen, ids.slice(0, 5).reverse());
    const first = await list(s.connector, '?page_size=2');
    const other = await t.request(
      'GET',
      `/v2/${s.connector}/deliveries?state=DELIVERED&pageToken=${first.nextPageToken}`,
    );
    assert.equal(other.status, 400, 'a token is valid only with the filters it was issued for');
  });

  it("'-' lists the deliveries of every connector of the project: where is event X?", async () => {
    const s = await setup();
    const second = await must('POST', `/v2/projects/${s.project}/dataconnectors`, {
      type: 'HTTP_PUSH',
      httpConfig: { url: `${receiver.url.replace(/\/hook$/, '')}${s.path}/second` },
    });
    await publish(s.device, { touch: {} });
    await publish(s.device, { temperature: { value: 1 } });
    await engine.runOnce();
    const eventId = eventOf(arrived(s.path)[0]!).eventId;
    const where = await must('GET', `/v2/projects/${s.project}/dataconnectors/-/deliveries?eventId=${eventId}`);
    assert.deepEqual(
      where.deliveries.map((d: any) => d.name.split('/deliveries/')[0]).sort(),
      [s.connector, second.name].sort(),
    );
    assert.ok(where.deliveries.every((d: any) => d.eventId === eventId && d.state === 'DELIVERED'));
    const every = await must('GET', `/v2/projects/${s.project}/dataconnectors/-/deliveries`);
    assert.equal(every.deliveries.length, 4);
    const one = await t.request('GET', `/v2/projects/${s.project}/dataconnectors/-/deliveries/1`);
    assert.equal(one.status, 400, one.text);
  });

  it('answers 400 for unknown states and triggers (naming the valid ones), a reversed window, a bad size or device', async () => {
    const s = await setup();
    const bad = async (query: string, pattern: RegExp) => {
      const res = await t.request('GET', `/v2/${s.connector}/deliveries${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.deepEqual(Object.keys(res.body).sort(), ['code', 'error', 'help']);
      assert.match(res.body.error, pattern);
    };
    await bad('?state=delivered', /state.*PENDING, RETRYING, DELIVERED, EXPIRED, DISCARDED, FAILED/);
    await bad('?state=DELIVERED&state=LOST', /LOST/);
    await bad('?trigger=PUBLISH', /EVENT, SYNC, RESEND, REPLAY, TEST/);
    await bad(`?startTime=${iso(t.clock.now())}&endTime=${iso(t.clock.now())}`, /startTime must be before endTime/);
    await bad('?startTime=yesterday', /startTime/);
    await bad('?pageSize=-1', /pageSize/);
    await bad('?pageToken=garbage', /pageToken/);
    await bad(`?device=projects/${t.projectId}/devices/x`, /device/);
  });

  it('answers 404 for a delivery that is not there, of any id format, or of another connector', async () => {
    const s = await setup();
    await publish(s.device, { touch: {} });
    await engine.runOnce();
    const [d] = (await list(s.connector)).deliveries;
    const other = await setup();
    for (const url of [
      `/v2/${s.connector}/deliveries/999999999999`,
      `/v2/${s.connector}/deliveries/abc`,
      `/v2/${s.connector}/deliveries/0`,
      `/v2/${other.connector}/deliveries/${idOf(d.name)}`,
      `/v2/projects/${s.project}/dataconnectors/cvq2b1b0l4l9s3f2a9g0/deliveries`,
    ]) {
      const res = await t.request('GET', url);
      assert.equal(res.status, 404, `${url}: ${res.text}`);
      assert.equal(res.body.code, 404);
    }
  });
});

describe('routes', () => {
  it('rewrites :resend, :replay and :test only after their resource: a label key ending in one still names its label', async () => {
    const s = await setup();
    for (const key of ['a:test', 'b:replay', 'c:resend']) {
      await must('POST', `/v2/${s.device}/labels`, { key, value: 'v' });
      assert.equal((await must('PATCH', `/v2/${s.device}/labels/${key}`, { value: 'w' })).value, 'w');
      await must('DELETE', `/v2/${s.device}/labels/${encodeURIComponent(key)}`);
    }
  });
});

describe('resend', () => {
  it('queues the event again as a new RESEND delivery that arrives with the same eventId and the trigger header', async () => {
    const s = await setup();
    await publish(s.device, { temperature: { value: 3 } });
    await engine.runOnce();
    const [original] = (await list(s.connector)).deliveries;
    assert.equal(triggerOf(arrived(s.path)[0]!), undefined, 'a published event carries no trigger header');
    // The body is built again: the labels as they are now.
    await must('PATCH', `/v2/${s.device}/labels/name`, { value: 'Freezer' });
    await engine.runOnce();
    const before = arrived(s.path).length;

    const res = await must('POST', `/v2/${original.name}:resend`, {});
    const d = res.delivery;
    assert.deepEqual(Object.keys(res), ['delivery']);
    assert.notEqual(d.name, original.name);
    assert.match(d.name, new RegExp(`^${s.connector}/deliveries/[1-9][0-9]*$`));
    assert.deepEqual(
      [d.eventId, d.eventType, d.targetName, d.trigger, d.state, d.attemptCount, d.attempts],
      [original.eventId, 'temperature', s.device, 'RESEND', 'PENDING', 0, []],
    );
    const report = await engine.runOnce();
    assert.equal(report.acked, 1);
    const resent = arrived(s.path)[before]!;
    assert.equal(eventOf(resent).eventId, original.eventId);
    assert.equal(triggerOf(resent), 'RESEND');
    assert.deepEqual(JSON.parse(resent.body.toString()).labels, { name: 'Freezer' });
    const logged = await must('GET', `/v2/${d.name}`);
    assert.deepEqual([logged.state, logged.trigger, logged.attemptCount], ['DELIVERED', 'RESEND', 1]);
    assert.equal((await list(s.connector, '?trigger=RESEND')).deliveries.length, 1);
    // The colon may arrive encoded.
    assert.equal((await t.request('POST', `/v2/${original.name}%3Aresend`, { body: {} })).status, 200);
    await engine.runOnce();
  });

  it('refuses a connector that is not ACTIVE, a delivery that is not there, and an event gone from the history', async () => {
    const s = await setup();
    await publish(s.device, { touch: {} });
    await engine.runOnce();
    const [d] = (await list(s.connector)).deliveries;
    const queued = await t.deps.store.deliveries.count();

    await must('PATCH', `/v2/${s.connector}`, { status: 'USER_DISABLED' });
    let res = await t.request('POST', `/v2/${d.name}:resend`, { body: {} });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error, /USER_DISABLED.*ACTIVE/);
    await must('PATCH', `/v2/${s.connector}`, { status: 'ACTIVE' });

    res = await t.request('POST', `/v2/${s.connector}/deliveries/999999999999:resend`, { body: {} });
    assert.equal(res.status, 404, res.text);

    await t.deps.store.events.deleteByDevice(idOf(s.device), 1000);
    res = await t.request('POST', `/v2/${d.name}:resend`, { body: {} });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error, /no longer in the event history.*31d.*SENSORCLOUD_EVENT_RETENTION/);
    assert.equal(await t.deps.store.deliveries.count(), queued, 'a refused resend queues nothing');
  });
});

describe('replay', () => {
  it('re-sends exactly the window’s events the filters accept, in order; onlyUndelivered recovers a disabled period', async () => {
    const s = await setup({ events: ['temperature', 'touch'] });
    const t0 = t.clock.now();
    const step = async (body: Record<string, unknown>) => {
      await publish(s.device, body);
      t.clock.advance(1000);
    };
    await step({ temperature: { value: 1 } }); // t0: delivered
    await step({ touch: {} }); // t0+1 s: delivered
    await engine.runOnce();
    await must('PATCH', `/v2/${s.connector}`, { status: 'USER_DISABLED' });
    await step({ temperature: { value: 2 } }); // t0+2 s: missed
    await step({ batteryStatus: { percentage: 90 } }); // t0+3 s: not in the connector's filter
    await step({ touch: {} }); // t0+4 s: missed
    await must('PATCH', `/v2/${s.connector}`, { status: 'ACTIVE' });
    await step({ temperature: { value: 3 } }); // t0+5 s: delivered
    await engine.runOnce();
    const history = (await must('GET', `/v2/${s.device}/events?startTime=${iso(t0)}&pageSize=100`)).events.reverse();
    const byTime = (offset: number) => history.find((e: any) => e.timestamp === iso(t0 + offset).replace('Z', '000Z'));
    const [e0, e1, e2, e3, e4, e5] = [0, 1000, 2000, 3000, 4000, 5000].map(byTime);
    assert.equal(e3.eventType, 'batteryStatus');
    assert.deepEqual(
      arrived(s.path).map((r) => eventOf(r).eventId),
      [e0.eventId, e1.eventId, e5.eventId],
    );

    const replay = async (body: Record<string, unknown>) => {
      const before = arrived(s.path).length;
      const res = await must('POST', `/v2/${s.connector}:replay`, body);
      assert.deepEqual(Object.keys(res), ['replayedCount']);
      await engine.runOnce();
      const got = arrived(s.path).slice(before);
      assert.ok(got.every((r) => triggerOf(r) === 'REPLAY'));
      assert.equal(got.length, res.replayedCount);
      return got.map((r) => eventOf(r));
    };
    // The gap, and only the gap.
    let got = await replay({ startTime: iso(t0), endTime: iso(t0 + 6000), onlyUndelivered: true });
    assert.deepEqual(got, [e2, e4], 'the original events, in the history’s order');
    // Half-open: t0+1 s up to, not including, t0+5 s; batteryStatus is not in the connector's filter.
    got = await replay({ startTime: iso(t0 + 1000), endTime: iso(t0 + 5000) });
    assert.deepEqual(
      got.map((e) => e.eventId),
      [e1.eventId, e2.eventId, e4.eventId],
    );
    got = await replay({ startTime: iso(t0), endTime: iso(t0 + 6000), eventTypes: ['touch', 'batteryStatus'] });
    assert.deepEqual(
      got.map((e) => e.eventId),
      [e1.eventId, e4.eventId],
    );
    // Now that the gap has been delivered, nothing is undelivered.
    got = await replay({ startTime: iso(t0), endTime: iso(t0 + 6000), onlyUndelivered: true });
    assert.deepEqual(got, []);
    const logged = await list(s.connector, '?trigger=REPLAY');
    assert.equal(logged.deliveries.length, 7);
    assert.ok(logged.deliveries.every((d: any) => d.state === 'DELIVERED'));
  });

  it('refuses a window over the limit with 400 naming it, and queues nothing', async () => {
    const s = await setup();
    const t0 = t.clock.now();
    for (let i = 0; i <= REPLAY_MAX; i++) {
      await publish(s.device, { touch: {} });
      t.clock.advance(1000);
    }
    await engine.runOnce();
    const queued = await t.deps.store.deliveries.count();
    const before = arrived(s.path).length;
    const res = await t.request('POST', `/v2/${s.connector}:replay`, {
      body: { startTime: iso(t0), endTime: iso(t.clock.now()) },
    });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error, new RegExp(`more than ${REPLAY_MAX} .*SENSORCLOUD_REPLAY_MAX_EVENTS=${REPLAY_MAX}`));
    assert.equal(await t.deps.store.deliveries.count(), queued);
    await engine.runOnce();
    assert.equal(arrived(s.path).length, before, 'nothing was queued');
    // Exactly the limit is allowed.
    const ok = await must('POST', `/v2/${s.connector}:replay`, {
      startTime: iso(t0 + 1000),
      endTime: iso(t.clock.now()),
    });
    assert.equal(ok.replayedCount, REPLAY_MAX);
    await engine.runOnce();
  });

  it('answers 400 for bad input and a connector that is not ACTIVE, queueing nothing', async () => {
    const s = await setup();
    await publish(s.device, { touch: {} });
    await engine.runOnce();
    const queued = await t.deps.store.deliveries.count();
    const now = t.clock.now();
    const window = { startTime: iso(now - 60_000), endTime: iso(now + 1000) };
    const bad = async (body: unknown, pattern: RegExp, url = `/v2/${s.connector}:replay`) => {
      const res = await t.request('POST', url, { body });
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.match(res.body.error, pattern);
    };
    await bad({}, /startTime is required/);
    await bad({ startTime: window.startTime }, /endTime is required/);
    await bad({ ...window, startTime: 'last week' }, /startTime.*RFC 3339/);
    await bad({ startTime: window.endTime, endTime: window.startTime }, /startTime must be before endTime/);
    await bad({ startTime: window.startTime, endTime: window.startTime }, /startTime must be before endTime/);
    await bad({ ...window, eventTypes: ['touch', 'smell'] }, /eventTypes.*smell/);
    await bad({ ...window, onlyUndelivered: 'yes' }, /onlyUndelivered/);
    await bad(
      { startTime: iso(now - 73 * 3600_000), endTime: window.endTime, onlyUndelivered: true },
      /retention, 3d \(SENSORCLOUD_DELIVERY_LOG_RETENTION\)/,
    );
    await bad(window, /wildcard/, `/v2/projects/${s.project}/dataconnectors/-:replay`);
    await must('PATCH', `/v2/${s.connector}`, { status: 'USER_DISABLED' });
    await bad(window, /USER_DISABLED/);
    await must('PATCH', `/v2/${s.connector}`, { status: 'ACTIVE' });
    assert.equal(await t.deps.store.deliveries.count(), queued);
  });
});

describe('roles and the engine', () => {
  it('project.user reads the log but gets 403 on :resend, :replay and :test; no role at all gets 404', async () => {
    const s = await setup();
    await publish(s.device, { touch: {} });
    await engine.runOnce();
    const [d] = (await list(s.connector)).deliveries;
    const user = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: s.project });
    const nobody = await t.createServiceAccount({ roles: [] });
    const as = (auth: any, method: string, url: string, body?: unknown) => t.request(method, url, { auth, body });
    assert.equal((await as(user.auth, 'GET', `/v2/${s.connector}/deliveries`)).status, 200);
    assert.equal((await as(user.auth, 'GET', `/v2/projects/${s.project}/dataconnectors/-/deliveries`)).status, 200);
    assert.equal((await as(user.auth, 'GET', `/v2/${d.name}`)).status, 200);
    const window = { startTime: iso(t.clock.now() - 1000), endTime: iso(t.clock.now() + 1000) };
    for (const [url, body] of [
      [`/v2/${d.name}:resend`, {}],
      [`/v2/${s.connector}:replay`, window],
      [`/v2/${s.connector}:test`, {}],
    ] as const) {
      const res = await as(user.auth, 'POST', url, body);
      assert.equal(res.status, 403, `${url}: ${res.text}`);
      assert.match(res.body.error, /dataconnector\.update/);
      assert.equal((await as(nobody.auth, 'POST', url, body)).status, 404);
    }
    assert.equal((await as(nobody.auth, 'GET', `/v2/${s.connector}/deliveries`)).status, 404);
  });

  it(':test answers 503 in the error shape when no delivery engine runs in the process', async () => {
    const s = await setup();
    const res = await t.request('POST', `/v2/${s.connector}:test`, { body: {} });
    assert.equal(res.status, 503, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ['code', 'error', 'help']);
    assert.match(res.body.error, /delivery engine/);
  });

  it('GET /metrics counts resends and replays, with HELP and TYPE', async () => {
    const res = await t.request('GET', '/metrics', { auth: null });
    assert.equal(res.status, 200);
    const text = res.text;
    assert.match(text, /# HELP delivery_recovery_requests_total .+\n# TYPE delivery_recovery_requests_total counter\n/);
    assert.match(text, /# HELP delivery_replayed_events_total .+\n# TYPE delivery_replayed_events_total counter\n/);
    const value = (series: string) =>
      Number(new RegExp(`^${series.replace(/[{}"=]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1]);
    assert.equal(value('delivery_recovery_requests_total{kind="resend"}'), 2);
    // Five carried out (the refused ones count nothing): 2 + 3 + 2 + 0 + 5 events.
    assert.equal(value('delivery_recovery_requests_total{kind="replay"}'), 5);
    assert.equal(value('delivery_replayed_events_total'), 12);
    assert.equal(value('delivery_recovery_requests_total{kind="test"}'), 0);
  });
});
