// Notification rules at work (extensions §X5), on the test store with the fake clock: events published through the
// pipeline make, keep and resolve alerts; a trigger delay and a trigger count hold a condition back; the timers
// escalate, remind and un-acknowledge; :acknowledge and :resolve through the API; the queued notifications; the
// stream's alertChanged events; the dataConnector trigger from the delivery engine's health reports.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAlertTimers, type AlertTimers } from '../../src/alerts/timers.ts';
import type { RuleSpec } from '../../src/domain/rule-spec.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import type { EmittedEvent } from '../../src/events/types.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { reopenTestStore, testStoreKind } from '../helpers/store.ts';
import { sleep, until } from '../helpers/until.ts';

const MINUTE = 60_000;

let t: TestContext;
let timers: AlertTimers;
const streamed: EmittedEvent[] = [];
before(async () => {
  t = await createTestContext();
  timers = createAlertTimers({ ...t.deps, announce: t.deps.alerts.announce, notify: t.deps.alerts.notify });
  t.deps.events.subscribe((e) => {
    if (e.event.eventType === 'alertChanged') streamed.push(e);
  });
});
after(() => t.close());

let rules = 0;
/** A rule stored as the rules API stores it, in a project of its own; returns its id and the project. */
async function rule(spec: Partial<RuleSpec> & Pick<RuleSpec, 'trigger'>, projectId?: string) {
  const project = projectId ?? (await t.createProject(`alerts ${++rules}`));
  const id = t.deps.ids.next();
  const now = nowMicros(t.deps);
  const full: RuleSpec = {
    devices: [],
    deviceLabels: {},
    projectLabels: {},
    escalationLevels: [
      {
        displayName: 'first',
        actions: [
          { type: 'WEBHOOK', webhook: { url: 'https://hooks.example.org/a', headers: {}, signatureSecretSealed: '' } },
        ],
      },
    ],
    reminderNotifications: false,
    resolvedNotifications: false,
    unacknowledgesAfter: '14400s',
    ...spec,
  };
  await t.deps.store.rules.create({
    id,
    projectId: project,
    displayName: `rule ${rules}`,
    enabled: true,
    spec: JSON.stringify(full),
    createTime: now,
    updateTime: now,
  });
  return { id, project };
}

async function publish(device: DeviceRecord, type: string, data: Record<string, unknown>) {
  const fresh = (await t.deps.store.devices.get(device.id)) ?? device;
  const now = nowMicros(t.deps);
  return t.deps.events.transaction((_tx, emit) =>
    emit(fresh, type, { [type]: { ...data, updateTime: formatTimestamp(now) } }, now),
  );
}
const temperature = (device: DeviceRecord, value: number) => publish(device, 'temperature', { value, samples: [] });

const alertsOf = async (project: string, query = '') => {
  const res = await t.request('GET', `/v2/projects/${project}/alerts${query}`);
  assert.equal(res.status, 200, res.text);
  return res.body.alerts as any[];
};
const FRIDGE = { field: 'temperature', range: { lower: 2, upper: 8, type: 'OUTSIDE' as const } };

