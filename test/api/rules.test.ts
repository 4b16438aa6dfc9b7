// Notification rules CRUD (extensions §X5): the infrastructure client's bodies round-trip under /v2alpha and /v2,
// every check is a 400 naming the field with nothing stored, PATCH merges, and the roles of a project decide who
// reads, who changes and who sees webhook secrets.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestContext, type Account, type TestContext } from '../helpers/context.ts';

let t: TestContext;
let base: string;
let alpha: string;
let deviceA: string;
let deviceB: string;
before(async () => {
  t = await createTestContext({ env: { SENSORCLOUD_SMTP_URL: 'smtp://mail.example.org:587' } });
  base = `/v2/projects/${t.projectId}/rules`;
  alpha = `/v2alpha/projects/${t.projectId}/rules`;
  deviceA = (await t.createDevice()).id;
  deviceB = (await t.createDevice({ type: 'contact', productNumber: '' })).id;
});
after(() => t.close());

const idOf = (r: { name: string }) => r.name.split('/')[3]!;
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const NO_CONFIGS = {
  sms: null,
  email: null,
  corrigo: null,
  serviceChannel: null,
  webhook: null,
  phoneCall: null,
  signalTower: null,
};

/** What the infrastructure client sends: every field, null for each absent pointer. */
function terraformBody(): Record<string, any> {
  return {
    name: '',
    enabled: true,
    displayName: 'Fridge 4',
    devices: [`projects/${t.projectId}/devices/${deviceA}`],
    deviceLabels: { room: 'kitchen', fridge: '' },
    trigger: {
      field: 'temperature',
      range: { lower: 2, upper: 8, type: 'OUTSIDE', filter: null },
      presence: null,
      motion: null,
      occupancy: null,
      connection: null,
      contact: null,
      triggerCount: 1,
    },
    escalationLevels: [
      {
        displayName: 'Escalation Level 1',
        actions: [
          {
            type: 'EMAIL',
            ...NO_CONFIGS,
            email: {
              recipients: ['someone@example.com', 'other@example.org'],
              subject: 'Temperature Alert',
              body: 'Temperature $celsius°C is out of range',
            },
          },
        ],
        escalateAfter: '3600s',
      },
      {
        displayName: 'Escalation Level 2',
        actions: [
          {
            type: 'WEBHOOK',
            ...NO_CONFIGS,
            webhook: {
              url: 'https://example.org/alerts',
              signatureSecret: 'hook-secret',
              headers: { 'X-Api-Key': 'key-1' },
            },
          },
        ],
        escalateAfter: null,
      },
    ],
    schedule: {
      timezone: 'Europe/Oslo',
      slots: [
        {
          days: ['Monday', 'Tuesday', 'Friday'],
          times: [{ start: { hour: 8, minute: 0 }, end: { hour: 17, minute: 30 } }],
        },
      ],
      inverse: false,
    },
    triggerDelay: '900s',
    reminderNotifications: false,
    resolvedNotifications: true,
    unacknowledgesAfter: null,
    actions: null,
  };
}

/**
 * The read as the client's structs decode it: only the keys the client sent (its struct's fields), recursively, so
 * that keys the server adds (contactGroups, projectLabels, createTime…) do not count, as they do not for the client.
 */
function asClient(read: unknown, sent: unknown): unknown {
  if (Array.isArray(sent) && Array.isArray(read)) return read.map((r, i) => asClient(r, sent[i] ?? sent[0]));
  if (sent && typeof sent === 'object' && !Array.isArray(sent) && read && typeof read === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(sent)) out[k] = asClient((read as Record<string, unknown>)[k], (sent as any)[k]);
    return out;
  }
  return read;
}

/** Every field the client compares equals what it sent (name is the server's; the deprecated actions read []). */
function assertReadsBackAsSent(read: any, sent: Record<string, any>) {
  const seen = asClient(read, sent) as Record<string, unknown>;
  assert.match(read.name, new RegExp(`^projects/${t.projectId}/rules/[0-9a-v]{20}$`));
  assert.deepEqual(read.actions, []);
  assert.deepEqual({ ...seen, name: '', actions: null }, { ...sent, name: '', actions: null });
}

