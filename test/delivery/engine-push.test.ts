// What the engine pushes (contract §6.1-§6.3): the exact body of each event once, to every matching connector, with
// the connector's settings as they are at the attempt and the labels as they were at enqueue.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import { type Setup, setup, createConnector, publish, queueDepth } from './engine-setup.ts';

describe('happy', () => {
  let s: Setup;
  before(async () => {
    s = await setup();
  });
  after(() => s.t.close());

  it('queues in the event transaction and pushes the exact body once', async () => {
    const { t, fake, engine } = s;
    const dc = await createConnector(t, { labels: ['room', 'name', 'missing'] });
    const device = await t.createDevice({
      labels: { name: 'Meeting room 4', other: 'x', room: '4', 'virtual-sensor': '' },
    });
    const emitted = await publish(t, device, 'temperature', {
      temperature: { value: 21.5, updateTime: '2025-06-01T12:00:00.250000Z', samples: [], isBackfilled: false },
    });
    assert.equal(await queueDepth(t), 1);
    const report = await engine.runOnce();
    assert.deepEqual(report, { attempted: 1, acked: 1, failed: 0, dropped: 0 });
    assert.equal(await queueDepth(t), 0);
    const call = fake.callsTo(dc.url)[0]!;
    const expected = JSON.stringify({
      event: emitted.event,
      labels: { room: '4', name: 'Meeting room 4' },
      metadata: { deviceId: device.id, projectId: t.projectId, deviceType: 'temperature', productNumber: '102058' },
    });
    assert.equal(call.body.toString('utf8'), expected);
    assert.deepEqual(Object.keys(call.json.event), ['eventId', 'targetName', 'eventType', 'data', 'timestamp']);
    assert.deepEqual(await engine.runOnce(), { attempted: 0, acked: 0, failed: 0, dropped: 0 });
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('writes non-ASCII as UTF-8 without \\u escapes', async () => {
    const { t, fake, engine } = s;
    const dc = await createConnector(t, { labels: ['name'] });
    const device = await t.createDevice({ labels: { name: 'Büro ☕ 会議室' } });
    await publish(t, device);
    await engine.runOnce();
    const body = fake.callsTo(dc.url)[0]!.body;
    assert.ok(body.includes(Buffer.from('Büro ☕ 会議室', 'utf8')));
    assert.ok(!body.toString('utf8').includes('\\u'));
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('reads url, headers and secret at each attempt; labels are a snapshot taken at enqueue', async () => {
    const { t, fake, engine } = s;
    const dc = await createConnector(t, { labels: ['room'], httpConfig: { headers: { 'X-Old': '1' } } });
    const device = await t.createDevice({ labels: { room: 'before' } });
    await publish(t, device);
    await t.deps.store.devices.updateLabels(device.id, { room: 'after' }, nowMicros(t.deps));
    const newUrl = 'https://moved.example/hook';
    const patched = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
      body: { httpConfig: { url: newUrl, headers: { 'X-New': '2' }, signatureSecret: 's3cret' } },
    });
    assert.equal(patched.status, 200, patched.text);
    await engine.runOnce();
    const call = fake.callsTo(newUrl)[0]!;
    assert.deepEqual(call.target, { url: newUrl, headers: { 'X-New': '2' }, signatureSecret: 's3cret', probe: false });
    assert.deepEqual(call.json.labels, { room: 'before' });
    assert.equal(fake.callsTo(dc.url).length, 0);
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('applies the events filter; every matching connector gets its own copy', async () => {
    const { t, fake, engine } = s;
    const only = await createConnector(t, { events: ['temperature', 'labelsChanged'] });
    const all = await createConnector(t);
    const disabled = await createConnector(t, { status: 'USER_DISABLED' });
    const other = await createConnector(t, {}, await t.createProject('other'));
    const device = await t.createDevice();
    await publish(t, device, 'touch');
    await publish(t, device, 'temperature', {
      temperature: { value: 1, updateTime: formatTimestamp(nowMicros(t.deps)), samples: [], isBackfilled: false },
    });
    await publish(t, device, 'labelsChanged');
    await engine.runOnce();
    assert.deepEqual(
      fake
        .callsTo(only.url)
        .map((c) => c.json.event.eventType)
        .sort(),
      ['labelsChanged', 'temperature'],
    );
    assert.deepEqual(
      fake
        .callsTo(all.url)
        .map((c) => c.json.event.eventType)
        .sort(),
      ['labelsChanged', 'temperature', 'touch'],
    );
    assert.equal(fake.callsTo(disabled.url).length, 0);
    assert.equal(fake.callsTo(other.url).length, 0);
    for (const dc of [only, all, disabled])
      await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('never queues pings', async () => {
    const { t } = s;
    const dc = await createConnector(t);
    const device = await t.createDevice();
    await publish(t, device, 'ping', null);
    assert.equal(await queueDepth(t), 0);
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });
});