describe('range rules', () => {
  it('a fridge rule triggers at once outside 2-8 °C, keeps the last value, and resolves back in range', async () => {
    const { id, project } = await rule({ trigger: FRIDGE });
    const fridge = await t.createDevice({ projectId: project });
    await temperature(fridge, 5);
    assert.deepEqual(await alertsOf(project), []);
    const hot = await temperature(fridge, 9.5);
    let [alert] = await alertsOf(project);
    assert.equal(alert.state, 'TRIGGERED');
    assert.equal(alert.rule, `projects/${project}/rules/${id}`);
    assert.equal(alert.targetName, `projects/${project}/devices/${fridge.id}`);
    assert.equal(alert.lastValue, 9.5);
    assert.equal(alert.escalationLevel, 0);
    assert.deepEqual(
      alert.notifications.map((n: any) => [n.level, n.type, n.target, n.outcome]),
      [[0, 'WEBHOOK', 'https://hooks.example.org/a', 'RETRYING']],
    );
    const [row] = await t.deps.store.outbox.claim(nowMicros(t.deps), nowMicros(t.deps) + 1, 10);
    const payload = JSON.parse(row!.payload);
    assert.equal(payload.headers['X-Sensorcloud-Alert-Transition'], 'TRIGGERED');
    const body = JSON.parse(payload.body);
    assert.equal(body.alert.name, alert.name);
    assert.equal(body.alert.notifications, undefined, 'the alert without its notifications');
    assert.deepEqual(body.event, hot.event, 'the event that caused it');
    await t.deps.store.outbox.delete(row!.id, nowMicros(t.deps) + 1);
    // Still out of range: the same alert, its last value updated; no second alert.
    await temperature(fridge, 12);
    const all = await alertsOf(project);
    assert.equal(all.length, 1);
    assert.equal(all[0].lastValue, 12);
    await temperature(fridge, 4);
    [alert] = await alertsOf(project);
    assert.equal(alert.state, 'RESOLVED');
    assert.match(alert.resolveTime, /Z$/);
    assert.equal(alert.notifications.length, 1, 'no resolved notification unless the rule asks');
    // Out again: a new alert.
    await temperature(fridge, 1);
    assert.deepEqual(
      (await alertsOf(project)).map((a) => a.state),
      ['TRIGGERED', 'RESOLVED'],
    );
    assert.deepEqual(
      (await alertsOf(project, '?state=RESOLVED')).map((a) => a.state),
      ['RESOLVED'],
    );
  });

  it('an e-mail goes to the recipients and the contact group, with its placeholders filled', async () => {
    const project = await t.createProject('placeholders');
    const now = nowMicros(t.deps);
    const groupId = t.deps.ids.next();
    await t.deps.store.contacts.createGroup({
      id: groupId,
      organizationId: t.organizationId,
      displayName: 'Kitchen',
      description: '',
      createTime: now,
      updateTime: now,
    });
    for (const email of ['kari@example.org', 'ola@example.org'])
      await t.deps.store.contacts.create({
        id: t.deps.ids.next(),
        projectId: project,
        contactGroupId: groupId,
        displayName: email,
        email,
        phoneNumber: '',
        createTime: now,
        updateTime: now,
      });
    await rule(
      {
        trigger: FRIDGE,
        escalationLevels: [
          {
            displayName: 'kitchen',
            actions: [
              {
                type: 'EMAIL',
                email: {
                  recipients: ['chef@example.org', 'kari@example.org'],
                  contactGroups: [`organizations/${t.organizationId}/contactGroups/${groupId}`],
                  subject: '$name is at $celsius°C ($fahrenheit°F)',
                  body: 'Rule $rule in $project: $value at level $level ($transition). $unknown stays.',
                },
              },
            ],
          },
        ],
      },
      project,
    );
    const fridge = await t.createDevice({ projectId: project, labels: { name: 'Fridge 4' } });
    await temperature(fridge, 9.5);
    const rows = await t.deps.store.outbox.claim(nowMicros(t.deps), nowMicros(t.deps) + 1, 100);
    const mine = rows.map((r) => JSON.parse(r.payload)).filter((p) => p.subject?.startsWith('Fridge 4'));
    assert.equal(mine.length, 1);
    assert.deepEqual(mine[0], {
      to: ['chef@example.org', 'kari@example.org', 'ola@example.org'],
      subject: 'Fridge 4 is at 9.5°C (49.1°F)',
      text: `Rule rule ${rules} in placeholders: 9.5 at level 1 (TRIGGERED). $unknown stays.`,
    });
    for (const r of rows) await t.deps.store.outbox.delete(r.id, nowMicros(t.deps) + 1);
    const [alert] = await alertsOf(project);
    assert.equal(alert.notifications[0].target, 'chef@example.org, kari@example.org, ola@example.org');
  });

  it('a trigger delay: only when the condition held for the delay, not when it cleared in between', async () => {
    const { project } = await rule({ trigger: FRIDGE, triggerDelay: '600s' });
    const fridge = await t.createDevice({ projectId: project });
    await temperature(fridge, 9);
    t.clock.advance(5 * MINUTE);
    await temperature(fridge, 5); // cleared in between
    t.clock.advance(6 * MINUTE);
    assert.equal(await timers.runOnce(), 0);
    assert.deepEqual(await alertsOf(project), []);
    await temperature(fridge, 9);
    t.clock.advance(9 * MINUTE);
    await temperature(fridge, 10); // still holds, delay not over
    assert.equal(await timers.runOnce(), 0);
    t.clock.advance(MINUTE + 1000);
    assert.equal(await timers.runOnce(), 1, 'the delay is over: the timer triggers it');
    const [alert] = await alertsOf(project);
    assert.equal(alert.state, 'TRIGGERED');
    assert.equal(alert.lastValue, 10);
    assert.equal(await timers.runOnce(), 0, 'once');
  });

  it('triggerCount: the condition must be met by that many events in a row', async () => {
    const { project } = await rule({ trigger: { ...FRIDGE, triggerCount: 3 } });
    const fridge = await t.createDevice({ projectId: project });
    await temperature(fridge, 9);
    await temperature(fridge, 9);
    await temperature(fridge, 5);
    await temperature(fridge, 9);
    await temperature(fridge, 9);
    assert.deepEqual(await alertsOf(project), []);
    await temperature(fridge, 9);
    assert.equal((await alertsOf(project)).length, 1);
  });

  it('states, scopes and schedules: a door open on a labelled device, evaluated only within the schedule', async () => {
    const { project } = await rule({
      trigger: { field: 'contact', contact: 'OPEN' },
      deviceLabels: { room: 'store' },
      // Every day, all day, except that the slot ends a minute before midnight in Oslo.
      schedule: {
        timezone: 'Europe/Oslo',
        inverse: false,
        slots: [
          {
            days: ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'],
            times: [{ start: { hour: 0, minute: 0 }, end: { hour: 23, minute: 59 } }],
          },
        ],
      },
    });
    const other = await t.createDevice({ projectId: project, labels: { room: 'office' } });
    const door = await t.createDevice({ projectId: project, labels: { room: 'store' } });
    await publish(other, 'contact', { state: 'OPEN' });
    assert.deepEqual(await alertsOf(project), [], 'not in scope');
    await publish(door, 'contact', { state: 'CLOSED' });
    assert.deepEqual(await alertsOf(project), []);
    await publish(door, 'contact', { state: 'OPEN' });
    const [alert] = await alertsOf(project);
    assert.equal(alert.lastValue, 'OPEN');
    assert.deepEqual(
      (await alertsOf(project, `?device=${door.id}`)).map((a) => a.name),
      [alert.name],
    );
    assert.deepEqual(await alertsOf(project, `?device=${other.id}`), []);
  });
});

