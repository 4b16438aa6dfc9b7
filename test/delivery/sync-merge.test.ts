// `:sync` merged into one still queued (delivery/sync.ts, docs/data-connectors.md): repeated calls answer 200 {} at
// once but queue the latest events once, until the first call's rows are gone or the connector's filter or labels
// change; with several processes on PostgreSQL too. No engine runs here: queued rows stay queued.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { formatTimestamp } from '../../src/domain/time.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { openSecondProcess } from '../helpers/second-process.ts';

const DEVICES = 30;
/** Two event types per device: the latest of each is queued by a full :sync. */
const FULL = DEVICES * 2;

let t: TestContext;
let project: string;
before(async () => {
  t = await createTestContext();
  project = await t.createProject('sync');
  for (let i = 0; i < DEVICES; i++) {
    const device = await t.createDevice({
      projectId: project,
      type: 'touch',
      productNumber: '100110',
      labels: { room: `r${i}` },
    });
    for (const type of ['touch', 'networkStatus', 'touch']) {
      const fresh = (await t.deps.store.devices.get(device.id))!;
      const ts = nowMicros(t.deps);
      const data =
        type === 'touch'
          ? { touch: { updateTime: formatTimestamp(ts) } }
          : { networkStatus: { signalStrength: 80, rssi: -60, updateTime: formatTimestamp(ts) } };
      await t.deps.events.transaction((_tx, emit) => emit(fresh, type, data, ts));
      t.clock.advance(1);
    }
  }
});
after(() => t.close());

/** A connector made after the events: its queue holds only what :sync puts there. */
async function connector(body: Record<string, unknown> = {}): Promise<string> {
  const res = await t.request('POST', `/v2/projects/${project}/dataconnectors`, {
    body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://receiver.example/hook' }, ...body },
  });
  assert.equal(res.status, 200, res.text);
  return res.body.name.split('/')[3];
}
const sync = async (dc: string) => {
  const res = await t.request('POST', `/v2/projects/${project}/dataconnectors/${dc}:sync`);
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body, {});
};
const queued = () => t.deps.store.deliveries.count();

describe(':sync while an earlier one is still queued', () => {
  it('10 calls queue no more rows than 1, one after another or all at once', async () => {
    const dc = await connector();
    const before = await queued();
    await sync(dc);
    assert.equal((await queued()) - before, FULL);
    for (let i = 0; i < 5; i++) await sync(dc);
    await Promise.all(Array.from({ length: 4 }, () => sync(dc)));
    assert.equal((await queued()) - before, FULL);
  });

  it('merges while any row of the first is left; once they are all gone, queues in full again', async () => {
    const dc = await connector();
    const before = await queued();
    await sync(dc);
    // Delivered, all but one (the engine deletes a row once its push is acknowledged).
    assert.equal(await t.deps.store.deliveries.deleteByConnector(dc, FULL - 1), FULL - 1);
    await sync(dc);
    assert.equal((await queued()) - before, 1);
    await t.deps.store.deliveries.deleteByConnector(dc, 1);
    await sync(dc);
    assert.equal((await queued()) - before, FULL);
  });

  it('a changed event filter or labels makes the next :sync queue in full; the same again merges', async () => {
    const dc = await connector();
    const before = await queued();
    await sync(dc);
    const patch = async (body: Record<string, unknown>) =>
      assert.equal((await t.request('PATCH', `/v2/projects/${project}/dataconnectors/${dc}`, { body })).status, 200);
    await patch({ labels: ['room'] });
    await sync(dc);
    await sync(dc);
    assert.equal((await queued()) - before, 2 * FULL);
    await patch({ events: ['touch'] });
    await sync(dc);
    await sync(dc);
    assert.equal((await queued()) - before, 2 * FULL + DEVICES);
  });

  it('each connector has its own: another connector of the project is synchronised in full', async () => {
    const [a, b] = [await connector(), await connector()];
    const before = await queued();
    await sync(a);
    await sync(b);
    await sync(a);
    assert.equal((await queued()) - before, 2 * FULL);
  });

  it('two processes sharing the database merge too (PostgreSQL)', async (ctx) => {
    if (t.deps.store.exclusive) {
      ctx.skip('one process owns a SQLite store');
      return;
    }
    const other = await openSecondProcess(t);
    try {
      const dc = await connector();
      const before = await queued();
      const [keyId, secret] = (t.admin as { basic: [string, string] }).basic;
      const basic = { authorization: `Basic ${Buffer.from(`${keyId}:${secret}`).toString('base64')}` };
      const url = `/v2/projects/${project}/dataconnectors/${dc}:sync`;
      const answers = await Promise.all([
        ...Array.from({ length: 5 }, () => other.request('POST', url, basic)),
        ...Array.from({ length: 5 }, () => t.request('POST', url)),
      ]);
      assert.deepEqual(
        answers.map((r) => r.status),
        Array(10).fill(200),
      );
      assert.equal((await queued()) - before, FULL);
    } finally {
      await other.close();
    }
  });
});