async function create(body: Record<string, unknown> = terraformBody(), url = base) {
  const res = await t.request('POST', url, { body });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** A rule with one e-mail action, the smallest valid one. */
const minimal = (extra: Record<string, unknown> = {}) => ({
  displayName: 'minimal',
  trigger: { field: 'touch' },
  escalationLevels: [{ actions: [{ type: 'EMAIL', email: { recipients: ['a@example.org'] } }] }],
  ...extra,
});

const webhookLevel = (webhook: Record<string, unknown>) => [
  { actions: [{ type: 'WEBHOOK', webhook: { url: 'https://example.org/h', ...webhook } }] },
];

describe('happy', () => {
  it('round-trips the infrastructure client: POST, GET, list and PUT under /v2alpha read back what was sent', async () => {
    const sent = terraformBody();
    const created = await create(sent, alpha);
    assertReadsBackAsSent(created, sent);
    assert.match(created.createTime, TIME);
    assert.equal(created.createTime, created.updateTime);
    // Durations are compared as strings.
    assert.equal(created.triggerDelay, '900s');
    assert.equal(created.escalationLevels[0].escalateAfter, '3600s');
    assert.equal(created.unacknowledgesAfter, null);

    const got = await t.request('GET', `${alpha}/${idOf(created)}`);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, created);
    const listed = await t.request('GET', `${alpha}?pageToken=`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.nextPageToken, '');
    assert.deepEqual(
      listed.body.rules.find((r: any) => r.name === created.name),
      created,
    );

    t.clock.advance(1000);
    const changed = {
      ...terraformBody(),
      name: created.name,
      displayName: 'Fridge 4 (renamed)',
      devices: [],
      deviceLabels: {},
      trigger: { ...sent.trigger, range: { lower: null, upper: 8, type: 'WITHIN', filter: null }, triggerCount: 3 },
      schedule: null,
      triggerDelay: null,
      unacknowledgesAfter: '7200s',
      reminderNotifications: true,
    };
    const put = await t.request('PUT', `${alpha}/${idOf(created)}`, { body: changed });
    assert.equal(put.status, 200, put.text);
    assertReadsBackAsSent(put.body, changed);
    assert.equal(put.body.unacknowledgesAfter, '7200s');
    assert.equal(put.body.createTime, created.createTime);
    assert.notEqual(put.body.updateTime, created.updateTime);
    assert.deepEqual((await t.request('GET', `${alpha}/${idOf(created)}`)).body, put.body);
    // The same rule under /v2.
    assert.deepEqual((await t.request('GET', `${base}/${idOf(created)}`)).body, put.body);
  });

  it('creates with defaults and every key present; stores the settings as a RuleSpec', async () => {
    const r = await create(minimal());
    assert.deepEqual(
      { ...r, name: undefined, createTime: undefined, updateTime: undefined },
      {
        name: undefined,
        enabled: true,
        displayName: 'minimal',
        devices: [],
        deviceLabels: {},
        projectLabels: {},
        trigger: {
          field: 'touch',
          range: null,
          presence: null,
          motion: null,
          occupancy: null,
          contact: null,
          connection: null,
          triggerCount: 0,
        },
        escalationLevels: [
          {
            displayName: '',
            actions: [
              {
                type: 'EMAIL',
                ...NO_CONFIGS,
                email: { recipients: ['a@example.org'], contactGroups: [], subject: '', body: '' },
              },
            ],
            escalateAfter: null,
          },
        ],
        schedule: null,
        triggerDelay: null,
        reminderNotifications: false,
        resolvedNotifications: false,
        unacknowledgesAfter: null,
        actions: [],
        createTime: undefined,
        updateTime: undefined,
      },
    );
    const record = await t.deps.store.rules.get(idOf(r));
    assert.deepEqual(JSON.parse(record!.spec), {
      devices: [],
      deviceLabels: {},
      projectLabels: {},
      trigger: { field: 'touch' },
      escalationLevels: [
        {
          displayName: '',
          actions: [
            { type: 'EMAIL', email: { recipients: ['a@example.org'], contactGroups: [], subject: '', body: '' } },
          ],
        },
      ],
      reminderNotifications: false,
      resolvedNotifications: false,
    });
    assert.equal(record!.enabled, true);
    assert.equal(record!.displayName, 'minimal');
  });

  it('takes every trigger field with its criteria, devices by id, recipients in lower case, projectLabels', async () => {
    const cases: Array<[Record<string, unknown>, Record<string, unknown>]> = [
      [
        { field: 'humidity', range: { upper: 80 } },
        { range: { lower: null, upper: 80, type: 'WITHIN', filter: null } },
      ],
      [
        // The infrastructure client's name for it, kept as written.
        { field: 'relativeHumidity', range: { upper: 80 } },
        { range: { lower: null, upper: 80, type: 'WITHIN', filter: null } },
      ],
      [
        { field: 'co2', range: { lower: 1000, type: '' } },
        { range: { lower: 1000, upper: null, type: 'WITHIN', filter: null } },
      ],
      [{ field: 'pressure', range: { lower: 9e4, upper: 1.1e5, type: 'OUTSIDE' } }, {}],
      [{ field: 'objectPresent', presence: 'ABSENT' }, { presence: 'ABSENT' }],
      [{ field: 'waterPresent', presence: 'PRESENT' }, { presence: 'PRESENT' }],
      [{ field: 'motion', motion: 'NO_MOTION_DETECTED' }, { motion: 'NO_MOTION_DETECTED' }],
      [{ field: 'deskOccupancy', occupancy: 'OCCUPIED' }, { occupancy: 'OCCUPIED' }],
      [
        { field: 'contact', contact: 'OPEN', triggerCount: 5 },
        { contact: 'OPEN', triggerCount: 5 },
      ],
      [{ field: 'connectionStatus', connection: 'CLOUD_CONNECTOR_OFFLINE' }, { connection: 'CLOUD_CONNECTOR_OFFLINE' }],
      [{ field: 'connectionStatus', connection: 'SENSOR_OFFLINE' }, { connection: 'SENSOR_OFFLINE' }],
      [{ field: 'dataConnector' }, { field: 'dataConnector' }],
    ];
    for (const [trigger, expect] of cases) {
      const r = await t.request('POST', base, { body: minimal({ trigger }) });
      assert.equal(r.status, 200, `${JSON.stringify(trigger)} → ${r.text}`);
      for (const [k, v] of Object.entries(expect))
        assert.deepEqual(r.body.trigger[k], v, `${JSON.stringify(trigger)}.${k}`);
      await t.request('DELETE', `${base}/${idOf(r.body)}`);
    }
    const r = await create(
      minimal({
        devices: [deviceA, `projects/${t.projectId}/devices/${deviceB}`, deviceA],
        projectLabels: { site: 'oslo' },
        escalationLevels: [
          { actions: [{ type: 'EMAIL', email: { recipients: ['Ops@Example.ORG'], subject: 's', body: 'b' } }] },
        ],
      }),
    );
    assert.deepEqual(r.devices, [
      `projects/${t.projectId}/devices/${deviceA}`,
      `projects/${t.projectId}/devices/${deviceB}`,
    ]);
    assert.deepEqual(r.projectLabels, { site: 'oslo' });
    assert.deepEqual(r.escalationLevels[0].actions[0].email.recipients, ['ops@example.org']);
    assert.deepEqual(JSON.parse((await t.deps.store.rules.get(idOf(r)))!.spec).devices, [deviceA, deviceB]);
  });

  it('takes the deprecated actions as the single escalation level', async () => {
    const r = await create({
      displayName: 'old style',
      trigger: { field: 'touch' },
      escalationLevels: [],
      actions: [
        { type: 'WEBHOOK', webhook: { url: 'https://example.org/old' } },
        { type: 'EMAIL', email: { recipients: ['x@example.org'] } },
      ],
    });
    assert.equal(r.escalationLevels.length, 1);
    assert.deepEqual(
      r.escalationLevels[0].actions.map((a: any) => a.type),
      ['WEBHOOK', 'EMAIL'],
    );
    assert.deepEqual(r.escalationLevels[0].actions[0].webhook, {
      url: 'https://example.org/old',
      signatureSecret: '',
      headers: {},
    });
    assert.deepEqual(r.actions, []);
  });

  it('lists in creation order with keyset paging, on /v2 and /v2alpha alike', async () => {
    const project = await t.createProject('paging');
    const names: string[] = [];
    for (let i = 0; i < 3; i++)
      names.push((await create(minimal({ displayName: `r${i}` }), `/v2/projects/${project}/rules`)).name);
    for (const prefix of ['/v2', '/v2alpha']) {
      const p1 = await t.request('GET', `${prefix}/projects/${project}/rules?pageSize=2`);
      assert.deepEqual(
        p1.body.rules.map((r: any) => r.name),
        names.slice(0, 2),
      );
      const p2 = await t.request(
        'GET',
        `${prefix}/projects/${project}/rules?page_size=2&page_token=${p1.body.nextPageToken}`,
      );
      assert.deepEqual(
        p2.body.rules.map((r: any) => r.name),
        names.slice(2),
      );
      assert.equal(p2.body.nextPageToken, '');
    }
  });

  it('PATCH merges: the fields given replace, the rest stay; an empty body changes nothing', async () => {
    const r = await create();
    const url = `${alpha}/${idOf(r)}`;
    t.clock.advance(1000);
    const p = await t.request('PATCH', url, { body: { displayName: 'patched', enabled: false } });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual({ ...p.body, updateTime: '' }, { ...r, displayName: 'patched', enabled: false, updateTime: '' });
    assert.notEqual(p.body.updateTime, r.updateTime);
    const empty = await t.request('PATCH', url, { rawBody: '', headers: { 'content-type': 'application/json' } });
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.body, p.body);
    // The whole rule sent back (as a client that PATCHes what it read) changes nothing either.
    t.clock.advance(1000);
    const whole = await t.request('PATCH', url, { body: p.body });
    assert.deepEqual(whole.body, p.body);
    // A trigger given replaces the trigger whole.
    const trig = await t.request('PATCH', url, { body: { trigger: { field: 'contact', contact: 'OPEN' } } });
    assert.equal(trig.status, 200, trig.text);
    assert.equal(trig.body.trigger.range, null);
    assert.equal(trig.body.trigger.contact, 'OPEN');
    assert.equal(trig.body.trigger.triggerCount, 0);
    assert.deepEqual(trig.body.escalationLevels, r.escalationLevels);
  });

  it('PATCH with update_mask applies only the listed fields; a listed field the body lacks is cleared', async () => {
    const r = await create();
    const url = `${base}/${idOf(r)}`;
    const p = await t.request('PATCH', `${url}?update_mask=display_name,trigger_delay,trigger.range`, {
      body: {
        displayName: 'masked',
        enabled: false,
        trigger: { field: 'ignored', range: { lower: 0, upper: 4 } },
        unacknowledgesAfter: '60s',
      },
    });
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.displayName, 'masked');
    assert.equal(p.body.enabled, true);
    assert.equal(p.body.triggerDelay, null);
    assert.equal(p.body.unacknowledgesAfter, null);
    assert.deepEqual(p.body.trigger, {
      ...r.trigger,
      range: { lower: 0, upper: 4, type: 'WITHIN', filter: null },
    });
    const sched = await t.request('PATCH', `${url}?updateMask=schedule.timezone,name,createTime`, {
      body: { schedule: { timezone: 'America/Los_Angeles' } },
    });
    assert.equal(sched.status, 200, sched.text);
    assert.deepEqual(sched.body.schedule, { ...r.schedule, timezone: 'America/Los_Angeles' });
    const levels = await t.request('PATCH', `${url}?update_mask=actions`, {
      body: { actions: [{ type: 'EMAIL', email: { recipients: ['solo@example.org'] } }] },
    });
    assert.equal(levels.status, 200, levels.text);
    assert.equal(levels.body.escalationLevels.length, 1);
    assert.deepEqual(levels.body.escalationLevels[0].actions[0].email.recipients, ['solo@example.org']);
  });

  it('DELETE answers {} and the rule is gone', async () => {
    const r = await create(minimal());
    const del = await t.request('DELETE', `${alpha}/${idOf(r)}`, { headers: { 'content-type': 'application/json' } });
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body, {});
    assert.equal((await t.request('GET', `${base}/${idOf(r)}`)).status, 404);
    assert.equal((await t.request('DELETE', `${base}/${idOf(r)}`)).status, 404);
    assert.equal(await t.deps.store.rules.get(idOf(r)), null);
  });
});