describe('the lifecycle', () => {
  const TWO_LEVELS: Partial<RuleSpec> = {
    escalationLevels: [
      {
        displayName: 'on call',
        actions: [
          { type: 'WEBHOOK', webhook: { url: 'https://hooks.example.org/1', headers: {}, signatureSecretSealed: '' } },
        ],
        escalateAfter: '600s',
      },
      {
        displayName: 'manager',
        actions: [
          { type: 'WEBHOOK', webhook: { url: 'https://hooks.example.org/2', headers: {}, signatureSecretSealed: '' } },
        ],
        escalateAfter: '1800s',
      },
    ],
    reminderNotifications: true,
    resolvedNotifications: true,
    unacknowledgesAfter: '3600s',
  };
  const transitions = (alert: any) => alert.notifications.map((n: any) => `${n.level}:${n.target.slice(-1)}`);

  it('escalates after escalateAfter, reminds at the last level, un-acknowledges, and sends the resolved notification', async () => {
    const { project } = await rule({ trigger: FRIDGE, ...TWO_LEVELS });
    const fridge = await t.createDevice({ projectId: project });
    await temperature(fridge, 20);
    t.clock.advance(10 * MINUTE + 1000);
    assert.equal(await timers.runOnce(), 1);
    let [alert] = await alertsOf(project);
    assert.equal(alert.escalationLevel, 1);
    assert.deepEqual(transitions(alert), ['0:1', '1:2']);
    t.clock.advance(30 * MINUTE + 1000);
    assert.equal(await timers.runOnce(), 1, 'a reminder at the last level');
    [alert] = await alertsOf(project);
    assert.deepEqual(transitions(alert), ['0:1', '1:2', '1:2']);

    // Acknowledged by a project.user: escalation and reminders stop until unacknowledgesAfter.
    const user = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: project });
    const ack = await t.request('POST', `/v2/${alert.name}:acknowledge`, { auth: user.auth, body: {} });
    assert.equal(ack.status, 200, ack.text);
    assert.equal(ack.body.state, 'ACKNOWLEDGED');
    assert.equal(ack.body.acknowledgedBy, user.email);
    t.clock.advance(59 * MINUTE);
    assert.equal(await timers.runOnce(), 0);
    t.clock.advance(MINUTE + 1000);
    assert.equal(await timers.runOnce(), 1, 'un-acknowledged');
    [alert] = await alertsOf(project);
    assert.equal(alert.state, 'TRIGGERED');
    assert.equal(alert.acknowledgedBy, '');
    assert.deepEqual(transitions(alert), ['0:1', '1:2', '1:2', '1:2']);

    await temperature(fridge, 5);
    [alert] = await alertsOf(project);
    assert.equal(alert.state, 'RESOLVED');
    assert.deepEqual(transitions(alert), ['0:1', '1:2', '1:2', '1:2', '1:2'], 'resolved, by the current level');
    const sent = await t.deps.store.outbox.claim(nowMicros(t.deps), nowMicros(t.deps) + 1, 100);
    const kinds = sent
      .filter((r) => JSON.parse(r.payload).body.includes(alert.name))
      .map((r) => JSON.parse(r.payload).headers['X-Sensorcloud-Alert-Transition']);
    assert.deepEqual(kinds, ['TRIGGERED', 'ESCALATED', 'REMINDER', 'UNACKNOWLEDGED', 'RESOLVED']);
    for (const r of sent) await t.deps.store.outbox.delete(r.id, nowMicros(t.deps) + 1);
    assert.equal(await timers.runOnce(), 0, 'a resolved alert has no timer');
  });

  it("a disabled rule's open alert neither escalates nor reminds; acknowledging or resolving twice tells the stream once", async () => {
    const { id, project } = await rule({ trigger: FRIDGE, ...TWO_LEVELS });
    const fridge = await t.createDevice({ projectId: project });
    await temperature(fridge, 20);
    const record = (await t.deps.store.rules.get(id))!;
    await t.deps.store.rules.update({ ...record, enabled: false, updateTime: record.updateTime + 1 });
    t.clock.advance(11 * MINUTE);
    assert.equal(await timers.runOnce(), 0);
    t.clock.advance(31 * MINUTE);
    assert.equal(await timers.runOnce(), 0);
    const [alert] = await alertsOf(project);
    assert.equal(alert.escalationLevel, 0);
    assert.equal(alert.notifications.length, 1);
    const before = streamed.length;
    for (const verb of ['acknowledge', 'acknowledge', 'resolve', 'resolve']) {
      const res = await t.request('POST', `/v2/${alert.name}:${verb}`, { body: {} });
      assert.equal(res.status, 200, res.text);
    }
    await sleep(10);
    assert.deepEqual(
      streamed.slice(before).map((e) => (e.event.data as any).alertChanged.state),
      ['ACKNOWLEDGED', 'RESOLVED'],
    );
  });

  it(':resolve by a user, answers for bad input, and the stream sees every transition', async () => {
    const { project } = await rule({ trigger: FRIDGE });
    const fridge = await t.createDevice({ projectId: project });
    const before = streamed.length;
    await temperature(fridge, 30);
    const [alert] = await alertsOf(project);
    const res = await t.request('POST', `/v2/${alert.name}:resolve`, { body: {} });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.state, 'RESOLVED');
    const again = await t.request('POST', `/v2/${alert.name}:acknowledge`, { body: {} });
    assert.equal(again.status, 400);
    assert.equal((await t.request('GET', `/v2/projects/${project}/alerts/nope`)).status, 404);
    assert.equal((await t.request('GET', `/v2/projects/${project}/alerts?state=OPEN`)).status, 400);
    await sleep(10);
    const seen = streamed.slice(before).map((e) => [e.event.targetName, (e.event.data as any).alertChanged.state]);
    assert.deepEqual(seen, [
      [alert.targetName, 'TRIGGERED'],
      [alert.targetName, 'RESOLVED'],
    ]);
    const ev = streamed[streamed.length - 1]!.event;
    assert.equal(ev.eventType, 'alertChanged');
    assert.equal((ev.data as any).alertChanged.notifications, undefined);
    // Not in the device's history.
    const history = await t.request('GET', `/v2/projects/${project}/devices/${fridge.id}/events`);
    assert.ok(history.body.events.every((e: any) => e.eventType !== 'alertChanged'));
  });
});

