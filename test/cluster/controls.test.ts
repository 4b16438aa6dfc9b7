// A connector's delivery controls (extensions §X4) held by a cluster: two `serve` processes on one PostgreSQL
// database, events published at both, and one receiver. maxConcurrency counts the requests open at the receiver
// whichever process made them; maxRate spaces the starts of both processes' attempts; a pause set at one process
// holds the other's pushes too, and resuming sends everything.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTestDatabase } from '../helpers/postgres.ts';
import { startReceiver, type ReceivedRequest } from '../helpers/receiver.ts';
import { sleep } from '../helpers/until.ts';
import { basic, call, startCluster, until } from './helpers.ts';

/** The most requests open at once at the receiver: from arrival until the answer was written. */
function mostOpen(received: readonly ReceivedRequest[]): number {
  const changes = received.flatMap(
    (r) =>
      [
        [r.arrivedAt, 1],
        [r.answeredAt ?? Infinity, -1],
      ] as Array<[number, number]>,
  );
  changes.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let most = 0;
  let open = 0;
  for (const [, change] of changes) most = Math.max(most, (open += change));
  return most;
}

/** The most arrivals in any window of `windowMs` beginning at an arrival. */
function mostInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! < sorted[i]! - windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('delivery controls across two processes on PostgreSQL', () => {
  it('maxConcurrency, maxRate and the pause hold for the cluster; every event arrives', {
    timeout: 180_000,
  }, async () => {
    const db = await createTestDatabase();
    const byPath = new Map<string, ReceivedRequest[]>();
    const receiver = await startReceiver({
      reply: (req) => {
        const list = byPath.get(req.path) ?? [];
        list.push(req);
        byPath.set(req.path, list);
        return { status: 200, delayMs: req.path === '/slow' ? 100 : 0 };
      },
    });
    const at = (path: string) => byPath.get(path) ?? [];
    const ids = (path: string) => at(path).map((r) => JSON.parse(r.body.toString('utf8')).event.eventId as string);
    const cluster = await startCluster(db.url, 2);
    try {
      const [a, b] = cluster.nodes as [(typeof cluster.nodes)[0], (typeof cluster.nodes)[0]];
      const { project, serviceAccount } = cluster.boot;
      const admin = basic(serviceAccount.keyId, serviceAccount.secret);
      const origin = receiver.url.replace(/\/hook$/, '');
      const connector = async (path: string, deliveryConfig: Record<string, unknown>) => {
        const res = await call(a.base, admin, 'POST', `/${project}/dataconnectors`, {
          type: 'HTTP_PUSH',
          httpConfig: { url: `${origin}${path}` },
          deliveryConfig,
        });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body.name as string;
      };
      await connector('/slow', { maxConcurrency: 2 });
      await connector('/paced', { maxRate: 5 });
      const paused = await connector('/paused', { paused: true });
      const device = (await call(a.base, admin, 'POST', `/${project}/devices`, { type: 'touch' })).body.name;
      // 30 events, published at both processes, 8 at a time.
      const EVENTS = 30;
      const published: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          while (next < EVENTS) {
            next++;
            const node = w % 2 === 0 ? a : b;
            const r = await call(node.base, admin, 'POST', `/${device}:publish`, { touch: {} });
            assert.equal(r.status, 200, JSON.stringify(r.body));
          }
        }),
      );
      const history = await call(a.base, admin, 'GET', `/${device}/events?pageSize=100`);
      for (const e of history.body.events) published.push(e.eventId);
      assert.equal(published.length, EVENTS);

      await until('every event at /slow', () => ids('/slow').length >= EVENTS, 60_000);
      const open = mostOpen(at('/slow'));
      assert.ok(open <= 2, `at most 2 pushes of the connector open at once in the cluster: ${open}`);
      assert.equal(open, 2, 'the load kept both slots busy');

      await until('every event at /paced', () => ids('/paced').length >= EVENTS, 60_000);
      // The bound is on the attempts that start in a second (⌈5⌉ + 1), read from the delivery log's attempt times
      // (on the processes' clocks): arrivals at the receiver add the pushes' travel, and bunch while a process opens
      // its first connection or the machine is busy.
      const pacedName = (await call(a.base, admin, 'GET', `/${project}/dataconnectors`)).body.dataConnectors.find(
        (c: any) => c.httpConfig.url.endsWith('/paced'),
      ).name as string;
      const listed = (await call(a.base, admin, 'GET', `/${pacedName}/deliveries?pageSize=100`)).body.deliveries;
      const starts: number[] = [];
      for (const d of listed) {
        const one = (await call(a.base, admin, 'GET', `/${d.name}`)).body;
        for (const attempt of one.attempts) starts.push(Date.parse(attempt.attemptTime));
      }
      assert.equal(starts.length, EVENTS, 'one attempt each');
      const most = mostInWindow(starts, 1000);
      assert.ok(most <= 6, `at most ⌈5⌉ + 1 of the paced connector's attempts start in any second: ${most}`);
      const span = Math.max(...starts) - Math.min(...starts);
      assert.ok(span >= 29 * 200 - 150, `30 attempts over ${span.toFixed(0)} ms at 5 a second`);
      assert.deepEqual(new Set(ids('/paced')), new Set(published), 'every event, once each');

      assert.equal(at('/paused').length, 0, 'nothing pushed while paused, by either process');
      // Resumed at B: both processes push what was kept, every event.
      const resumed = await call(b.base, admin, 'PATCH', `/${paused}`, { deliveryConfig: { paused: false } });
      assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
      await until('every kept event at /paused', () => ids('/paused').length >= EVENTS, 30_000);
      await sleep(200);
      assert.deepEqual(new Set(ids('/paused')), new Set(published));
      assert.equal(ids('/paused').length, EVENTS, 'each once');
    } finally {
      await cluster.close();
      await receiver.close();
      await db.drop();
    }
  });
});