describe('errors', () => {
  /** A refused POST: 400 whose message matches, and no rule more in the store. */
  const bad = async (body: unknown, pattern: RegExp, url = base) => {
    const before = await t.deps.store.rules.countByProject(t.projectId);
    const r = await t.request('POST', url, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 300)} → ${r.status} ${r.text}`);
    assert.match(r.body.error, pattern, JSON.stringify(body).slice(0, 300));
    assert.equal(await t.deps.store.rules.countByProject(t.projectId), before, 'nothing stored');
  };
  const withTrigger = (trigger: Record<string, unknown>) => minimal({ trigger });
  const withAction = (action: Record<string, unknown>) => minimal({ escalationLevels: [{ actions: [action] }] });

  it('refuses unknown trigger fields and criteria that do not fit the field', async () => {
    await bad(minimal({ trigger: undefined }), /^trigger is required/);
    await bad(withTrigger({}), /trigger\.field is required/);
    await bad(withTrigger({ field: 'wind' }), /trigger\.field: unknown field "wind"/);
    await bad(withTrigger({ field: 'temperature' }), /trigger\.range is required for field temperature/);
    await bad(withTrigger({ field: 'temperature', range: {} }), /trigger\.range needs a lower bound/);
    await bad(withTrigger({ field: 'temperature', range: { type: 'OUTSIDE' } }), /trigger\.range needs/);
    await bad(withTrigger({ field: 'temperature', range: { lower: 9, upper: 2 } }), /lower \(9\) must not be above/);
    await bad(withTrigger({ field: 'temperature', range: { lower: '1' } }), /trigger\.range\.lower must be a number/);
    await bad(withTrigger({ field: 'temperature', range: { lower: 1, type: 'BETWEEN' } }), /WITHIN or OUTSIDE/);
    await bad(
      withTrigger({ field: 'temperature', range: { lower: 1, filter: { productEquivalentTemperature: {} } } }),
      /trigger\.range\.filter is not supported/,
    );
    await bad(
      withTrigger({ field: 'temperature', range: { lower: 1 }, presence: 'PRESENT' }),
      /trigger\.presence does not apply to field temperature/,
    );
    await bad(withTrigger({ field: 'objectPresent' }), /trigger\.presence is required for field objectPresent/);
    await bad(withTrigger({ field: 'objectPresent', presence: 'YES' }), /trigger\.presence must be PRESENT or ABSENT/);
    await bad(withTrigger({ field: 'objectPresent', motion: 'MOTION_DETECTED' }), /trigger\.motion does not apply/);
    await bad(withTrigger({ field: 'waterPresent', range: { lower: 1 } }), /trigger\.range does not apply/);
    await bad(withTrigger({ field: 'motion', motion: 'MOVING' }), /trigger\.motion must be/);
    await bad(withTrigger({ field: 'deskOccupancy', occupancy: 'FREE' }), /trigger\.occupancy must be/);
    await bad(withTrigger({ field: 'contact', contact: 'AJAR' }), /trigger\.contact must be OPEN or CLOSED/);
    await bad(withTrigger({ field: 'connectionStatus' }), /trigger\.connection is required/);
    await bad(withTrigger({ field: 'touch', range: { lower: 1 } }), /touch takes no criteria/);
    await bad(withTrigger({ field: 'dataConnector', presence: 'PRESENT' }), /dataConnector takes no criteria/);
    await bad(withTrigger({ field: 'touch', triggerCount: -1 }), /trigger\.triggerCount/);
    await bad(withTrigger({ field: 'touch', triggerCount: 1.5 }), /trigger\.triggerCount/);
    await bad(withTrigger({ field: 'touch', triggerCount: 101 }), /trigger\.triggerCount .* 100/);
    await bad(
      minimal({ trigger: { field: 'dataConnector' }, devices: [deviceA] }),
      /do not apply to a dataConnector rule/,
    );
  });

  it('refuses durations not written "<n>s" in whole seconds, and out of bounds', async () => {
    for (const value of [900, '15m', '1.5s', '900', ' 900s', '0900s', 'PT15M', '-5s', true]) {
      await bad(minimal({ triggerDelay: value }), /triggerDelay must be a whole number of seconds .*"3600s"/);
    }
    await bad(minimal({ triggerDelay: '2592001s' }), /triggerDelay must be from "0s" to "2592000s"/);
    await bad(minimal({ unacknowledgesAfter: 3600 }), /unacknowledgesAfter must be a whole number of seconds/);
    await bad(
      minimal({
        escalationLevels: [
          { actions: [{ type: 'EMAIL', email: { recipients: ['a@example.org'] } }], escalateAfter: '0s' },
        ],
      }),
      /escalationLevels\[0\]\.escalateAfter must be from "1s"/,
    );
    await bad(
      minimal({
        escalationLevels: [
          { actions: [{ type: 'EMAIL', email: { recipients: ['a@example.org'] } }], escalateAfter: '1h' },
        ],
      }),
      /escalationLevels\[0\]\.escalateAfter must be a whole number of seconds/,
    );
  });

  it('refuses bad schedules', async () => {
    const slot = { days: ['Monday'], times: [{ start: { hour: 8, minute: 0 }, end: { hour: 16, minute: 0 } }] };
    await bad(minimal({ schedule: { slots: [slot] } }), /schedule\.timezone is required/);
    await bad(
      minimal({ schedule: { timezone: 'Mars/Olympus_Mons', slots: [slot] } }),
      /unknown time zone "Mars\/Olympus_Mons"/,
    );
    await bad(
      minimal({ schedule: { timezone: 'UTC', slots: [{ ...slot, days: ['monday'] }] } }),
      /schedule\.slots\[0\]\.days\[0\] must be one of Monday/,
    );
    await bad(
      minimal({ schedule: { timezone: 'UTC', slots: [{ days: ['Monday'] }] } }),
      /schedule\.slots\[0\]\.times: give at least one/,
    );
    await bad(
      minimal({
        schedule: {
          timezone: 'UTC',
          slots: [{ days: ['Monday'], times: [{ start: { hour: 24, minute: 0 }, end: { hour: 1, minute: 0 } }] }],
        },
      }),
      /schedule\.slots\[0\]\.times\[0\]\.start\.hour must be a whole number from 0 to 23/,
    );
    await bad(
      minimal({
        schedule: {
          timezone: 'UTC',
          slots: [{ days: ['Monday'], times: [{ start: { hour: 1, minute: 0 }, end: { hour: 2, minute: 60 } }] }],
        },
      }),
      /schedule\.slots\[0\]\.times\[0\]\.end\.minute must be a whole number from 0 to 59/,
    );
    await bad(
      minimal({ schedule: { timezone: 'UTC', slots: [{ days: ['Monday'], times: [{ start: { hour: 1 } }] }] } }),
      /needs start and end/,
    );
    await bad(
      minimal({ schedule: { timezone: 'UTC', slots: [slot], inverse: 'yes' } }),
      /schedule\.inverse must be true or false/,
    );
    await bad(
      minimal({ schedule: { timezone: 'UTC', slots: Array.from({ length: 21 }, () => slot) } }),
      /schedule\.slots: at most 20/,
    );
  });

  it('refuses the action types this service does not execute, naming the type, and actions without their config', async () => {
    for (const type of ['SMS', 'PHONE_CALL', 'CORRIGO', 'SERVICE_CHANNEL', 'SIGNAL_TOWER']) {
      await bad(
        withAction({ type, sms: { recipients: ['+4798765432'], body: 'x' } }),
        new RegExp(`escalationLevels\\[0\\]\\.actions\\[0\\]\\.type: ${type} actions are not supported`),
      );
    }
    await bad(withAction({ type: 'FAX' }), /actions\[0\]\.type must be EMAIL or WEBHOOK; got "FAX"/);
    await bad(withAction({ email: { recipients: ['a@example.org'] } }), /actions\[0\]\.type is required/);
    await bad(withAction({ type: 'EMAIL' }), /actions\[0\]\.email is required for an EMAIL action/);
    await bad(withAction({ type: 'WEBHOOK' }), /actions\[0\]\.webhook is required for a WEBHOOK action/);
    await bad(
      withAction({ type: 'EMAIL', email: { recipients: ['a@example.org'] }, webhook: { url: 'https://example.org' } }),
      /actions\[0\]\.webhook must be null for a EMAIL action/,
    );
    await bad(minimal({ escalationLevels: [] }), /escalationLevels: at least one escalation level/);
    await bad(
      minimal({ escalationLevels: [{ displayName: 'empty', actions: [] }] }),
      /escalationLevels\[0\]\.actions: at least one action/,
    );
    await bad(
      minimal({ actions: [{ type: 'EMAIL', email: { recipients: ['b@example.org'] } }] }),
      /escalationLevels or the deprecated actions, not both/,
    );
    await bad(
      { displayName: 'x', trigger: { field: 'touch' }, actions: [{ type: 'SMS' }] },
      /^actions\[0\]\.type: SMS actions are not supported/,
    );
  });

  it('refuses e-mails that are not addresses, without recipients, or with a subject that breaks a header', async () => {
    const email = (e: Record<string, unknown>) => withAction({ type: 'EMAIL', email: e });
    for (const address of [
      'not-an-address',
      'a@b',
      'A B <a@example.org>',
      'a@example.org, b@example.org',
      'a@example.org\r\nBcc: x@y.org',
      5,
    ]) {
      await bad(
        email({ recipients: ['ok@example.org', address] }),
        /email\.recipients\[1\] (is not an e-mail address|must be a string)/,
      );
    }
    await bad(email({ recipients: [] }), /needs at least one address in recipients or one group in contactGroups/);
    await bad(
      email({ recipients: ['a@example.org'], subject: 'Hi\r\nBcc: x@example.org' }),
      /email\.subject must not contain line breaks/,
    );
    await bad(email({ recipients: ['a@example.org'], subject: 's'.repeat(257) }), /email\.subject must be at most 256/);
    await bad(email({ recipients: ['a@example.org'], body: 'b'.repeat(10_001) }), /email\.body must be at most 10000/);
    await bad(
      email({ recipients: Array.from({ length: 101 }, (_, i) => `r${i}@example.org`) }),
      /recipients: at most 100/,
    );
    await bad(email({ contactGroups: ['groups/x'] }), /contactGroups\[0\] must be a contact group name/);
    await bad(
      email({ contactGroups: [`organizations/${t.organizationId}/contactGroups/cvq2b1b0l4l9s3f2a9g0`] }),
      /contactGroups\[0\]: no contact group .* in the project's organization/,
    );
    await bad(
      email({ contactGroups: ['organizations/cvq2b1b0l4l9s3f2a9g1/contactGroups/cvq2b1b0l4l9s3f2a9g0'] }),
      /contactGroups\[0\]: no contact group/,
    );
  });

  it('refuses webhooks whose URL is not a public https:// URL, or whose headers a connector would refuse', async () => {
    const w = (webhook: Record<string, unknown>) => minimal({ escalationLevels: webhookLevel(webhook) });
    const at = 'escalationLevels\\[0\\]\\.actions\\[0\\]\\.webhook';
    await bad(w({ url: 'http://example.org/h' }), new RegExp(`${at}\\.url must use https://`));
    await bad(w({ url: 'https://127.0.0.1/h' }), new RegExp(`${at}\\.url points to a refused address`));
    await bad(w({ url: 'https://10.0.0.1/h' }), new RegExp(`${at}\\.url points to a refused address`));
    await bad(
      minimal({ escalationLevels: [{ actions: [{ type: 'WEBHOOK', webhook: {} }] }] }),
      new RegExp(`${at}\\.url is required`),
    );
    for (const name of [
      'Host',
      'content-type',
      'X-Service-Signature',
      'X-Sensorcloud-Alert-Transition',
      'Connection',
    ]) {
      await bad(w({ headers: { [name]: 'v' } }), new RegExp(`${at}\\.headers: ${name} is reserved`));
    }
    await bad(
      w({ headers: { 'Bad Header': 'v' } }),
      new RegExp(`${at}\\.headers: "Bad Header" is not a valid header name`),
    );
    await bad(w({ headers: { 'X-A': 'a\r\nX-B: 1' } }), new RegExp(`${at}\\.headers\\.X-A must hold only`));
    await bad(w({ headers: { 'X-A': 1 } }), new RegExp(`${at}\\.headers\\.X-A must be a string`));
    await bad(w({ signatureSecret: 's'.repeat(257) }), new RegExp(`${at}\\.signatureSecret must be at most 256`));
  });

  it("refuses devices that are not the project's, labels a device may not carry, and over-long names", async () => {
    const other = await t.createProject('other');
    await bad(
      minimal({ devices: [`projects/${other}/devices/${deviceA}`] }),
      new RegExp(`devices\\[0\\]: projects/${other}/devices/${deviceA} is not a device of projects/${t.projectId}`),
    );
    await bad(
      minimal({ devices: [deviceA, 'emucvq2b1b0l4l9s3f2a9g0'] }),
      /devices\[1\]: no device .*emucvq2b1b0l4l9s3f2a9g0 in this project/,
    );
    await bad(minimal({ devices: ['a/b/c'] }), /devices\[0\] must be a device name/);
    await bad(minimal({ devices: [7] }), /devices\[0\] must be a device name/);
    const elsewhere = await t.createDevice({ projectId: other });
    await bad(minimal({ devices: [elsewhere.id] }), /devices\[0\]: no device/);
    await bad(minimal({ deviceLabels: { 'a=b': '' } }), /deviceLabels:/);
    await bad(minimal({ deviceLabels: { k: 5 } }), /deviceLabels:/);
    await bad(minimal({ displayName: 'd'.repeat(257) }), /displayName must be at most 256/);
    await bad(minimal({ enabled: 'yes' }), /enabled/);
  });

  it('refuses more than 10 levels and 20 actions a level', async () => {
    const action = { type: 'EMAIL', email: { recipients: ['a@example.org'] } };
    await bad(
      minimal({ escalationLevels: Array.from({ length: 11 }, () => ({ actions: [action] })) }),
      /escalationLevels: at most 10/,
    );
    await bad(
      minimal({ escalationLevels: [{ actions: Array.from({ length: 21 }, () => action) }] }),
      /escalationLevels\[0\]\.actions: at most 20/,
    );
  });

  it('refuses e-mail actions while no SMTP server is configured, saying which setting to set', async () => {
    const plain = await createTestContext();
    try {
      const url = `/v2alpha/projects/${plain.projectId}/rules`;
      const r = await plain.request('POST', url, { body: minimal() });
      assert.equal(r.status, 400, r.text);
      assert.match(
        r.body.error,
        /escalationLevels\[0\]\.actions\[0\]: EMAIL actions need an SMTP server.*SENSORCLOUD_SMTP_URL/,
      );
      assert.equal(await plain.deps.store.rules.countByProject(plain.projectId), 0);
      const hook = await plain.request('POST', url, { body: minimal({ escalationLevels: webhookLevel({}) }) });
      assert.equal(hook.status, 200, hook.text);
    } finally {
      await plain.close();
    }
  });

  it('refuses bad PUTs and PATCHes without changing anything', async () => {
    const r = await create();
    const url = `${base}/${idOf(r)}`;
    for (const [method, body] of [
      ['PATCH', { trigger: { field: 'wind' } }],
      ['PATCH', { triggerDelay: '15m' }],
      ['PATCH', { escalationLevels: [{ actions: [{ type: 'SMS' }] }] }],
      ['PATCH', { devices: ['emucvq2b1b0l4l9s3f2a9g0'] }],
      ['PATCH', { escalationLevels: webhookLevel({ url: 'http://example.org' }) }],
      ['PUT', { ...terraformBody(), schedule: { timezone: 'Nowhere/Else' } }],
      ['PUT', {}],
    ] as const) {
      const res = await t.request(method, url, { body });
      assert.equal(res.status, 400, `${method} ${JSON.stringify(body).slice(0, 200)} → ${res.text}`);
    }
    assert.equal((await t.request('PATCH', `${url}?update_mask=nonsense`, { body: {} })).status, 400);
    assert.equal((await t.request('PATCH', `${url}?update_mask=trigger.nonsense`, { body: {} })).status, 400);
    assert.deepEqual((await t.request('GET', url)).body, r);
  });

  it('allows at most 100 rules per project', async () => {
    const project = await t.createProject('full');
    const spec = JSON.stringify({
      devices: [],
      deviceLabels: {},
      projectLabels: {},
      trigger: { field: 'touch' },
      escalationLevels: [],
      reminderNotifications: false,
      resolvedNotifications: false,
      unacknowledgesAfter: '14400s',
    });
    for (let i = 0; i < 100; i++)
      await t.deps.store.rules.create({
        id: `fill${String(i).padStart(16, '0')}`,
        projectId: project,
        displayName: '',
        enabled: false,
        spec,
        createTime: 1,
        updateTime: 1,
      });
    const r = await t.request('POST', `/v2/projects/${project}/rules`, { body: minimal() });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /at most 100 rules/);
    assert.equal(await t.deps.store.rules.countByProject(project), 100);
  });

  it('answers 404 for unknown rules and rules of another project, 400 for the wildcard, 404 for other /v2alpha paths', async () => {
    const r = await create(minimal());
    const other = await t.createProject('another');
    for (const prefix of ['/v2', '/v2alpha']) {
      assert.equal(
        (await t.request('GET', `${prefix}/projects/${t.projectId}/rules/cvq2b1b0l4l9s3f2a9g0`)).status,
        404,
      );
      assert.equal((await t.request('GET', `${prefix}/projects/${t.projectId}/rules/not-an-id`)).status, 404);
      assert.equal((await t.request('GET', `${prefix}/projects/${other}/rules/${idOf(r)}`)).status, 404);
      assert.equal(
        (await t.request('PUT', `${prefix}/projects/${other}/rules/${idOf(r)}`, { body: minimal() })).status,
        404,
      );
      assert.equal(
        (await t.request('PATCH', `${prefix}/projects/${other}/rules/${idOf(r)}`, { body: {} })).status,
        404,
      );
      assert.equal((await t.request('DELETE', `${prefix}/projects/${other}/rules/${idOf(r)}`)).status, 404);
      assert.equal((await t.request('GET', `${prefix}/projects/cvq2b1b0l4l9s3f2a9g0/rules`)).status, 404);
      assert.equal((await t.request('GET', `${prefix}/projects/-/rules`)).status, 400);
    }
    assert.equal((await t.request('GET', `/v2alpha/projects/${t.projectId}/devices`)).status, 404);
    assert.equal((await t.request('GET', `/v2alpha/projects/${t.projectId}/rulesx`)).status, 404);
    assert.equal((await t.request('GET', alpha, { auth: null })).status, 401);
  });
});