describe('two processes', () => {
  it('on a store several processes share, a due timer fires once: one alert, one escalation, one notification each', {
    skip: testStoreKind() !== 'postgres' && 'PostgreSQL only: one process owns a SQLite store',
  }, async () => {
    const { project } = await rule({
      trigger: FRIDGE,
      triggerDelay: '60s',
      escalationLevels: [
        {
          displayName: 'one',
          actions: [
            {
              type: 'WEBHOOK',
              webhook: { url: 'https://hooks.example.org/x', headers: {}, signatureSecretSealed: '' },
            },
          ],
          escalateAfter: '60s',
        },
        {
          displayName: 'two',
          actions: [
            {
              type: 'WEBHOOK',
              webhook: { url: 'https://hooks.example.org/y', headers: {}, signatureSecretSealed: '' },
            },
          ],
        },
      ],
    });
    const fridge = await t.createDevice({ projectId: project });
    await temperature(fridge, 30);
    // A second process: its own store over the same database, its own timers, run at the same moment as ours.
    const other = await reopenTestStore(t.dataDir);
    try {
      const theirs = createAlertTimers({ ...t.deps, store: other, announce: () => {}, notify: () => {} });
      t.clock.advance(MINUTE + 1000);
      const fired = await Promise.all([timers.runOnce(), theirs.runOnce(), timers.runOnce(), theirs.runOnce()]);
      assert.equal(
        fired.reduce((a, b) => a + b, 0),
        1,
        `the delay's end fired once in all: ${fired}`,
      );
      t.clock.advance(MINUTE + 1000);
      const escalated = await Promise.all([timers.runOnce(), theirs.runOnce(), timers.runOnce(), theirs.runOnce()]);
      assert.equal(
        escalated.reduce((a, b) => a + b, 0),
        1,
        `the escalation fired once in all: ${escalated}`,
      );
    } finally {
      await other.close();
    }
    const alerts = await alertsOf(project);
    assert.equal(alerts.length, 1);
    assert.deepEqual(
      alerts[0].notifications.map((n: any) => n.target),
      ['https://hooks.example.org/x', 'https://hooks.example.org/y'],
    );
  });
});

