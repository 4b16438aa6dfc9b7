// Event streams over a real listening server (inject() cannot stream): framing, filters, pings, limits, errors.
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { parsePingInterval } from '../../src/api/routes/stream.ts';
import { StreamMessage } from '../../src/events/fan-out.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createTestContext, type Auth, type TestContext } from '../helpers/context.ts';
import { sleep, until } from '../helpers/until.ts';

const ID = /^[0-9a-v]{20}$/;
const TS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

interface Stream {
  status: number;
  headers: IncomingHttpHeaders;
  /** Everything received so far, verbatim. */
  text(): string;
  /** The next message (NDJSON line or SSE data), parsed; rejects after timeoutMs. */
  next(timeoutMs?: number): Promise<any>;
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  res: IncomingMessage;
  close(): void;
}

function authHeader(auth: Auth): Record<string, string> {
  if (auth && 'basic' in auth)
    return { authorization: `Basic ${Buffer.from(`${auth.basic[0]}:${auth.basic[1]}`).toString('base64')}` };
  if (auth && 'bearer' in auth) return { authorization: `Bearer ${auth.bearer}` };
  if (auth && 'raw' in auth) return { authorization: auth.raw };
  return {};
}

/** Opens a stream; with read=false the response is left unread (a slow reader). */
function openStream(
  base: string,
  path: string,
  opts: { auth: Auth; accept?: string; read?: boolean },
): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...authHeader(opts.auth) };
    if (opts.accept) headers.accept = opts.accept;
    const req = httpRequest(`${base}${path}`, { headers });
    req.on('error', reject);
    req.on('response', (res) => {
      const sse = (res.headers['content-type'] ?? '').startsWith('text/event-stream');
      let raw = '';
      let consumed = 0;
      const messages: any[] = [];
      const waiters: Array<(m: any) => void> = [];
      const parse = () => {
        const sep = sse ? '\n\n' : '\n';
        for (let i = raw.indexOf(sep, consumed); i >= 0; i = raw.indexOf(sep, consumed)) {
          let frame = raw.slice(consumed, i);
          consumed = i + sep.length;
          if (sse) {
            assert.ok(frame.startsWith('data: '), `SSE frame: ${frame.slice(0, 40)}`);
            frame = frame.slice('data: '.length);
          }
          const msg = JSON.parse(frame);
          const w = waiters.shift();
          if (w) w(msg);
          else messages.push(msg);
        }
      };
      const ended = new Promise<void>((done) => res.on('end', () => done()));
      res.setEncoding('utf8');
      if (opts.read !== false)
        res.on('data', (chunk: string) => {
          raw += chunk;
          parse();
        });
      resolve({
        status: res.statusCode!,
        headers: res.headers,
        res,
        ended,
        text: () => raw,
        next(timeoutMs = 5000) {
          if (messages.length > 0) return Promise.resolve(messages.shift());
          return new Promise((ok, fail) => {
            const timer = setTimeout(() => fail(new Error(`no stream message within ${timeoutMs} ms`)), timeoutMs);
            waiters.push((m) => {
              clearTimeout(timer);
              ok(m);
            });
          });
        },
        close: () => req.destroy(),
      });
    });
    req.end();
  });
}

/** Reads a whole non-stream (error) response. */
async function readAll(s: Stream): Promise<any> {
  await s.ended;
  return JSON.parse(s.text());
}

