// Device reads (contract §3.7, §4.6, §1.5, §1.10): get, list filters, order_by, keyset paging, the wildcard project.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

const idOf = (d: { name: string }) => d.name.split('/').pop()!;

describe('devices', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  /** A fresh project with these devices (created in order, so ids ascend). */
  async function projectWith(
    specs: Array<Partial<DeviceRecord>>,
  ): Promise<{ projectId: string; devices: DeviceRecord[] }> {
    const projectId = await t.createProject();
    const devices: DeviceRecord[] = [];
    for (const s of specs) devices.push(await t.createDevice({ projectId, ...s }));
    return { projectId, devices };
  }

  async function listIds(url: string): Promise<string[]> {
    const res = await t.request('GET', url);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.nextPageToken, '');
    return res.body.devices.map(idOf);
  }

  /** Every page of a list, following nextPageToken (bounded). */
  async function allPages(url: string): Promise<{ ids: string[]; pages: number }> {
    const ids: string[] = [];
    let token = '';
    for (let pages = 1; pages <= 50; pages++) {
      const sep = url.includes('?') ? '&' : '?';
      const res = await t.request('GET', `${url}${sep}pageToken=${token}`);
      assert.equal(res.status, 200, res.text);
      ids.push(...res.body.devices.map(idOf));
      token = res.body.nextPageToken;
      if (token === '') return { ids, pages };
    }
    throw new Error('too many pages');
  }

  describe('happy', () => {
    it('gets a device with the §3.7 shape and key order', async () => {
      const {
        projectId,
        devices: [d],
      } = await projectWith([
        {
          labels: { name: 'Room 4', 'virtual-sensor': '' },
          reported: {
            temperature: { value: 21.5, updateTime: '2025-06-01T12:00:00.000000Z', samples: [], isBackfilled: false },
          },
        },
      ]);
      const res = await t.request('GET', `/v2/projects/${projectId}/devices/${d!.id}`);
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.body), ['name', 'type', 'productNumber', 'labels', 'reported']);
      assert.equal(res.body.name, `projects/${projectId}/devices/${d!.id}`);
      assert.equal(res.body.productNumber, '102058');
      assert.deepEqual(res.body.labels, { name: 'Room 4', 'virtual-sensor': '' });
      assert.deepEqual(Object.keys(res.body.reported), ['temperature', 'touch', 'networkStatus', 'batteryStatus']);
      assert.equal(res.body.reported.temperature.value, 21.5);
      assert.equal(res.body.reported.touch, null);
    });

    it('an empty project lists no devices with nextPageToken ""', async () => {
      const { projectId } = await projectWith([]);
      const res = await t.request('GET', `/v2/projects/${projectId}/devices?pageToken=`);
      assert.deepEqual(res.body, { devices: [], nextPageToken: '' });
    });

    it('filters by ids, types and product numbers, in both spellings, ORed within and ANDed across', async () => {
      const {
        projectId,
        devices: [a, b, c, d],
      } = await projectWith([
        { type: 'temperature', productNumber: '102058' },
        { type: 'humidity', productNumber: '101895' },
        { type: 'temperature', productNumber: '102067' },
        { type: 'touch', productNumber: '100110' },
      ]);
      const base = `/v2/projects/${projectId}/devices`;
      assert.deepEqual(await listIds(`${base}?device_ids=${a!.id}&deviceIds=${c!.id}`), [a!.id, c!.id]);
      assert.deepEqual(await listIds(`${base}?device_types=temperature`), [a!.id, c!.id]);
      assert.deepEqual(await listIds(`${base}?deviceTypes=humidity&device_types=touch`), [b!.id, d!.id]);
      assert.deepEqual(await listIds(`${base}?product_numbers=102067`), [c!.id]);
      assert.deepEqual(await listIds(`${base}?productNumbers=101895&productNumbers=100110`), [b!.id, d!.id]);
      assert.deepEqual(
        await listIds(`${base}?device_types=temperature&product_numbers=102067&product_numbers=101895`),
        [c!.id],
      );
      assert.deepEqual(await listIds(`${base}?device_types=temperature&device_ids=${b!.id}`), []);
      assert.deepEqual(await listIds(`${base}?device_ids=nothing`), []);
    });

    it('label_filters: key=value exact, key or key= present; all must hold', async () => {
      const {
        projectId,
        devices: [a, b, c],
      } = await projectWith([
        { labels: { room: '4', floor: '1' } },
        { labels: { room: '5', floor: '' } },
        { labels: { desk: 'x' } },
      ]);
      const base = `/v2/projects/${projectId}/devices`;
      assert.deepEqual(await listIds(`${base}?label_filters=room%3D4`), [a!.id]);
      assert.deepEqual(await listIds(`${base}?labelFilters=room`), [a!.id, b!.id]);
      assert.deepEqual(await listIds(`${base}?label_filters=floor%3D`), [a!.id, b!.id]);
      assert.deepEqual(await listIds(`${base}?label_filters=room&labelFilters=floor%3D1`), [a!.id]);
      assert.deepEqual(await listIds(`${base}?label_filters=room%3D5&label_filters=desk`), []);
      assert.deepEqual(await listIds(`${base}?label_filters=desk%3Dx`), [c!.id]);
      assert.deepEqual(await listIds(`${base}?label_filters=room%3D4%3D`), []); // the value is "4="
    });

    it('query is a case-insensitive substring of id, type, label key or value', async () => {
      const {
        projectId,
        devices: [a, b, c, d],
      } = await projectWith([
        { type: 'humidity', labels: {} },
        { type: 'touch', labels: { Küche: '' } },
        { type: 'touch', labels: { name: 'Meeting ROOM 4' } },
        { type: 'touch', labels: {} },
      ]);
      const base = `/v2/projects/${projectId}/devices`;
      assert.deepEqual(await listIds(`${base}?query=HUMID`), [a!.id]);
      assert.deepEqual(await listIds(`${base}?query=${encodeURIComponent('KÜCHE')}`), [b!.id]);
      assert.deepEqual(await listIds(`${base}?query=room%204`), [c!.id]);
      assert.deepEqual(await listIds(`${base}?query=${d!.id.slice(-10).toUpperCase()}`), [d!.id]);
      assert.deepEqual(
        await listIds(`${base}?query=touch&device_ids=${b!.id}&device_ids=${c!.id}&label_filters=name`),
        [c!.id],
      );
    });

    it('order_by: id and name, descending, type, productNumber', async () => {
      const {
        projectId,
        devices: [a, b, c],
      } = await projectWith([
        { type: 'touch', productNumber: '2' },
        { type: 'humidity', productNumber: '3' },
        { type: 'touch', productNumber: '1' },
      ]);
      const base = `/v2/projects/${projectId}/devices`;
      assert.deepEqual(await listIds(`${base}?order_by=name`), [a!.id, b!.id, c!.id]);
      assert.deepEqual(await listIds(`${base}?orderBy=-id`), [c!.id, b!.id, a!.id]);
      assert.deepEqual(await listIds(`${base}?order_by=type`), [b!.id, a!.id, c!.id]); // ties on id
      assert.deepEqual(await listIds(`${base}?order_by=-type`), [a!.id, c!.id, b!.id]); // ties still ascending id
      assert.deepEqual(await listIds(`${base}?order_by=productNumber`), [c!.id, a!.id, b!.id]);
      assert.deepEqual(await listIds(`${base}?order_by=-productNumber`), [b!.id, a!.id, c!.id]);
    });

    it('order_by labels.<key> and reported.<type>.<field>: missing values sort last in both directions', async () => {
      const temp = (value: number) => ({
        temperature: { value, updateTime: '2025-06-01T12:00:00.000000Z', samples: [], isBackfilled: false },
      });
      const {
        projectId,
        devices: [a, b, c, d],
      } = await projectWith([
        { labels: { room: 'b', 'a.b': '2' }, reported: temp(21.5) },
        { labels: {}, reported: {} },
        { labels: { room: 'a', 'a.b': '1' }, reported: temp(-3) },
        { labels: { room: 'c' }, reported: temp(100) },
      ]);
      const base = `/v2/projects/${projectId}/devices`;
      assert.deepEqual(await listIds(`${base}?order_by=labels.room`), [c!.id, a!.id, d!.id, b!.id]);
      assert.deepEqual(await listIds(`${base}?order_by=-labels.room`), [d!.id, a!.id, c!.id, b!.id]);
      assert.deepEqual(await listIds(`${base}?order_by=labels.a.b`), [c!.id, a!.id, b!.id, d!.id]); // keys may contain dots
      assert.deepEqual(await listIds(`${base}?order_by=reported.temperature.value`), [c!.id, a!.id, d!.id, b!.id]);
      assert.deepEqual(await listIds(`${base}?order_by=-reported.temperature.value`), [d!.id, a!.id, c!.id, b!.id]);
      assert.deepEqual(await listIds(`${base}?order_by=reported.humidity.temperature`), [a!.id, b!.id, c!.id, d!.id]); // all missing
    });

    it('pages through 25 devices, 7 at a time, in every order without repeats or gaps', async () => {
      const specs: Array<Partial<DeviceRecord>> = [];
      for (let i = 0; i < 25; i++) {
        // Few distinct values (ties), and every fifth device lacks the label and the reported value.
        specs.push(
          i % 5 === 4
            ? { labels: {} }
            : {
                labels: { n: String(i % 3) },
                reported: { batteryStatus: { percentage: i % 4, updateTime: '2025-06-01T12:00:00.000000Z' } },
              },
        );
      }
      const { projectId, devices } = await projectWith(specs);
      const base = `/v2/projects/${projectId}/devices?pageSize=7`;
      const byId = [...devices].map((d) => d.id);
      const sortBy = (value: (d: DeviceRecord) => string | number | undefined, desc = false) =>
        [...devices]
          .sort((x, y) => {
            const vx = value(x),
              vy = value(y);
            if (vx === undefined || vy === undefined) {
              if (vx !== vy) return vx === undefined ? 1 : -1;
            } else if (vx !== vy) return (vx < vy ? -1 : 1) * (desc ? -1 : 1);
            return x.id < y.id ? -1 : 1;
          })
          .map((d) => d.id);
      const label = (d: DeviceRecord) => d.labels.n;
      const battery = (d: DeviceRecord) => (d.reported.batteryStatus as { percentage: number } | undefined)?.percentage;
      const cases: Array<[string, string[]]> = [
        ['', byId],
        ['&order_by=-id', [...byId].reverse()],
        ['&order_by=labels.n', sortBy(label)],
        ['&order_by=-labels.n', sortBy(label, true)],
        ['&order_by=reported.batteryStatus.percentage', sortBy(battery)],
        ['&order_by=-reported.batteryStatus.percentage', sortBy(battery, true)],
      ];
      for (const [suffix, expected] of cases) {
        const { ids, pages } = await allPages(`${base}${suffix}`);
        assert.deepEqual(ids, expected, suffix);
        assert.equal(pages, 4, suffix);
      }
    });

    it('a page ends exactly at the last item with nextPageToken ""', async () => {
      const { projectId } = await projectWith([{}, {}]);
      const first = await t.request('GET', `/v2/projects/${projectId}/devices?page_size=1`);
      assert.notEqual(first.body.nextPageToken, '');
      const second = await t.request(
        'GET',
        `/v2/projects/${projectId}/devices?page_size=1&page_token=${first.body.nextPageToken}`,
      );
      assert.equal(second.body.devices.length, 1);
      assert.equal(second.body.nextPageToken, '');
    });

    it('keyset paging does not repeat or skip when devices are added between pages', async () => {
      const { projectId, devices } = await projectWith([{}, {}, {}]);
      const first = await t.request('GET', `/v2/projects/${projectId}/devices?pageSize=2`);
      const added = await t.createDevice({ projectId });
      const second = await t.request(
        'GET',
        `/v2/projects/${projectId}/devices?pageSize=2&pageToken=${first.body.nextPageToken}`,
      );
      assert.deepEqual([...first.body.devices, ...second.body.devices].map(idOf), [
        ...devices.map((d) => d.id),
        added.id,
      ]);
    });

    it('wildcard "-": organization, projects (names or bare ids), and both narrowing each other', async () => {
      const p1 = await projectWith([{}]);
      const p2 = await projectWith([{}]);
      const other = await otherOrganizationProject();
      const byOrg = await allPages(
        `/v2/projects/-/devices?organization=organizations/${t.organizationId}&pageSize=1000`,
      );
      assert.ok(byOrg.ids.includes(p1.devices[0]!.id) && byOrg.ids.includes(p2.devices[0]!.id));
      assert.ok(!byOrg.ids.includes(other.deviceId));
      assert.deepEqual(byOrg.ids, [...byOrg.ids].sort());
      assert.deepEqual(
        await listIds(`/v2/projects/-/devices?projects=projects/${p1.projectId}&projects=${p2.projectId}`),
        [p1.devices[0]!.id, p2.devices[0]!.id],
      );
      assert.deepEqual(
        await listIds(`/v2/projects/-/devices?projects=${p2.projectId}&organization=organizations/${t.organizationId}`),
        [p2.devices[0]!.id],
      );
      // A project outside the organization is narrowed away; the bootstrap admin is not in the other organization.
      assert.deepEqual(
        await listIds(`/v2/projects/-/devices?projects=${other.projectId}&organization=${t.organizationId}`),
        [],
      );
      // The name carries the real project.
      const res = await t.request('GET', `/v2/projects/-/devices?projects=${p1.projectId}`);
      assert.equal(res.body.devices[0].name, `projects/${p1.projectId}/devices/${p1.devices[0]!.id}`);
    });

    it('GET /projects/-/devices/{d} finds the device in its real project', async () => {
      const {
        projectId,
        devices: [d],
      } = await projectWith([{}]);
      const res = await t.request('GET', `/v2/projects/-/devices/${d!.id}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.name, `projects/${projectId}/devices/${d!.id}`);
    });

    it('the wildcard list pages across projects', async () => {
      const p1 = await projectWith([{}, {}, {}]);
      const p2 = await projectWith([{}, {}]);
      const { ids, pages } = await allPages(
        `/v2/projects/-/devices?projects=${p1.projectId}&projects=${p2.projectId}&pageSize=2&order_by=-id`,
      );
      assert.deepEqual(
        ids,
        [...p1.devices, ...p2.devices]
          .map((d) => d.id)
          .sort()
          .reverse(),
      );
      assert.equal(pages, 3);
    });
  });

  /** A project (with one device) in an organization the bootstrap admin has nothing in. */
  async function otherOrganizationProject(): Promise<{ organizationId: string; projectId: string; deviceId: string }> {
    const organizationId = t.deps.ids.next();
    const now = nowMicros(t.deps);
    await t.deps.store.organizations.create({ id: organizationId, displayName: 'Other', createTime: now });
    const projectId = t.deps.ids.next();
    await t.deps.store.projects.create({
      id: projectId,
      organizationId,
      displayName: 'Other project',
      location: { latitude: null, longitude: null, timeLocation: '' },
      labels: {},
      createTime: now,
      updateTime: now,
    });
    const device = await t.createDevice({ projectId });
    return { organizationId, projectId, deviceId: device.id };
  }

  describe('errors', () => {
    it('an unknown or incomplete order_by is 400', async () => {
      for (const o of [
        'createTime',
        '-foo',
        'labels',
        'labels.',
        'reported',
        'reported.temperature',
        'reported.temperature.',
        'reported.a-b.c',
        'name.x',
      ]) {
        const res = await t.request('GET', `/v2/projects/${t.projectId}/devices?order_by=${encodeURIComponent(o)}`);
        assert.equal(res.status, 400, o);
        assert.match(res.body.error, /order_by/);
      }
    });

    it('a token reused with different filters or order, or a garbage token, is 400', async () => {
      const { projectId } = await projectWith([{ labels: { a: '1' } }, { labels: { a: '2' } }]);
      const base = `/v2/projects/${projectId}/devices?pageSize=1`;
      const first = await t.request('GET', `${base}&order_by=labels.a`);
      const token = first.body.nextPageToken;
      assert.notEqual(token, '');
      assert.equal((await t.request('GET', `${base}&order_by=labels.a&pageToken=${token}`)).status, 200);
      for (const changed of [
        '&order_by=-labels.a',
        '',
        '&order_by=labels.a&device_types=touch',
        '&order_by=labels.a&query=x',
      ]) {
        const res = await t.request('GET', `${base}${changed}&pageToken=${token}`);
        assert.equal(res.status, 400, changed);
        assert.match(res.body.error, /pageToken/);
      }
      const garbage = await t.request('GET', `${base}&pageToken=not-a-token`);
      assert.equal(garbage.status, 400);
    });

    it('bad pageSize is 400', async () => {
      for (const size of ['-1', '1.5', 'x']) {
        const res = await t.request('GET', `/v2/projects/${t.projectId}/devices?pageSize=${size}`);
        assert.equal(res.status, 400, size);
      }
    });

    it('a label filter without a key is 400', async () => {
      const res = await t.request('GET', `/v2/projects/${t.projectId}/devices?label_filters=%3Dx`);
      assert.equal(res.status, 400);
    });

    it('the wildcard list needs organization or projects', async () => {
      const res = await t.request('GET', '/v2/projects/-/devices');
      assert.equal(res.status, 400);
      assert.match(res.body.error, /organization/);
      const bad = await t.request('GET', '/v2/projects/-/devices?organization=projects/x');
      assert.equal(bad.status, 400);
    });

    it('unknown devices and devices of another project are 404', async () => {
      const {
        devices: [d],
      } = await projectWith([{}]);
      for (const url of [
        `/v2/projects/${t.projectId}/devices/nothing`,
        `/v2/projects/${t.projectId}/devices/${d!.id}`,
        '/v2/projects/-/devices/nothing',
      ]) {
        const res = await t.request('GET', url);
        assert.equal(res.status, 404, url);
      }
      const unknownProject = await t.request('GET', '/v2/projects/cvq2b1b0l4l9s3f2a9g0/devices');
      assert.equal(unknownProject.status, 404);
    });
  });

  describe('security', () => {
    it('no credentials: 401', async () => {
      const res = await t.request('GET', `/v2/projects/${t.projectId}/devices`, { auth: null });
      assert.equal(res.status, 401);
    });

    it('a project user can read devices; a non-member gets 404 for list and get', async () => {
      const {
        projectId,
        devices: [d],
      } = await projectWith([{}]);
      const user = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: projectId });
      assert.equal((await t.request('GET', `/v2/projects/${projectId}/devices`, { auth: user.auth })).status, 200);
      assert.equal(
        (await t.request('GET', `/v2/projects/${projectId}/devices/${d!.id}`, { auth: user.auth })).status,
        200,
      );
      const stranger = await t.createServiceAccount({
        roles: ['roles/project.admin'],
        memberOf: await t.createProject(),
      });
      assert.equal((await t.request('GET', `/v2/projects/${projectId}/devices`, { auth: stranger.auth })).status, 404);
      assert.equal(
        (await t.request('GET', `/v2/projects/${projectId}/devices/${d!.id}`, { auth: stranger.auth })).status,
        404,
      );
      assert.equal((await t.request('GET', `/v2/projects/-/devices/${d!.id}`, { auth: stranger.auth })).status, 404);
    });

    it('the wildcard lists only projects the caller can read', async () => {
      const readable = await projectWith([{}]);
      const hidden = await projectWith([{}]);
      const user = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: readable.projectId });
      const byOrg = await t.request('GET', `/v2/projects/-/devices?organization=organizations/${t.organizationId}`, {
        auth: user.auth,
      });
      assert.deepEqual(byOrg.body.devices.map(idOf), [readable.devices[0]!.id]);
      const byProjects = await t.request(
        'GET',
        `/v2/projects/-/devices?projects=${hidden.projectId}&projects=${readable.projectId}`,
        { auth: user.auth },
      );
      assert.deepEqual(byProjects.body.devices.map(idOf), [readable.devices[0]!.id]);
      const other = await otherOrganizationProject();
      const foreign = await t.request(
        'GET',
        `/v2/projects/-/devices?organization=organizations/${other.organizationId}`,
        { auth: user.auth },
      );
      assert.deepEqual(foreign.body, { devices: [], nextPageToken: '' });
    });
  });
});