describe('sensor offline', () => {
  it('a sensor silent for the trigger delay is offline; its next event brings it back; a cloud connector is not a sensor', async () => {
    const { project } = await rule({
      trigger: { field: 'connectionStatus', connection: 'SENSOR_OFFLINE' },
      triggerDelay: '1800s',
    });
    const sensor = await t.createDevice({ projectId: project });
    await temperature(sensor, 20);
    const ccon = await t.createDevice({ projectId: project, type: 'ccon', productNumber: '102082' });
    const fresh = await timers.runOnce();
    assert.equal(fresh, 0);
    t.clock.advance(29 * MINUTE);
    await timers.runOnce();
    assert.deepEqual(await alertsOf(project), [], 'heard from 29 minutes ago');
    t.clock.advance(2 * MINUTE);
    await timers.runOnce();
    let alerts = await alertsOf(project);
    assert.deepEqual(
      alerts.map((a) => [a.targetName, a.state, a.lastValue]),
      [[`projects/${project}/devices/${sensor.id}`, 'TRIGGERED', 'OFFLINE']],
    );
    assert.ok(!alerts.some((a) => a.targetName.endsWith(ccon.id)));
    // Still silent: one alert, not one per check.
    t.clock.advance(5 * MINUTE);
    await timers.runOnce();
    assert.equal((await alertsOf(project)).length, 1);
    await publish(sensor, 'networkStatus', {
      signalStrength: 80,
      rssi: -70,
      cloudConnectors: [],
      transmissionMode: 'LOW_POWER_STANDARD_MODE',
    });
    alerts = await alertsOf(project);
    assert.equal(alerts[0].state, 'RESOLVED', 'back online with its next event');
  });
});

