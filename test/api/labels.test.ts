// Labels (contract §3.8, §4.6, §5.4): label CRUD, devices:batchUpdate, devices:transfer, and the one
// labelsChanged event each real change stores in the history.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

describe('labels', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  const deviceUrl = (d: DeviceRecord) => `/v2/projects/${d.projectId}/devices/${d.id}`;
  const nameOf = (d: DeviceRecord) => `projects/${d.projectId}/devices/${d.id}`;

  /** The device's stored events of a type, oldest first, parsed. */
  async function history(deviceId: string, eventType = 'labelsChanged'): Promise<any[]> {
    const rows = await t.deps.store.events.listByDevice({
      deviceId,
      eventTypes: [eventType],
      startTime: 0,
      endTime: Number.MAX_SAFE_INTEGER,
      limit: 1000,
    });
    return rows.reverse().map((r) => JSON.parse(r.body));
  }

  async function labelsOf(d: DeviceRecord): Promise<Record<string, string>> {
    return (await t.deps.store.devices.get(d.id))!.labels;
  }

  describe('happy', () => {
    it('POST adds a label, answers the Label and stores one labelsChanged event', async () => {
      const d = await t.createDevice();
      t.clock.advance(1000);
      const res = await t.request('POST', `${deviceUrl(d)}/labels`, { body: { key: 'room', value: '4' } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { name: `${nameOf(d)}/labels/room`, key: 'room', value: '4' });
      assert.deepEqual(await labelsOf(d), { 'virtual-sensor': '', room: '4' });
      const events = await history(d.id);
      assert.equal(events.length, 1);
      assert.deepEqual(Object.keys(events[0]), ['eventId', 'targetName', 'eventType', 'data', 'timestamp']);
      assert.equal(events[0].targetName, nameOf(d));
      assert.deepEqual(events[0].data, { added: { room: '4' }, modified: {}, removed: [] });
      assert.equal(events[0].timestamp, '2025-06-01T12:00:01.000000Z');
      // labelsChanged never shows in reported
      const got = await t.request('GET', deviceUrl(d));
      assert.ok(!('labelsChanged' in got.body.reported));
      assert.equal(got.body.labels.room, '4');
    });

    it('an absent value means ""; the Label name percent-encodes the key', async () => {
      const d = await t.createDevice();
      const res = await t.request('POST', `${deviceUrl(d)}/labels`, { body: { key: 'floor plan: A' } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { name: `${nameOf(d)}/labels/floor%20plan%3A%20A`, key: 'floor plan: A', value: '' });
    });

    it('PATCH changes the value (modified); the same value again changes nothing and emits nothing', async () => {
      const d = await t.createDevice({ labels: { 'virtual-sensor': '', room: '4' } });
      const res = await t.request('PATCH', `${deviceUrl(d)}/labels/room`, { body: { key: 'room', value: '5' } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { name: `${nameOf(d)}/labels/room`, key: 'room', value: '5' });
      const same = await t.request('PATCH', `${deviceUrl(d)}/labels/room`, { body: { value: '5' } });
      assert.equal(same.status, 200);
      const events = await history(d.id);
      assert.equal(events.length, 1);
      assert.deepEqual(events[0].data, { added: {}, modified: { room: '5' }, removed: [] });
    });

    it('PATCH with an update_mask without value changes nothing', async () => {
      const d = await t.createDevice({ labels: { room: '4' } });
      const res = await t.request('PATCH', `${deviceUrl(d)}/labels/room?update_mask=key`, {
        body: { value: 'ignored' },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.value, '4');
      assert.equal((await history(d.id)).length, 0);
    });

    it('the key in the path is percent-decoded (PATCH and DELETE)', async () => {
      const key = 'Küche näme.1';
      const d = await t.createDevice({ labels: { [key]: 'a' } });
      const path = `${deviceUrl(d)}/labels/${encodeURIComponent(key)}`;
      const patched = await t.request('PATCH', path, { body: { value: 'b' } });
      assert.equal(patched.status, 200, patched.text);
      assert.equal(patched.body.key, key);
      const deleted = await t.request('DELETE', path);
      assert.equal(deleted.status, 200);
      assert.deepEqual(await labelsOf(d), {});
    });

    it('DELETE removes the label, answers {} and stores removed', async () => {
      const d = await t.createDevice({ labels: { 'virtual-sensor': '', room: '4' } });
      const res = await t.request('DELETE', `${deviceUrl(d)}/labels/room`, {
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {});
      assert.deepEqual(await labelsOf(d), { 'virtual-sensor': '' });
      const events = await history(d.id);
      assert.deepEqual(
        events.map((e) => e.data),
        [{ added: {}, modified: {}, removed: ['room'] }],
      );
    });

    it('a device may hold exactly 100 labels', async () => {
      const labels: Record<string, string> = {};
      for (let i = 0; i < 99; i++) labels[`k${i}`] = '';
      const d = await t.createDevice({ labels });
      const res = await t.request('POST', `${deviceUrl(d)}/labels`, { body: { key: 'k99', value: '' } });
      assert.equal(res.status, 200);
      assert.equal(Object.keys(await labelsOf(d)).length, 100);
    });

    it('batchUpdate upserts and removes; one event per changed device with the right diff; no-ops emit nothing', async () => {
      const a = await t.createDevice({ labels: { room: '1', old: 'x' } });
      const b = await t.createDevice({ labels: { room: '2' } });
      const c = await t.createDevice({ labels: { room: '3', floor: '1' } }); // already as requested: no change
      const res = await t.request('POST', `/v2/projects/${t.projectId}/devices:batchUpdate`, {
        body: {
          devices: [nameOf(a), b.id, nameOf(c), nameOf(a)],
          addLabels: { room: '3', floor: '1' },
          removeLabels: ['old', 'missing'],
        },
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { batchErrors: [] });
      assert.deepEqual(await labelsOf(a), { room: '3', floor: '1' });
      assert.deepEqual(await labelsOf(b), { room: '3', floor: '1' });
      assert.deepEqual(
        (await history(a.id)).map((e) => e.data),
        [{ added: { floor: '1' }, modified: { room: '3' }, removed: ['old'] }],
      );
      assert.deepEqual(
        (await history(b.id)).map((e) => e.data),
        [{ added: { floor: '1' }, modified: { room: '3' }, removed: [] }],
      );
      assert.equal((await history(c.id)).length, 0);
    });

    it('batchUpdate with only removeLabels, via the encoded verb', async () => {
      const a = await t.createDevice({ labels: { room: '1' } });
      const res = await t.request('POST', `/v2/projects/${t.projectId}/devices%3AbatchUpdate`, {
        body: { devices: [nameOf(a)], removeLabels: ['room'] },
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { batchErrors: [] });
      assert.deepEqual(await labelsOf(a), {});
    });

    it('transfer moves labels, reported and history, emits no labelsChanged, and answers the names as sent', async () => {
      const target = await t.createProject();
      const d = await t.createDevice({
        labels: { room: '1' },
        reported: { touch: { updateTime: '2025-06-01T12:00:00.000000Z' } },
      });
      await t.request('POST', `${deviceUrl(d)}/labels`, { body: { key: 'a', value: 'b' } });
      const before = await history(d.id);
      assert.equal(before.length, 1);
      const res = await t.request('POST', `/v2/projects/${target}/devices:transfer`, {
        body: { devices: [nameOf(d)] },
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { transferredDevices: [nameOf(d)], transferErrors: [] });
      const moved = await t.request('GET', `/v2/projects/${target}/devices/${d.id}`);
      assert.equal(moved.status, 200);
      assert.equal(moved.body.name, `projects/${target}/devices/${d.id}`);
      assert.deepEqual(moved.body.labels, { room: '1', a: 'b' });
      assert.deepEqual(moved.body.reported.touch, { updateTime: '2025-06-01T12:00:00.000000Z' });
      assert.equal((await t.request('GET', deviceUrl(d))).status, 404); // gone from the source
      // The history is served under the target, as it was stored (the body's targetName names the source, where
      // the event happened), and the transfer added no event.
      const served = await t.request(
        'GET',
        `/v2/projects/${target}/devices/${d.id}/events?pageSize=1000&startTime=2000-01-01T00:00:00Z`,
      );
      assert.equal(served.status, 200, served.text);
      assert.deepEqual(served.body.events, before.reverse());
      // A device already in the target (a retried call) counts as transferred.
      const again = await t.request('POST', `/v2/projects/${target}/devices:transfer`, {
        body: { devices: [nameOf(d), d.id] },
      });
      assert.deepEqual(again.body, { transferredDevices: [nameOf(d), d.id], transferErrors: [] });
    });
  });

  describe('errors', () => {
    it('POST of an existing key is 409 and emits nothing', async () => {
      const d = await t.createDevice({ labels: { room: '4' } });
      const res = await t.request('POST', `${deviceUrl(d)}/labels`, { body: { key: 'room', value: '5' } });
      assert.equal(res.status, 409);
      assert.equal((await labelsOf(d)).room, '4');
      assert.equal((await history(d.id)).length, 0);
    });

    it('invalid keys and values are 400', async () => {
      const d = await t.createDevice();
      const bad: Array<[unknown, unknown]> = [
        ['', 'x'],
        ['a=b', 'x'],
        ['a/b', 'x'],
        ['a\nb', 'x'],
        ['a\u0000', 'x'],
        ['k'.repeat(129), 'x'],
        ['ok', 'v'.repeat(1025)],
        [5, 'x'],
        ['ok', 5],
      ];
      for (const [key, value] of bad) {
        const res = await t.request('POST', `${deviceUrl(d)}/labels`, { body: { key, value } });
        assert.equal(res.status, 400, JSON.stringify(key));
      }
      const missing = await t.request('POST', `${deviceUrl(d)}/labels`, { body: { value: 'x' } });
      assert.equal(missing.status, 400);
      const limits = await t.request('POST', `${deviceUrl(d)}/labels`, {
        body: { key: 'é'.repeat(128), value: 'v'.repeat(1024) },
      });
      assert.equal(limits.status, 200);
      assert.equal((await history(d.id)).length, 1);
    });

    it('the 101st label is refused', async () => {
      const labels: Record<string, string> = {};
      for (let i = 0; i < 100; i++) labels[`k${i}`] = '';
      const d = await t.createDevice({ labels });
      const res = await t.request('POST', `${deviceUrl(d)}/labels`, { body: { key: 'one-more', value: '' } });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'Max labels reached for device.');
    });

    it('PATCH and DELETE of an absent key are 404; a different key in the body is 400', async () => {
      const d = await t.createDevice({ labels: { room: '4' } });
      assert.equal((await t.request('PATCH', `${deviceUrl(d)}/labels/nope`, { body: { value: 'x' } })).status, 404);
      assert.equal((await t.request('DELETE', `${deviceUrl(d)}/labels/nope`)).status, 404);
      assert.equal(
        (await t.request('PATCH', `${deviceUrl(d)}/labels/room`, { body: { key: 'other', value: 'x' } })).status,
        400,
      );
      assert.equal(
        (await t.request('PATCH', `${deviceUrl(d)}/labels/room`, { body: { value: 'v'.repeat(1025) } })).status,
        400,
      );
      assert.equal(
        (await t.request('PATCH', `${deviceUrl(d)}/labels/room?updateMask=colour`, { body: { value: 'x' } })).status,
        400,
      );
      assert.equal((await history(d.id)).length, 0);
    });

    it('labels of an unknown device, or of a device in another project, are 404; "-" is 400', async () => {
      const elsewhere = await t.createDevice({ projectId: await t.createProject() });
      for (const url of [
        `/v2/projects/${t.projectId}/devices/nothing/labels`,
        `/v2/projects/${t.projectId}/devices/${elsewhere.id}/labels`,
      ]) {
        assert.equal((await t.request('POST', url, { body: { key: 'a', value: 'b' } })).status, 404, url);
      }
      assert.equal(
        (await t.request('POST', `/v2/projects/-/devices/${elsewhere.id}/labels`, { body: { key: 'a', value: 'b' } }))
          .status,
        400,
      );
      assert.equal(
        (
          await t.request('POST', '/v2/projects/-/devices:batchUpdate', {
            body: { devices: [elsewhere.id], addLabels: { a: 'b' } },
          })
        ).status,
        400,
      );
      assert.equal(
        (await t.request('POST', '/v2/projects/-/devices:transfer', { body: { devices: [elsewhere.id] } })).status,
        400,
      );
    });

    it('batchUpdate request errors are 400', async () => {
      const d = await t.createDevice();
      const url = `/v2/projects/${t.projectId}/devices:batchUpdate`;
      for (const body of [
        { devices: [], addLabels: { a: 'b' } },
        { devices: [nameOf(d)] },
        { addLabels: { a: 'b' } },
        { devices: [nameOf(d)], addLabels: { a: 'b' }, removeLabels: ['a'] },
        { devices: [nameOf(d)], addLabels: { a: 5 } },
        { devices: [nameOf(d)], addLabels: null, removeLabels: null },
      ]) {
        const res = await t.request('POST', url, { body });
        assert.equal(res.status, 400, JSON.stringify(body));
      }
      assert.equal((await t.request('POST', url)).status, 400);
      assert.equal((await history(d.id)).length, 0);
    });

    it('batchUpdate per-device errors: NOT_FOUND, INVALID_ARGUMENT, max labels; the others still change', async () => {
      const ok = await t.createDevice({ labels: {} });
      const elsewhere = await t.createDevice({ projectId: await t.createProject() });
      const full: Record<string, string> = {};
      for (let i = 0; i < 100; i++) full[`k${i}`] = '';
      const crowded = await t.createDevice({ labels: full });
      const url = `/v2/projects/${t.projectId}/devices:batchUpdate`;
      const res = await t.request('POST', url, {
        body: {
          devices: [nameOf(ok), nameOf(elsewhere), `projects/${t.projectId}/devices/nothing`, nameOf(crowded), 'a/b'],
          addLabels: { new: 'x' },
        },
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.batchErrors, [
        { device: nameOf(elsewhere), status: { code: 'NOT_FOUND', message: 'device not found' } },
        {
          device: `projects/${t.projectId}/devices/nothing`,
          status: { code: 'NOT_FOUND', message: 'device not found' },
        },
        { device: nameOf(crowded), status: { code: 'INVALID_ARGUMENT', message: 'Max labels reached for device.' } },
        {
          device: 'a/b',
          status: { code: 'INVALID_ARGUMENT', message: 'device must be of the form projects/{p}/devices/{d}' },
        },
      ]);
      assert.deepEqual(await labelsOf(ok), { new: 'x' });
      assert.equal(Object.keys(await labelsOf(crowded)).length, 100);
      assert.equal((await history(ok.id)).length, 1);
      assert.equal((await history(crowded.id)).length, 0);
      // Upserting an existing key on a full device is fine.
      const upsert = await t.request('POST', url, { body: { devices: [nameOf(crowded)], addLabels: { k1: 'v' } } });
      assert.deepEqual(upsert.body, { batchErrors: [] });

      const badKey = await t.request('POST', url, { body: { devices: [nameOf(ok)], addLabels: { 'a=b': 'x' } } });
      assert.equal(badKey.body.batchErrors.length, 1);
      assert.equal(badKey.body.batchErrors[0].status.code, 'INVALID_ARGUMENT');
      assert.match(badKey.body.batchErrors[0].status.message, /=/);
    });

    it('transfer: unknown target 404; per-device NOT_FOUND and INVALID_ARGUMENT', async () => {
      const d = await t.createDevice();
      assert.equal(
        (
          await t.request('POST', '/v2/projects/cvq2b1b0l4l9s3f2a9g0/devices:transfer', {
            body: { devices: [nameOf(d)] },
          })
        ).status,
        404,
      );
      const target = await t.createProject();
      assert.equal(
        (await t.request('POST', `/v2/projects/${target}/devices:transfer`, { body: { devices: [] } })).status,
        400,
      );
      const res = await t.request('POST', `/v2/projects/${target}/devices:transfer`, {
        body: {
          devices: [
            `projects/${t.projectId}/devices/nothing`,
            `projects/cvq2b1b0l4l9s3f2a9g0/devices/${d.id}`,
            'nothing',
            'x/y',
          ],
        },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.transferredDevices, []);
      assert.deepEqual(
        res.body.transferErrors.map((e: any) => [e.device, e.status.code]),
        [
          [`projects/${t.projectId}/devices/nothing`, 'NOT_FOUND'],
          [`projects/cvq2b1b0l4l9s3f2a9g0/devices/${d.id}`, 'NOT_FOUND'],
          ['nothing', 'NOT_FOUND'],
          ['x/y', 'INVALID_ARGUMENT'],
        ],
      );
      assert.equal((await t.deps.store.devices.get(d.id))!.projectId, t.projectId);
    });
  });

  describe('security', () => {
    it('a project user can read but not write labels (403); a non-member gets 404', async () => {
      const projectId = await t.createProject();
      const d = await t.createDevice({ projectId, labels: { room: '1' } });
      const user = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: projectId });
      assert.equal((await t.request('GET', deviceUrl(d), { auth: user.auth })).status, 200);
      assert.equal(
        (await t.request('POST', `${deviceUrl(d)}/labels`, { auth: user.auth, body: { key: 'a', value: 'b' } })).status,
        403,
      );
      assert.equal(
        (await t.request('PATCH', `${deviceUrl(d)}/labels/room`, { auth: user.auth, body: { value: 'b' } })).status,
        403,
      );
      assert.equal((await t.request('DELETE', `${deviceUrl(d)}/labels/room`, { auth: user.auth })).status, 403);
      assert.equal(
        (
          await t.request('POST', `/v2/projects/${projectId}/devices:batchUpdate`, {
            auth: user.auth,
            body: { devices: [d.id], addLabels: { a: 'b' } },
          })
        ).status,
        403,
      );
      const stranger = await t.createServiceAccount({
        roles: ['roles/project.admin'],
        memberOf: await t.createProject(),
      });
      assert.equal(
        (await t.request('POST', `${deviceUrl(d)}/labels`, { auth: stranger.auth, body: { key: 'a', value: 'b' } }))
          .status,
        404,
      );
      assert.equal((await t.request('DELETE', `${deviceUrl(d)}/labels/room`, { auth: stranger.auth })).status, 404);
      assert.equal(
        (
          await t.request('POST', `/v2/projects/${projectId}/devices:batchUpdate`, {
            auth: stranger.auth,
            body: { devices: [d.id], addLabels: { a: 'b' } },
          })
        ).status,
        404,
      );
      assert.deepEqual(await labelsOf(d), { room: '1' });
      assert.equal((await history(d.id)).length, 0);
    });

    it('a project developer can write labels', async () => {
      const projectId = await t.createProject();
      const d = await t.createDevice({ projectId });
      const dev = await t.createServiceAccount({ roles: ['roles/project.developer'], memberOf: projectId });
      assert.equal(
        (await t.request('POST', `${deviceUrl(d)}/labels`, { auth: dev.auth, body: { key: 'a', value: 'b' } })).status,
        200,
      );
    });

    it('batchUpdate cannot reach devices of another project, even one the caller administers', async () => {
      const d = await t.createDevice({ projectId: await t.createProject() });
      const res = await t.request('POST', `/v2/projects/${t.projectId}/devices:batchUpdate`, {
        body: { devices: [nameOf(d)], addLabels: { a: 'b' } },
      });
      assert.equal(res.body.batchErrors[0].status.code, 'NOT_FOUND');
      assert.deepEqual(await labelsOf(d), d.labels);
    });

    it('transfer needs device.transfer on the target (403) and on each source (PERMISSION_DENIED, NOT_FOUND)', async () => {
      const target = await t.createProject();
      const devSource = await t.createProject();
      const hiddenSource = await t.createProject();
      const caller = await t.createServiceAccount({ roles: ['roles/project.admin'], memberOf: target });
      await t.deps.store.memberships.create({
        scopeType: 'project',
        scopeId: devSource,
        memberId: caller.id,
        accountType: 'SERVICE_ACCOUNT',
        roles: ['roles/project.developer'],
        status: 'ACCEPTED',
        createTime: 0,
      });
      const a = await t.createDevice({ projectId: devSource });
      const b = await t.createDevice({ projectId: hiddenSource });
      const res = await t.request('POST', `/v2/projects/${target}/devices:transfer`, {
        auth: caller.auth,
        body: { devices: [nameOf(a), nameOf(b)] },
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.transferredDevices, []);
      assert.deepEqual(
        res.body.transferErrors.map((e: any) => [e.device, e.status.code]),
        [
          [nameOf(a), 'PERMISSION_DENIED'],
          [nameOf(b), 'NOT_FOUND'],
        ],
      );
      assert.equal((await t.deps.store.devices.get(a.id))!.projectId, devSource);
      assert.equal((await t.deps.store.devices.get(b.id))!.projectId, hiddenSource);
      // A developer on the target lacks device.transfer: 403; a stranger: 404.
      const dev = await t.createServiceAccount({ roles: ['roles/project.developer'], memberOf: target });
      assert.equal(
        (
          await t.request('POST', `/v2/projects/${target}/devices:transfer`, {
            auth: dev.auth,
            body: { devices: [nameOf(a)] },
          })
        ).status,
        403,
      );
      const stranger = await t.createServiceAccount({ roles: ['roles/project.admin'], memberOf: devSource });
      assert.equal(
        (
          await t.request('POST', `/v2/projects/${target}/devices:transfer`, {
            auth: stranger.auth,
            body: { devices: [nameOf(a)] },
          })
        ).status,
        404,
      );
    });
  });
});