describe('event stream', () => {
  let t: TestContext;
  let base: string;
  let a: DeviceRecord; // temperature, room=4
  let b: DeviceRecord; // proximity, room=5
  let c: DeviceRecord; // touch, floor=1
  let e: DeviceRecord; // humidity, room=4 and floor=2
  let other: DeviceRecord; // temperature in another project
  let otherProject: string;

  const touch = (device: DeviceRecord) =>
    t.deps.events.transaction(async (_tx, emit) => {
      const now = nowMicros(t.deps);
      return emit(device, 'touch', { touch: { updateTime: formatTimestamp(now) } }, now);
    });
  const temperature = (device: DeviceRecord, value = 21.5) =>
    t.deps.events.transaction(async (_tx, emit) => {
      const now = nowMicros(t.deps);
      const at = formatTimestamp(now);
      return emit(
        device,
        'temperature',
        { temperature: { value, updateTime: at, samples: [{ value, sampleTime: at }], isBackfilled: false } },
        now,
      );
    });
  const streamPath = (query = '') => `/v2/projects/${t.projectId}/devices:stream${query}`;
  const open = (path: string, opts: { auth?: Auth; accept?: string; read?: boolean } = {}) =>
    openStream(base, path, {
      auth: opts.auth === undefined ? t.admin : opts.auth,
      accept: opts.accept,
      read: opts.read,
    });
  /** Opens a stream, emits events from the devices in order, returns the first message received. */
  const firstOf = async (query: string, emitters: Array<() => Promise<unknown>>) => {
    const s = await open(streamPath(query));
    try {
      assert.equal(s.status, 200, s.text());
      for (const fn of emitters) await fn();
      return await s.next();
    } finally {
      s.close();
    }
  };

  before(async () => {
    t = await createTestContext();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    a = await t.createDevice({
      type: 'temperature',
      productNumber: '102058',
      labels: { room: '4', 'virtual-sensor': '' },
    });
    b = await t.createDevice({
      type: 'proximity',
      productNumber: '102064',
      labels: { room: '5', 'virtual-sensor': '' },
    });
    c = await t.createDevice({ type: 'touch', productNumber: '100110', labels: { floor: '1', 'virtual-sensor': '' } });
    e = await t.createDevice({ type: 'humidity', productNumber: '101895', labels: { room: '4', floor: '2' } });
    otherProject = await t.createProject('other');
    other = await t.createDevice({ projectId: otherProject, type: 'temperature', labels: { room: '4' } });
  });
  after(() => t.close());

  describe('happy', () => {
    it('NDJSON: application/json, headers at once, one {"result":{"event"}} object per line', async () => {
      const s = await open(streamPath());
      assert.equal(s.status, 200);
      assert.equal(s.headers['content-type'], 'application/json');
      const emitted = await touch(a);
      const msg = await s.next();
      assert.deepEqual(Object.keys(msg), ['result']);
      assert.deepEqual(Object.keys(msg.result.event), ['eventId', 'targetName', 'eventType', 'data', 'timestamp']);
      assert.deepEqual(msg.result.event, emitted.event);
      assert.equal(msg.result.event.targetName, `projects/${t.projectId}/devices/${a.id}`);
      assert.equal(s.text(), `${JSON.stringify({ result: { event: emitted.event } })}\n`);
      s.close();
    });

    it('SSE: exactly text/event-stream and "data: <json>\\n\\n" frames', async () => {
      const s = await open(streamPath(), { accept: 'application/json, text/event-stream' });
      assert.equal(s.status, 200);
      assert.equal(s.headers['content-type'], 'text/event-stream');
      const first = await touch(a);
      const second = await temperature(a);
      assert.deepEqual((await s.next()).result.event, first.event);
      assert.deepEqual((await s.next()).result.event, second.event);
      assert.equal(
        s.text(),
        `data: ${JSON.stringify({ result: { event: first.event } })}\n\ndata: ${JSON.stringify({ result: { event: second.event } })}\n\n`,
      );
      s.close();
    });

    it('only new events of the own project reach the stream', async () => {
      const msg = await firstOf('', [() => touch(other), () => touch(b)]);
      assert.equal(msg.result.event.targetName, `projects/${t.projectId}/devices/${b.id}`);
    });

    it('device_ids (bare ids or device names)', async () => {
      assert.match(
        (await firstOf(`?device_ids=${b.id}`, [() => touch(a), () => touch(b)])).result.event.targetName,
        new RegExp(`${b.id}$`),
      );
      const byName = await firstOf(`?deviceIds=projects/${t.projectId}/devices/${c.id}&deviceIds=${b.id}`, [
        () => touch(a),
        () => touch(c),
      ]);
      assert.match(byName.result.event.targetName, new RegExp(`${c.id}$`));
    });

    it('device_types: values ORed', async () => {
      const msg = await firstOf('?device_types=proximity&deviceTypes=touch', [
        () => touch(a),
        () => touch(e),
        () => touch(c),
      ]);
      assert.match(msg.result.event.targetName, new RegExp(`${c.id}$`));
    });

    it('product_numbers', async () => {
      const msg = await firstOf('?product_numbers=102064', [() => touch(a), () => touch(c), () => touch(b)]);
      assert.match(msg.result.event.targetName, new RegExp(`${b.id}$`));
    });

    it('label_filters: exact value, presence (key and key=), all must hold', async () => {
      assert.match(
        (await firstOf('?label_filters=room%3D5', [() => touch(a), () => touch(c), () => touch(b)])).result.event
          .targetName,
        new RegExp(`${b.id}$`),
      );
      assert.match(
        (await firstOf('?label_filters=floor', [() => touch(a), () => touch(c)])).result.event.targetName,
        new RegExp(`${c.id}$`),
      );
      assert.match(
        (await firstOf('?labelFilters=floor%3D', [() => touch(b), () => touch(e)])).result.event.targetName,
        new RegExp(`${e.id}$`),
      );
      assert.match(
        (
          await firstOf('?label_filters=room&label_filters=floor', [
            () => touch(a),
            () => touch(b),
            () => touch(c),
            () => touch(e),
          ])
        ).result.event.targetName,
        new RegExp(`${e.id}$`),
      );
    });

    it('event_types, and filters of different kinds ANDed', async () => {
      const msg = await firstOf('?event_types=temperature', [() => touch(a), () => temperature(a, 30)]);
      assert.equal(msg.result.event.eventType, 'temperature');
      const both = await firstOf('?event_types=touch&device_types=humidity', [
        () => temperature(a),
        () => touch(a),
        () => touch(e),
      ]);
      assert.equal(both.result.event.eventType, 'touch');
      assert.match(both.result.event.targetName, new RegExp(`${e.id}$`));
    });

    it('single-device stream: that device only, with event_types', async () => {
      const s = await open(
        `/v2/projects/${t.projectId}/devices/${a.id}:stream?event_types=temperature&device_ids=${b.id}`,
      );
      assert.equal(s.status, 200);
      await touch(b);
      await touch(a);
      const ev = await temperature(a, 22);
      assert.deepEqual((await s.next()).result.event, ev.event);
      s.close();
      const encoded = await open(`/v2/projects/${t.projectId}/devices/${b.id}%3Astream`, {
        accept: 'text/event-stream',
      });
      assert.equal(encoded.headers['content-type'], 'text/event-stream');
      await touch(a);
      const own = await touch(b);
      assert.deepEqual((await encoded.next()).result.event, own.event);
      encoded.close();
    });

    it('pings every ping_interval with a new id, the project as target, data null', async () => {
      const s = await open(streamPath('?ping_interval=1s&device_ids=none'));
      const p1 = (await s.next(4000)).result.event;
      const p2 = (await s.next(4000)).result.event;
      for (const p of [p1, p2]) {
        assert.deepEqual(Object.keys(p), ['eventId', 'targetName', 'eventType', 'data', 'timestamp']);
        assert.match(p.eventId, ID);
        assert.equal(p.targetName, `projects/${t.projectId}`);
        assert.equal(p.eventType, 'ping');
        assert.equal(p.data, null);
        assert.match(p.timestamp, TS);
      }
      assert.notEqual(p1.eventId, p2.eventId);
      s.close();
    });

    it('ping_interval accepts "10s", "1.5s" and bare seconds, default 10, clamped to 1-60', () => {
      assert.equal(parsePingInterval(undefined), 10);
      assert.equal(parsePingInterval('10s'), 10);
      assert.equal(parsePingInterval('1.5s'), 1.5);
      assert.equal(parsePingInterval('5'), 5);
      assert.equal(parsePingInterval('0'), 1);
      assert.equal(parsePingInterval('0.2s'), 1);
      assert.equal(parsePingInterval('3600s'), 60);
    });

    it('ends cleanly after the maximum duration (1 h, lowered here)', async () => {
      const limits = t.app.eventStreams.limits;
      const saved = limits.maxDurationMs;
      limits.maxDurationMs = 150;
      try {
        const s = await open(streamPath());
        await s.ended;
        assert.equal(s.text(), '');
        assert.equal(s.res.complete, true);
      } finally {
        limits.maxDurationMs = saved;
      }
    });

    it('shutdown (preClose) ends open streams so the server can close', async () => {
      const s = await open(streamPath());
      await t.app.eventStreams.closeAll();
      await s.ended;
      assert.equal(t.app.eventStreams.openCount(), 0);
    });

    it('a client disconnect removes the subscription', async () => {
      const before = t.app.eventStreams.openCount();
      const s = await open(streamPath());
      assert.equal(t.app.eventStreams.openCount(), before + 1);
      s.close();
      await until('the stream to be released', () => t.app.eventStreams.openCount() === before, { everyMs: 20 });
      await touch(a); // nothing left to write to
    });
  });

  describe('errors', () => {
    const expectError = async (path: string, auth: Auth, status: number) => {
      const s = await open(path, { auth });
      assert.equal(s.status, status);
      assert.match(String(s.headers['content-type']), /^application\/json/);
      const body = await readAll(s);
      assert.deepEqual(Object.keys(body), ['error']);
      assert.equal(body.error.code, status);
      assert.equal(typeof body.error.message, 'string');
      return body;
    };

    it('bad query values are 400 in the stream error shape', async () => {
      await expectError(streamPath('?ping_interval=soon'), t.admin, 400);
      await expectError(streamPath('?label_filters=%3Dx'), t.admin, 400);
      await expectError('/v2/projects/-/devices:stream', t.admin, 400);
    });

    it('unknown project, unknown device, or a device of another project: 404', async () => {
      await expectError('/v2/projects/cvq2b1b0l4l9s3f2a9g0/devices:stream', t.admin, 404);
      await expectError(`/v2/projects/${t.projectId}/devices/emucvq2b1b0l4l9s3f2a9h0:stream`, t.admin, 404);
      await expectError(`/v2/projects/${t.projectId}/devices/${other.id}:stream`, t.admin, 404);
    });

    it('429 carries Retry-After and the stream error shape', async () => {
      const limited = await createTestContext({ env: { SENSORCLOUD_RATE_LIMIT: '1/60s' } });
      try {
        const path = `/v2/projects/${limited.projectId}/devices/emucvq2b1b0l4l9s3f2a9h0:stream`;
        assert.equal((await limited.request('GET', path)).status, 404);
        const res = await limited.request('GET', path);
        assert.equal(res.status, 429);
        assert.ok(Number(res.headers['retry-after']) >= 1);
        assert.deepEqual(res.body, { error: { code: 429, message: res.body.error.message } });
      } finally {
        await limited.close();
      }
    });
  });

  describe('security', () => {
    it('no or wrong credentials: 401 in the stream error shape', async () => {
      const s401 = async (auth: Auth) => {
        const s = await open(streamPath(), { auth });
        assert.equal(s.status, 401);
        const body = await readAll(s);
        assert.deepEqual(body, { error: { code: 401, message: body.error.message } });
      };
      await s401(null);
      await s401({ basic: ['cvq2b1r0l4l9s3f2a9k0', '0123456789abcdef0123456789abcdef'] });
      await s401({ raw: 'Digest abc' });
    });

    it('a caller without any role on the project gets 404 (existence is not leaked)', async () => {
      const stranger = await t.createServiceAccount({ projectId: otherProject, roles: ['roles/project.user'] });
      const s = await open(streamPath(), { auth: stranger.auth });
      assert.equal(s.status, 404);
      assert.equal((await readAll(s)).error.code, 404);
      const own = await open(`/v2/projects/${otherProject}/devices:stream`, { auth: stranger.auth });
      assert.equal(own.status, 200, 'project.user holds device.read');
      own.close();
    });
  });

  describe('limits of the whole server', () => {
    /** Lowers the server's stream caps for one test. */
    const withCaps = async (
      caps: Partial<{ perPrincipal: number; total: number; bufferedBytes: number }>,
      fn: () => Promise<void>,
    ) => {
      const live = t.app.eventStreams.budget.caps;
      const saved = { ...live };
      Object.assign(live, caps);
      try {
        await fn();
      } finally {
        Object.assign(live, saved);
      }
    };

    it('a caller over its cap of open streams gets 429 with Retry-After and a clear message; other callers are not affected', async () => {
      await withCaps({ perPrincipal: 2 }, async () => {
        const member = await t.createServiceAccount({ roles: ['roles/project.user'] });
        const first = await open(streamPath(), { auth: member.auth });
        const second = await open(streamPath(), { auth: member.auth });
        try {
          assert.deepEqual([first.status, second.status], [200, 200]);
          const third = await open(streamPath(), { auth: member.auth });
          assert.equal(third.status, 429);
          assert.ok(Number(third.headers['retry-after']) >= 1);
          assert.deepEqual(await readAll(third), {
            error: {
              code: 429,
              message: 'too many open event streams: 2 are open for this caller, the limit is 2; close one first',
            },
          });
          const other = await open(streamPath());
          assert.equal(other.status, 200, 'another caller still opens one');
          other.close();
          first.close();
          // The server lets the closed stream go when it sees the disconnect: a new one opens then.
          let again = await open(streamPath(), { auth: member.auth });
          for (let i = 0; i < 250 && again.status === 429; i++) {
            await readAll(again);
            await sleep(20);
            again = await open(streamPath(), { auth: member.auth });
          }
          assert.equal(again.status, 200, 'a closed stream frees its place');
          again.close();
        } finally {
          first.close();
          second.close();
        }
      });
    });

    it('the server over its cap of open streams gets 429 for everybody', async () => {
      // A server of its own, with nothing else open: the streams of the tests before close at their own pace.
      const own = await createTestContext({ env: { SENSORCLOUD_STREAMS_MAX: '1' } });
      try {
        await own.app.listen({ port: 0, host: '127.0.0.1' });
        const ownBase = `http://127.0.0.1:${(own.app.server.address() as AddressInfo).port}`;
        const path = `/v2/projects/${own.projectId}/devices:stream`;
        const s = await openStream(ownBase, path, { auth: own.admin });
        try {
          assert.equal(s.status, 200);
          const member = await own.createServiceAccount({ roles: ['roles/project.user'] });
          const refused = await openStream(ownBase, path, { auth: member.auth });
          assert.equal(refused.status, 429);
          assert.deepEqual(await readAll(refused), {
            error: {
              code: 429,
              message: 'too many open event streams: the server holds its limit of 1; try again later',
            },
          });
        } finally {
          s.close();
        }
      } finally {
        await own.close();
      }
    });

    it('over the byte budget, the readers furthest behind are closed first with the 503 message; a reader that keeps up gets every event', async () => {
      await withCaps({ bufferedBytes: 2 * 1024 * 1024 }, async () => {
        const budget = t.app.eventStreams.budget;
        const closedBefore = budget.closedForBudget();
        const reader = await open(streamPath(`?device_ids=${c.id}`));
        const stalled = await Promise.all(
          Array.from({ length: 6 }, () => open(streamPath(`?device_ids=${c.id}`), { read: false })),
        );
        const pad = 'x'.repeat(64 * 1024);
        let published = 0;
        let highest = 0;
        // Bounded: the kernel takes a few MB per socket, then the stalled queues grow until the budget closes them.
        // The reader keeps up: it has every event of a batch before the next is published.
        for (let batch = 0; batch < 200 && budget.closedForBudget() - closedBefore < stalled.length; batch++) {
          await t.deps.events.transaction(async (_tx, emit) => {
            const now = nowMicros(t.deps);
            for (let i = 0; i < 5; i++) await emit(c, 'touch', { touch: { updateTime: 'x' }, pad }, now);
          });
          published += 5;
          highest = Math.max(highest, budget.bufferedBytes());
          for (let i = 0; i < 5; i++)
            assert.equal(
              (await reader.next()).result?.event.eventType,
              'touch',
              `event ${published - 5 + i} reached the reader`,
            );
        }
        assert.equal(
          budget.closedForBudget() - closedBefore,
          stalled.length,
          `every stalled reader was closed (${published} events published)`,
        );
        assert.ok(
          highest <= 2 * 1024 * 1024 + 5 * (64 * 1024 + 1024),
          `never more than the budget and a batch: ${highest}`,
        );
        assert.equal(reader.res.readableEnded, false, 'the reader that kept up is open');
        reader.close();
        // A stalled reader that now reads: the messages its socket held, then the end-of-stream message.
        const s = stalled[0]!;
        let text = '';
        s.res.on('data', (chunk: string) => {
          text += chunk;
        });
        await s.ended;
        const last = JSON.parse(text.trimEnd().split('\n').pop()!);
        assert.deepEqual(last, {
          error: {
            code: 503,
            message:
              'stream closed: the server holds as much for event streams as it may, and this reader was the furthest behind',
          },
        });
        for (const other of stalled) other.close();
      });
    });

    it('each message is framed once, and every stream writes the same bytes', () => {
      const message = new StreamMessage('{"result":{}}');
      assert.equal(message.frame(false), message.frame(false));
      assert.equal(message.frame(true), message.frame(true));
      assert.equal(message.frame(false).toString(), '{"result":{}}\n');
      assert.equal(message.frame(true).toString(), 'data: {"result":{}}\n\n');
    });
  });

  describe('slow reader', () => {
    it('more than 1000 buffered messages: 503 error message and close, publishing never blocks', async () => {
      const s = await open(streamPath(`?device_ids=${c.id}`), { read: false });
      assert.equal(s.status, 200);
      const openBefore = t.app.eventStreams.openCount();
      const pad = 'x'.repeat(8 * 1024); // large events fill the kernel buffers quickly
      let published = 0;
      // Bounded: the kernel absorbs a few MB, then the server buffers 1000 messages and gives up.
      for (let batch = 0; batch < 60 && t.app.eventStreams.openCount() === openBefore; batch++) {
        await t.deps.events.transaction(async (_tx, emit) => {
          const now = nowMicros(t.deps);
          for (let i = 0; i < 100; i++) await emit(c, 'touch', { touch: { updateTime: 'x' }, pad }, now);
        });
        published += 100;
      }
      assert.equal(t.app.eventStreams.openCount(), openBefore - 1, `stream still open after ${published} events`);
      assert.ok(published > 1000);
      // The reader now catches up: what its socket had taken, then the error, then the end of the response (the
      // messages still queued were dropped at the close, so that a closed stream holds no memory).
      let text = '';
      s.res.on('data', (chunk: string) => {
        text += chunk;
      });
      await s.ended;
      const lines = text.split('\n');
      assert.equal(lines.pop(), '');
      const last = JSON.parse(lines.pop()!);
      assert.equal(last.error.code, 503);
      assert.equal(typeof last.error.message, 'string');
      assert.ok(lines.length >= 1 && lines.length < published, `${lines.length} events before the error`);
      assert.ok(lines.every((l) => JSON.parse(l).result.event.eventType === 'touch'));
    });

    it('more than 8 MiB buffered: the same 503 and close, long before 1000 large messages', async () => {
      const s = await open(streamPath(`?device_ids=${c.id}`), { read: false });
      const openBefore = t.app.eventStreams.openCount();
      const pad = 'x'.repeat(256 * 1024);
      let published = 0;
      for (let batch = 0; batch < 20 && t.app.eventStreams.openCount() === openBefore; batch++) {
        await t.deps.events.transaction(async (_tx, emit) => {
          const now = nowMicros(t.deps);
          for (let i = 0; i < 10; i++) await emit(c, 'touch', { touch: { updateTime: 'x' }, pad }, now);
        });
        published += 10;
      }
      assert.equal(t.app.eventStreams.openCount(), openBefore - 1, `stream still open after ${published} events`);
      assert.ok(published < 200, `${published} events`);
      let text = '';
      s.res.on('data', (chunk: string) => {
        text += chunk;
      });
      await s.ended;
      const last = JSON.parse(text.trimEnd().split('\n').pop()!);
      assert.equal(last.error.code, 503);
      assert.match(last.error.message, /bytes behind/);
    });
  });
});