describe('the dataConnector trigger', () => {
  it('fires after the delay while a connector fails, resolves on its next success; SYSTEM_DISABLED fires at once', async () => {
    const { project } = await rule({ trigger: { field: 'dataConnector' }, triggerDelay: '900s' });
    const c = { id: 'c-failing', projectId: project };
    await t.deps.store.dataConnectors.create({
      id: c.id,
      projectId: project,
      displayName: '',
      status: 'ACTIVE',
      events: [],
      labels: [],
      url: 'https://example.org',
      headers: {},
      signatureSecretSealed: '',
      failingSince: null,
      createTime: 0,
      updateTime: 0,
    });
    t.deps.health.failing(c);
    // The health reports are applied in the background: wait until the pending condition is there.
    await until(
      'the failing condition',
      async () => (await t.deps.store.conditions.listForTarget(c.id)).length > 0,
      5000,
    );
    t.clock.advance(14 * MINUTE);
    assert.equal(await timers.runOnce(), 0);
    t.clock.advance(MINUTE + 1000);
    assert.equal(await timers.runOnce(), 1);
    let [alert] = await alertsOf(project);
    assert.equal(alert.targetName, `projects/${project}/dataconnectors/${c.id}`);
    assert.equal(alert.lastValue, 'FAILING');
    t.deps.health.recovered(c);
    await until('resolved', async () => (await alertsOf(project))[0].state === 'RESOLVED', 5000);
    [alert] = await alertsOf(project);
    assert.equal(alert.state, 'RESOLVED');
    t.deps.health.disabled(c);
    await until('triggered', async () => (await alertsOf(project))[0].state === 'TRIGGERED', 5000);
    [alert] = await alertsOf(project);
    assert.equal(alert.state, 'TRIGGERED');
    assert.equal(alert.lastValue, 'SYSTEM_DISABLED');
    t.deps.alerts.connectorEnabled(c);
    await until('resolved again', async () => (await alertsOf(project))[0].state === 'RESOLVED', 5000);
    [alert] = await alertsOf(project);
    assert.equal(alert.state, 'RESOLVED');
  });
});