describe('security', () => {
  let user: Account;
  let developer: Account;
  let stranger: Account;
  let rule: any;
  before(async () => {
    user = await t.createServiceAccount({ roles: ['roles/project.user'] });
    developer = await t.createServiceAccount({ roles: ['roles/project.developer'] });
    stranger = await t.createServiceAccount({ projectId: await t.createProject('stranger') });
    rule = await create(
      minimal({
        escalationLevels: webhookLevel({
          headers: { Authorization: 'Bearer hook-token' },
          signatureSecret: 'top-secret',
        }),
      }),
    );
  });

  it('project.user reads without webhook secrets or header values, and gets 403 on every change', async () => {
    const url = `${alpha}/${idOf(rule)}`;
    const got = await t.request('GET', url, { auth: user.auth });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body.escalationLevels[0].actions[0].webhook, {
      url: 'https://example.org/h',
      signatureSecret: '',
      headers: { Authorization: '' },
    });
    const listed = await t.request('GET', alpha, { auth: user.auth });
    const inList = listed.body.rules.find((r: any) => r.name === rule.name);
    assert.equal(inList.escalationLevels[0].actions[0].webhook.signatureSecret, '');
    assert.equal(inList.escalationLevels[0].actions[0].webhook.headers.Authorization, '');
    const before = await t.deps.store.rules.countByProject(t.projectId);
    assert.equal((await t.request('POST', alpha, { auth: user.auth, body: minimal() })).status, 403);
    assert.equal((await t.request('PUT', url, { auth: user.auth, body: minimal() })).status, 403);
    assert.equal((await t.request('PATCH', url, { auth: user.auth, body: { displayName: 'x' } })).status, 403);
    assert.equal((await t.request('DELETE', url, { auth: user.auth })).status, 403);
    assert.equal(await t.deps.store.rules.countByProject(t.projectId), before);
    assert.deepEqual((await t.request('GET', url)).body, rule);
  });

  it('project.developer creates, sees secrets, replaces, patches and deletes', async () => {
    const created = await t.request('POST', base, {
      auth: developer.auth,
      body: minimal({ escalationLevels: webhookLevel({ signatureSecret: 'dev' }) }),
    });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.escalationLevels[0].actions[0].webhook.signatureSecret, 'dev');
    const seen = await t.request('GET', `${base}/${idOf(rule)}`, { auth: developer.auth });
    assert.equal(seen.body.escalationLevels[0].actions[0].webhook.signatureSecret, 'top-secret');
    assert.equal(seen.body.escalationLevels[0].actions[0].webhook.headers.Authorization, 'Bearer hook-token');
    const url = `${base}/${idOf(created.body)}`;
    assert.equal((await t.request('PUT', url, { auth: developer.auth, body: minimal() })).status, 200);
    assert.equal(
      (await t.request('PATCH', url, { auth: developer.auth, body: { enabled: false } })).body.enabled,
      false,
    );
    assert.equal((await t.request('DELETE', url, { auth: developer.auth })).status, 200);
  });

  it('a caller without membership gets 404 everywhere', async () => {
    const url = `${base}/${idOf(rule)}`;
    for (const [method, path] of [
      ['GET', base],
      ['POST', base],
      ['GET', url],
      ['PUT', url],
      ['PATCH', url],
      ['DELETE', url],
    ] as const) {
      const r = await t.request(method, path, {
        auth: stranger.auth,
        body: method === 'GET' || method === 'DELETE' ? undefined : minimal(),
      });
      assert.equal(r.status, 404, `${method} ${path}`);
    }
  });

  it('stores the webhook secret sealed, and a PATCH of another field keeps it', async () => {
    const row = await t.deps.store.rules.get(idOf(rule));
    assert.ok(!row!.spec.includes('top-secret'));
    const sealed = JSON.parse(row!.spec).escalationLevels[0].actions[0].webhook.signatureSecretSealed;
    assert.ok(sealed !== '' && t.deps.secretBox.open(sealed) === 'top-secret');
    const p = await t.request('PATCH', `${base}/${idOf(rule)}`, { body: { displayName: 'renamed' } });
    assert.equal(p.body.escalationLevels[0].actions[0].webhook.signatureSecret, 'top-secret');
  });
});
