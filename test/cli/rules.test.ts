// Notification rules and alerts (extensions §X5) from the CLI, against a real service (with an SMTP URL, so e-mail
// actions are accepted) notifying a real HTTPS receiver: `rules create` from options (a range, a state, the scope,
// durations, one escalation level) and from a file, `rules update` (only what was given, with update_mask; the first
// level edited in place, secrets kept), enable, disable, delete; an event out of range raising an alert that
// `alerts list|get|ack|resolve|watch` show and change; usage errors (exit 2) before anything is sent, the service's
// 400 passed through (exit 1); completion of the new commands; and the option parsing on its own.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { durationCell, redactRule, scheduleText, triggerText } from '../../src/cli/commands/rules.ts';
import { UsageError } from '../../src/cli/errors.ts';
import {
  createBody,
  createTrigger,
  parseLabels,
  parseRange,
  rangeOf,
  ruleDuration,
  updateLevels,
  updatePatch,
  updateTrigger,
} from '../../src/cli/rule-input.ts';
import type { EscalationLevel, Rule } from '../../src/wire/rules.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { freePort } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { cliCommand, startService, waitFor, type Service } from './harness.ts';

let s: Service;
let receiver: Receiver;
/** A temperature device labelled fridge, and another without the label. */
let fridge = '';
let fridgeId = '';
let other = '';
/** The rule `create` makes from options; the updates change it. */
let rule = '';
let ruleId = '';

const SECRET = 'webhook-signing-secret-0123456789';
const SCHEDULE = {
  timezone: 'Europe/Oslo',
  inverse: false,
  slots: [
    {
      days: ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday'],
      times: [{ start: { hour: 8, minute: 0 }, end: { hour: 17, minute: 0 } }],
    },
  ],
};

/** The rule as the service has it (Basic Auth): secrets in clear. */
async function stored(name = rule): Promise<Rule> {
  const res = await s.api('GET', name);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

const ruleCount = async () => (await s.api('GET', `projects/${s.projectId}/rules`)).body.rules.length as number;

let setup: Promise<void> | null = null;
const ready = () =>
  (setup ??= (async () => {
    receiver = await startReceiver();
    s = await startService({
      SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
      SENSORCLOUD_CA_FILE: testTls().caFile,
      // E-mail actions are accepted with a relay configured; nothing listens there, so they stay RETRYING.
      SENSORCLOUD_SMTP_URL: `smtp://127.0.0.1:${await freePort()}`,
    });
    const login = await s.run(['login', '--from', `${s.dataDir}/bootstrap.json`]);
    assert.equal(login.code, 0, login.stderr);
    fridge = (
      await s.json(['devices', 'create', '--type', 'temperature', '--label', 'name=Fridge 4', '--label', 'fridge='])
    ).name;
    fridgeId = fridge.split('/').pop()!;
    other = (await s.json(['devices', 'create', '--type', 'temperature'])).name;
  })());
after(async () => {
  await receiver?.close();
});

describe('happy', () => {
  before(ready);

  it('create a fridge rule from options; get --json shows it, its secret redacted', async () => {
    const scheduleFile = join(s.dataDir, 'schedule.json');
    writeFileSync(scheduleFile, JSON.stringify(SCHEDULE));
    const created = await s.json([
      'rules',
      'create',
      '--name',
      'Fridge 4',
      '--field',
      'temperature',
      '--outside',
      '2..8',
      '--device',
      fridgeId,
      '--label',
      'fridge',
      '--label',
      'site=oslo',
      '--trigger-delay',
      '15m',
      '--trigger-count',
      '2',
      '--email',
      'Kitchen@example.org',
      '--email',
      'chef@example.org',
      '--subject',
      'Fridge $name at $celsius °C',
      '--body',
      'Check the fridge.',
      '--webhook',
      'https://receiver.test/alerts',
      '--webhook-secret',
      SECRET,
      '--webhook-header',
      'X-Api-Key: k3y',
      '--escalate-after',
      '30m',
      '--reminder-notifications',
      '--resolved-notifications',
      '--schedule-file',
      scheduleFile,
    ]);
    rule = created.name;
    ruleId = rule.split('/').pop()!;
    const got = await s.json(['rules', 'get', ruleId]);
    assert.deepEqual(got, created);
    const { name, createTime, updateTime, ...fields } = got;
    assert.match(name, new RegExp(`^projects/${s.projectId}/rules/[A-Za-z0-9_.~-]+$`));
    assert.equal(createTime, updateTime);
    const nulls = { sms: null, corrigo: null, serviceChannel: null, phoneCall: null, signalTower: null };
    assert.deepEqual(fields, {
      enabled: true,
      displayName: 'Fridge 4',
      devices: [fridge],
      deviceLabels: { fridge: '', site: 'oslo' },
      projectLabels: {},
      trigger: {
        field: 'temperature',
        range: { lower: 2, upper: 8, type: 'OUTSIDE', filter: null },
        presence: null,
        motion: null,
        occupancy: null,
        contact: null,
        connection: null,
        triggerCount: 2,
      },
      escalationLevels: [
        {
          displayName: '',
          actions: [
            {
              type: 'EMAIL',
              ...nulls,
              email: {
                recipients: ['kitchen@example.org', 'chef@example.org'],
                contactGroups: [],
                subject: 'Fridge $name at $celsius °C',
                body: 'Check the fridge.',
              },
              webhook: null,
            },
            {
              type: 'WEBHOOK',
              ...nulls,
              email: null,
              webhook: {
                url: 'https://receiver.test/alerts',
                signatureSecret: '<redacted>',
                headers: { 'X-Api-Key': '<redacted>' },
              },
            },
          ],
          escalateAfter: '1800s',
        },
      ],
      schedule: SCHEDULE,
      triggerDelay: '900s',
      reminderNotifications: true,
      resolvedNotifications: true,
      unacknowledgesAfter: null,
      actions: [],
    });
    const webhook = (await stored()).escalationLevels[0]!.actions[1]!.webhook!;
    assert.deepEqual([webhook.signatureSecret, webhook.headers], [SECRET, { 'X-Api-Key': 'k3y' }], 'stored in clear');
  });

  it('get and list for people; --quiet prints the name', async () => {
    const [table, list, quiet] = await Promise.all([
      s.run(['rules', 'get', ruleId]),
      s.run(['rules', 'list']),
      s.run(['rules', 'get', rule, '-q']),
    ]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^displayName\s+Fridge 4$/m);
    assert.match(table.stdout, /^enabled\s+yes$/m);
    assert.match(table.stdout, /^trigger\s+temperature outside 2\.\.8 \(2 in a row\)$/m);
    assert.match(table.stdout, new RegExp(`^devices\\s+${fridgeId}$`, 'm'));
    assert.match(table.stdout, /^deviceLabels\s+fridge \(any value\), site=oslo$/m);
    assert.match(table.stdout, /^triggerDelay\s+15m \(900s\)$/m);
    assert.match(table.stdout, /^schedule\s+Mon,Tue,Wed,Thu,Fri 08:00-17:00 \(Europe\/Oslo\)$/m);
    assert.match(
      table.stdout,
      /^level 0\s+EMAIL kitchen@example\.org, chef@example\.org \(subject "Fridge \$name at \$celsius °C"\); WEBHOOK https:\/\/receiver\.test\/alerts \(signed; headers X-Api-Key\); reminds every 30m$/m,
    );
    assert.match(table.stdout, /^unacknowledgesAfter\s+4h \(the default\)$/m);
    assert.ok(!table.stdout.includes(SECRET) && !table.stdout.includes('k3y'), 'no secret printed');
    const [header, row] = list.stdout.trimEnd().split('\n');
    assert.match(header!, /^ID\s+DISPLAY NAME\s+ENABLED\s+TRIGGER\s+SCOPE\s+DELAY\s+ACTIONS$/);
    assert.match(
      row!,
      new RegExp(
        `^${ruleId}\\s+Fridge 4\\s+yes\\s+temperature outside 2\\.\\.8 \\(2 in a row\\)\\s+1 device \\+ fridge,site=oslo\\s+15m\\s+EMAIL,WEBHOOK$`,
      ),
    );
    assert.deepEqual([quiet.code, quiet.stdout], [0, `${rule}\n`]);
  });

  it('ranges, states and connection from options', async () => {
    const trigger = async (...args: string[]) => {
      const r = await s.json(['rules', 'create', ...args, '--webhook', 'https://receiver.test/x']);
      assert.equal((await s.run(['rules', 'delete', r.name])).code, 0);
      const t = r.trigger;
      return [t.field, t.range, t.presence ?? t.motion ?? t.occupancy ?? t.contact ?? t.connection];
    };
    const range = (lower: number | null, upper: number | null, type: string) => ({ lower, upper, type, filter: null });
    assert.deepEqual(await trigger('--field', 'humidity', '--within', '18..24'), [
      'humidity',
      range(18, 24, 'WITHIN'),
      null,
    ]);
    assert.deepEqual(await trigger('--field', 'temperature', '--above', '8'), [
      'temperature',
      range(null, 8, 'OUTSIDE'),
      null,
    ]);
    assert.deepEqual(await trigger('--field', 'temperature', '--below', '-5.5'), [
      'temperature',
      range(-5.5, null, 'OUTSIDE'),
      null,
    ]);
    assert.deepEqual(await trigger('--field', 'co2', '--within', '..1000'), ['co2', range(null, 1000, 'WITHIN'), null]);
    assert.deepEqual(await trigger('--state', 'OPEN'), ['contact', null, 'OPEN'], 'the field from the state');
    assert.deepEqual(await trigger('--field', 'waterPresent', '--state', 'present'), ['waterPresent', null, 'PRESENT']);
    assert.deepEqual(await trigger('--connection', 'SENSOR_OFFLINE'), ['connectionStatus', null, 'SENSOR_OFFLINE']);
    assert.deepEqual(await trigger('--field', 'touch'), ['touch', null, null]);
  });

  it('create --from-file takes the whole body; options replace its fields', async () => {
    const file = join(s.dataDir, 'rule.json');
    writeFileSync(
      file,
      JSON.stringify({
        displayName: 'From a file',
        trigger: { field: 'temperature', range: { lower: 2, upper: 8, type: 'OUTSIDE' } },
        escalationLevels: [
          {
            displayName: 'Kitchen',
            escalateAfter: '3600s',
            actions: [{ type: 'EMAIL', email: { recipients: ['kitchen@example.org'] } }],
          },
          {
            displayName: 'Facilities',
            actions: [{ type: 'WEBHOOK', webhook: { url: 'https://receiver.test/f', signatureSecret: 'x' } }],
          },
        ],
      }),
    );
    const plain = await s.json(['rules', 'create', '--from-file', file]);
    assert.equal(plain.displayName, 'From a file');
    assert.deepEqual(
      plain.escalationLevels.map((l: EscalationLevel) => [l.displayName, l.escalateAfter]),
      [
        ['Kitchen', '3600s'],
        ['Facilities', null],
      ],
    );
    const table = await s.run(['rules', 'get', plain.name]);
    assert.match(table.stdout, /^level 0\s+"Kitchen": EMAIL kitchen@example\.org; escalates after 1h$/m);
    assert.match(table.stdout, /^level 1\s+"Facilities": WEBHOOK https:\/\/receiver\.test\/f \(signed\)$/m);

    const changed = await s.json([
      'rules',
      'create',
      '--from-file',
      file,
      '--name',
      'Five',
      '--above',
      '5',
      '--disabled',
    ]);
    assert.deepEqual(
      [changed.displayName, changed.enabled, changed.trigger.range, changed.escalationLevels.length],
      ['Five', false, { lower: null, upper: 5, type: 'OUTSIDE', filter: null }, 2],
    );
    // The same from standard input.
    const piped = await s.run(['rules', 'create', '--from-file', '-', '-q'], {
      input: JSON.stringify({
        trigger: { field: 'touch' },
        actions: [{ type: 'WEBHOOK', webhook: { url: 'https://receiver.test/t' } }],
      }),
    });
    assert.equal(piped.code, 0, piped.stderr);
    for (const r of [plain.name, changed.name, piped.stdout.trim()])
      assert.equal((await s.run(['rules', 'delete', r])).code, 0);
  });

  it('update sends only what was given: a trigger key, the first level edited in place, secrets kept', async () => {
    const before = await stored();
    const range = await s.json(['rules', 'update', ruleId, '--outside', '1..6', '--trigger-delay', '30m']);
    assert.deepEqual(range.trigger.range, { lower: 1, upper: 6, type: 'OUTSIDE', filter: null });
    assert.equal(range.trigger.triggerCount, 2, 'the count stays');
    assert.equal(range.triggerDelay, '1800s');
    assert.deepEqual(range.schedule, SCHEDULE, 'the rest stays');

    const subject = await s.json(['rules', 'update', ruleId, '--subject', 'Too warm: $name']);
    assert.deepEqual(subject.escalationLevels[0].actions[0].email, {
      ...before.escalationLevels[0]!.actions[0]!.email,
      subject: 'Too warm: $name',
    });

    const url = await s.json(['rules', 'update', ruleId, '--webhook', 'https://receiver.test/new']);
    assert.equal(url.escalationLevels[0].actions[1].webhook.url, 'https://receiver.test/new');
    const kept = (await stored()).escalationLevels[0]!.actions[1]!.webhook!;
    assert.deepEqual(
      [kept.url, kept.signatureSecret, kept.headers],
      ['https://receiver.test/new', SECRET, { 'X-Api-Key': 'k3y' }],
      'the secret and headers of the webhook it replaced',
    );

    const emails = await s.json(['rules', 'update', ruleId, '--email', 'ops@example.org', '--escalate-after', '0']);
    assert.deepEqual(emails.escalationLevels[0].actions[0].email, {
      recipients: ['ops@example.org'],
      contactGroups: [],
      subject: 'Too warm: $name',
      body: 'Check the fridge.',
    });
    assert.equal(emails.escalationLevels[0].escalateAfter, null);

    const field = await s.json(['rules', 'update', ruleId, '--field', 'contact', '--state', 'OPEN']);
    assert.deepEqual(
      [field.trigger.field, field.trigger.contact, field.trigger.range, field.trigger.triggerCount],
      ['contact', 'OPEN', null, 2],
      "a new field leaves none of the old field's criteria",
    );

    const cleared = await s.json([
      'rules',
      'update',
      ruleId,
      '--all-devices',
      '--clear-labels',
      '--clear-schedule',
      '--remove-email',
      '--no-resolved-notifications',
      '--name',
      'Fridge door',
    ]);
    assert.deepEqual(
      [cleared.devices, cleared.deviceLabels, cleared.schedule, cleared.resolvedNotifications, cleared.displayName],
      [[], {}, null, false, 'Fridge door'],
    );
    assert.deepEqual(
      cleared.escalationLevels[0].actions.map((a: { type: string }) => a.type),
      ['WEBHOOK'],
    );
    assert.equal((await stored()).escalationLevels[0]!.actions[0]!.webhook!.signatureSecret, SECRET);

    const file = await s.run(['rules', 'update', ruleId, '--from-file', '-', '--trigger-count', '3'], {
      input: JSON.stringify({
        triggerDelay: '60s',
        trigger: { field: 'temperature', range: { lower: 2, upper: 8, type: 'OUTSIDE' } },
      }),
    });
    assert.equal(file.code, 0, file.stderr);
    assert.match(file.stdout, /^trigger\s+temperature outside 2\.\.8 \(3 in a row\)$/m);
    assert.match(file.stdout, /^triggerDelay\s+1m \(60s\)$/m);
  });

  it('disable and enable: a one-line confirmation; --json prints the rule', async () => {
    const disabled = await s.run(['rules', 'disable', ruleId]);
    assert.deepEqual([disabled.code, disabled.stdout], [0, `${rule} is disabled.\n`]);
    assert.equal((await stored()).enabled, false);
    assert.match((await s.run(['rules', 'get', ruleId])).stdout, /^enabled\s+no$/m);
    const enabled = await s.json(['rules', 'enable', rule]);
    assert.deepEqual([enabled.name, enabled.enabled], [rule, true]);
    assert.equal((await s.run(['rules', 'enable', ruleId, '-q'])).stdout, `${rule}\n`);
  });

  it('an event out of range raises an alert: list, get with its notifications, ack, resolve', async () => {
    const alarm = await s.json([
      'rules',
      'create',
      '--name',
      'Fridge alarm',
      '--field',
      'temperature',
      '--outside',
      '2..8',
      '--device',
      fridgeId,
      '--webhook',
      receiver.url,
      '--webhook-secret',
      SECRET,
      '--resolved-notifications',
    ]);
    const alarmId = alarm.name.split('/').pop();
    assert.equal((await s.run(['events', 'publish', fridge, 'temperature', '--value', '5'])).code, 0);
    assert.deepEqual(await s.json(['alerts', 'list']), [], 'in range: no alert');
    assert.match((await s.run(['alerts', 'list'])).stderr, /^no alerts$/m);

    assert.equal((await s.run(['events', 'publish', fridge, 'temperature', '--value', '9.5'])).code, 0);
    assert.equal((await s.run(['events', 'publish', other, 'temperature', '--value', '9.5'])).code, 0);
    const alerts = await s.json(['alerts', 'list']);
    assert.equal(alerts.length, 1, 'only the device of the rule');
    const alert = alerts[0];
    const alertId = alert.name.split('/').pop();
    assert.deepEqual(
      [alert.rule, alert.targetName, alert.state, alert.escalationLevel, alert.lastValue, alert.acknowledgedBy],
      [alarm.name, fridge, 'TRIGGERED', 0, 9.5, ''],
    );
    const [byRule, byDevice, byOther, resolved] = await Promise.all([
      s.json(['alerts', 'list', '--rule', alarmId, '--state', 'TRIGGERED,ACKNOWLEDGED']),
      s.json(['alerts', 'list', '--device', fridge]),
      s.json(['alerts', 'list', '--device', other]),
      s.json(['alerts', 'list', '--state', 'resolved']),
    ]);
    assert.deepEqual([byRule.length, byDevice.length, byOther.length, resolved.length], [1, 1, 0, 0]);
    const table = await s.run(['alerts', 'list']);
    assert.match(
      table.stdout.split('\n')[0]!,
      /^ID\s+STATE\s+RULE\s+TARGET\s+LEVEL\s+LAST VALUE\s+TRIGGERED\s+ACKNOWLEDGED BY$/,
    );
    assert.match(
      table.stdout,
      new RegExp(`^${alertId}\\s+TRIGGERED\\s+Fridge alarm\\s+${fridgeId}\\s+0\\s+9\\.5\\s+\\S+Z\\s+-$`, 'm'),
    );

    // The webhook is sent and its notification shows SENT.
    const [pushed] = await receiver.waitFor(1, 15_000);
    assert.equal(pushed!.headers['x-sensorcloud-alert-transition'], 'TRIGGERED');
    const sent = await waitFor('the notification to be SENT', async () => {
      const a = await s.json(['alerts', 'get', alertId]);
      return a.notifications[0]?.outcome === 'SENT' ? a : undefined;
    });
    assert.deepEqual(
      sent.notifications.map((n: any) => [n.level, n.type, n.target, n.outcome, n.error]),
      [[0, 'WEBHOOK', receiver.url, 'SENT', '']],
    );
    const got = await s.run(['alerts', 'get', alertId]);
    assert.match(got.stdout, /^state\s+TRIGGERED$/m);
    assert.match(got.stdout, /^lastValue\s+9\.5$/m);
    assert.match(got.stdout, /^acknowledgedBy\s+-$/m);
    assert.match(got.stdout, /^Notifications \(1\)$/m);
    assert.match(got.stdout, /^TIME\s+LEVEL\s+TYPE\s+TARGET\s+OUTCOME\s+ERROR$/m);
    assert.match(got.stdout, new RegExp(`^\\S+Z\\s+0\\s+WEBHOOK\\s+${literal(receiver.url)}\\s+SENT$`, 'm'));

    const ack = await s.run(['alerts', 'ack', alertId]);
    assert.equal(ack.code, 0, ack.stderr);
    assert.equal(ack.stdout, `${alert.name} is ACKNOWLEDGED by ${s.boot.serviceAccount.email}.\n`);
    const again = await s.json(['alerts', 'acknowledge', alert.name]);
    assert.deepEqual([again.state, again.acknowledgedBy], ['ACKNOWLEDGED', s.boot.serviceAccount.email]);
    assert.notEqual(again.acknowledgeTime, '');

    const resolve = await s.run(['alerts', 'resolve', alertId]);
    assert.equal(resolve.code, 0, resolve.stderr);
    assert.equal(resolve.stdout, `${alert.name} is RESOLVED.\n`);
    const requests = await receiver.waitFor(2, 15_000);
    assert.equal(requests[1]!.headers['x-sensorcloud-alert-transition'], 'RESOLVED');
    const after = await s.json(['alerts', 'list', '--state', 'RESOLVED', '--rule', alarm.name]);
    assert.deepEqual([after.length, after[0].state, after[0].resolveTime !== ''], [1, 'RESOLVED', true]);

    const late = await s.run(['alerts', 'ack', alertId]);
    assert.deepEqual([late.code, late.stdout], [1, '']);
    assert.equal(late.stderr, 'error: the alert is RESOLVED: there is nothing to acknowledge\n');
  });

  it('alerts watch prints each change of an alert as it happens (NDJSON with --json)', async () => {
    const watched = await s.json([
      'rules',
      'create',
      '--name',
      'Watched',
      '--field',
      'temperature',
      '--above',
      '30',
      '--device',
      other,
      '--webhook',
      receiver.url,
    ]);
    const [node, ...cli] = cliCommand();
    const watch = spawn(node!, [...cli, 'alerts', 'watch', '--rule', watched.name, '--count', '2', '--json'], {
      env: s.cliEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    watch.stdout.on('data', (d: Buffer) => (out += d.toString()));
    watch.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number>((resolve) => watch.once('close', (code) => resolve(code ?? -1)));
    try {
      await waitFor('the watch to open', () => (/following the alerts/.test(err) ? true : undefined));
      // An alert of another rule is not printed.
      assert.equal((await s.run(['events', 'publish', fridge, 'temperature', '--value', '12'])).code, 0);
      assert.equal((await s.run(['events', 'publish', other, 'temperature', '--value', '31'])).code, 0);
      const [alert] = await s.json(['alerts', 'list', '--rule', watched.name]);
      assert.equal((await s.run(['alerts', 'ack', alert.name])).code, 0);
      assert.equal(await exited, 0, err);
    } finally {
      watch.kill('SIGKILL');
    }
    const lines = out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((a) => [a.rule, a.targetName, a.state, a.lastValue]),
      [
        [watched.name, other, 'TRIGGERED', 31],
        [watched.name, other, 'ACKNOWLEDGED', 31],
      ],
    );
    assert.equal(lines[0].notifications, undefined, 'the alert without its notifications');
  });

  it('delete: the rule goes with its alerts', async () => {
    const [alert] = await s.json(['alerts', 'list', '--rule', rule]);
    const deleted = await s.run(['rules', 'delete', ruleId]);
    assert.deepEqual([deleted.code, deleted.stdout], [0, `Deleted ${rule}.\n`]);
    assert.equal((await s.api('GET', rule)).status, 404);
    if (alert) assert.equal((await s.run(['alerts', 'get', alert.name])).code, 1);
    const missing = await s.run(['rules', 'get', ruleId]);
    assert.deepEqual([missing.code, missing.stdout], [1, '']);
    assert.match(missing.stderr, /^error: .*not found/);
  });
});

describe('errors', () => {
  before(ready);

  it('exit 2 for options that cannot be read and contradictions, before anything is sent', async () => {
    const count = await ruleCount();
    const hook = ['--webhook', 'https://receiver.test/x'];
    const t = ['--field', 'temperature'];
    const existing = (await s.json(['rules', 'create', ...t, '--above', '9', ...hook])).name;
    const updateTime = (await stored(existing)).updateTime;
    const runs = await Promise.all([
      s.run(['rules', 'create', ...t, '--outside', '2-8', ...hook]),
      s.run(['rules', 'create', ...t, '--above', 'warm', ...hook]),
      s.run(['rules', 'create', ...t, '--outside', '2..8', '--within', '3..4', ...hook]),
      s.run(['rules', 'create', ...t, '--outside', '2..8', '--trigger-delay', '15', ...hook]),
      s.run(['rules', 'create', ...t, '--outside', '2..8', '--trigger-count', 'two', ...hook]),
      s.run(['rules', 'create', ...t, '--outside', '2..8']),
      s.run(['rules', 'create', '--outside', '2..8', ...hook]),
      s.run(['rules', 'create', '--state', 'PRESENT', ...hook]),
      s.run(['rules', 'create', ...t, '--state', 'OPEN', ...hook]),
      s.run(['rules', 'create', '--field', 'contact', '--above', '3', ...hook]),
      s.run(['rules', 'create', ...t, '--outside', '2..8', '--subject', 'x', ...hook]),
      s.run(['rules', 'create', ...t, '--outside', '2..8', '--label', '=fridge', ...hook]),
      s.run(['rules', 'create', '--from-file', join(s.dataDir, 'nothing.json')]),
      s.run(['rules', 'create', '--from-file', '-'], { input: '{"trigger": ' }),
      s.run(['rules', 'create', '--from-file', '-'], {
        input: JSON.stringify({
          trigger: { field: 'touch' },
          escalationLevels: [
            { actions: [{ type: 'WEBHOOK', webhook: { url: 'https://x.test', signatureSecret: '<redacted>' } }] },
          ],
        }),
      }),
      s.run(['rules', 'create', ...t, '--outside', '2..8', '--device', 'projects/x/connectors/y', ...hook]),
      s.run(['rules', 'update', existing]),
      s.run(['rules', 'update', existing, '--state', 'OPEN']),
      s.run(['rules', 'update', existing, '--subject', 'no e-mail action']),
      s.run(['rules', 'update', existing, '--device', fridgeId, '--all-devices']),
      s.run(['alerts', 'list', '--limit', '0']),
      s.run(['alerts', 'get']),
    ]);
    assert.deepEqual(
      runs.map((r) => r.code),
      Array(runs.length).fill(2),
      runs.map((r) => r.stderr).join(''),
    );
    for (const r of runs) assert.equal(r.stdout, '');
    const errors = runs.map((r) => r.stderr);
    assert.equal(errors[0], 'error: --outside must be a range lower..upper (2..8, ..8 or 2..), got "2-8"\n');
    assert.equal(errors[1], 'error: --above must be a number, got "warm"\n');
    assert.equal(errors[2], 'error: give one of --outside, --within, not several\n');
    assert.match(errors[3]!, /--trigger-delay must be a duration such as 0, 90s, 30m, 24h or 7d, got "15"/);
    assert.match(errors[4]!, /--trigger-count must be a number, got "two"/);
    assert.match(errors[5]!, /give what the rule does: --email, --contact-group or --webhook/);
    assert.match(errors[6]!, /give --field/);
    assert.match(errors[7]!, /give --field objectPresent or --field waterPresent with --state PRESENT/);
    assert.match(errors[8]!, /--state does not apply to temperature/);
    assert.match(errors[9]!, /--above does not apply to contact/);
    assert.match(errors[10]!, /--subject and --body go with --email or --contact-group/);
    assert.match(errors[11]!, /--label must be key=value or key, got "=fridge"/);
    assert.match(errors[12]!, /--from-file: cannot read .*nothing\.json: ENOENT/);
    assert.match(errors[13]!, /--from-file: - is not JSON/);
    assert.match(errors[14]!, /escalationLevels\[0\]\.actions\[0\]\.webhook\.signatureSecret is <redacted>/);
    assert.match(errors[15]!, /is not a devices name/);
    assert.match(errors[16]!, /nothing to change/);
    assert.match(errors[17]!, /--state does not apply to temperature/);
    assert.match(errors[18]!, /the rule's first level has no e-mail action/);
    assert.match(errors[19]!, /give --device or --all-devices, not both/);
    assert.match(errors[20]!, /--limit must be an integer of at least 1/);
    assert.match(errors[21]!, /missing required argument 'alert'/);
    assert.equal(await ruleCount(), count + 1, 'nothing was created');
    assert.equal((await stored(existing)).updateTime, updateTime, 'nothing was changed');
    assert.equal((await s.run(['rules', 'delete', existing])).code, 0);
  });

  it("exit 1 with the service's message for what it refuses; nothing is created", async () => {
    const count = await ruleCount();
    const hook = ['--webhook', 'https://receiver.test/x'];
    const runs = await Promise.all([
      s.run(['rules', 'create', '--field', 'temp', '--above', '8', ...hook]),
      s.run(['rules', 'create', '--field', 'temperature', '--outside', '8..2', ...hook]),
      s.run(['rules', 'create', '--field', 'temperature', '--above', '8', '--webhook', 'http://receiver.test/x']),
      s.run(['rules', 'create', '--field', 'temperature', '--above', '8', '--email', 'not-an-address']),
      s.run(['rules', 'create', '--field', 'temperature', '--above', '8', '--trigger-delay', '31d', ...hook]),
      s.run([
        'rules',
        'create',
        '--field',
        'temperature',
        '--above',
        '8',
        '--device',
        'emu00000000000000000000',
        ...hook,
      ]),
      s.run(['rules', 'create', '--field', 'temperature', '--above', '8', '--contact-group', 'nogroup', ...hook]),
      s.run(['alerts', 'list', '--state', 'OPEN']),
      s.run(['alerts', 'get', 'cvq2b1r0l4l9s3f2a9s0']),
    ]);
    assert.deepEqual(
      runs.map((r) => r.code),
      Array(runs.length).fill(1),
      runs.map((r) => r.stderr).join(''),
    );
    for (const r of runs) assert.equal(r.stdout, '');
    const errors = runs.map((r) => r.stderr);
    assert.match(errors[0]!, /^error: trigger\.field: unknown field "temp"/);
    assert.match(errors[1]!, /^error: trigger\.range\.lower \(8\) must not be above trigger\.range\.upper \(2\)/);
    assert.match(errors[2]!, /^error: escalationLevels\[0\]\.actions\[0\]\.webhook\.url must use https:\/\//);
    assert.match(
      errors[3]!,
      /^error: escalationLevels\[0\]\.actions\[0\]\.email\.recipients\[0\] is not an e-mail address/,
    );
    assert.match(errors[4]!, /^error: triggerDelay must be from "0s" to "2592000s"/);
    assert.match(errors[5]!, /^error: devices\[0\]: no device .* in this project/);
    assert.match(
      errors[6]!,
      /^error: escalationLevels\[0\]\.actions\[0\]\.email\.contactGroups\[0\]: no contact group/,
    );
    assert.match(errors[7]!, /^error: state: unknown state "OPEN"/);
    assert.match(errors[8]!, /^error: alert not found/);
    assert.equal(await ruleCount(), count, 'nothing was created');
  });
});

describe('completion', () => {
  before(ready);

  it('bash completes the new commands and their options', async () => {
    const bash = await s.run(['completion', 'bash']);
    assert.equal(bash.code, 0, bash.stderr);
    const complete = (words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `${bash.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _sensorcloud; echo "\${COMPREPLY[*]}"`,
        ],
        { encoding: 'utf8' },
      ).trim();
    assert.equal(complete(['sensorcloud', 'ru']), 'rules');
    assert.equal(complete(['sensorcloud', 'rules', 'e']), 'enable');
    assert.equal(complete(['sensorcloud', 'alerts', 'a']), 'ack acknowledge');
    assert.equal(complete(['sensorcloud', 'rules', 'create', '--trigger-']), '--trigger-count --trigger-delay');
    assert.equal(complete(['sensorcloud', 'rules', 'update', 'r', '--remove-']), '--remove-email --remove-webhook');
    assert.equal(complete(['sensorcloud', 'alerts', 'list', '--st']), '--state');
  });
});

describe('parsing', () => {
  it('ranges: lower..upper, open ends, negatives; --above and --below are OUTSIDE one bound', () => {
    assert.deepEqual(parseRange('2..8', '--outside', 'OUTSIDE'), { lower: 2, upper: 8, type: 'OUTSIDE' });
    assert.deepEqual(parseRange('..8', '--within', 'WITHIN'), { upper: 8, type: 'WITHIN' });
    assert.deepEqual(parseRange('-5.5..', '--within', 'WITHIN'), { lower: -5.5, type: 'WITHIN' });
    assert.deepEqual(parseRange(' -10 .. -2 ', '--within', 'WITHIN'), { lower: -10, upper: -2, type: 'WITHIN' });
    for (const bad of ['', '..', '2-8', '2...8', 'a..b', '2..8..9', '2'])
      assert.throws(() => parseRange(bad, '--outside', 'OUTSIDE'), UsageError, JSON.stringify(bad));
    assert.deepEqual(rangeOf({ above: '8' }), { upper: 8, type: 'OUTSIDE' });
    assert.deepEqual(rangeOf({ below: '2' }), { lower: 2, type: 'OUTSIDE' });
    assert.equal(rangeOf({}), undefined);
    assert.throws(() => rangeOf({ above: '8', below: '2' }), /give one of --above, --below, not several/);
  });

  it('durations become whole seconds; labels key=value or key', () => {
    assert.equal(ruleDuration('15m', '--trigger-delay'), '900s');
    assert.equal(ruleDuration('900s', '--trigger-delay'), '900s');
    assert.equal(ruleDuration('0', '--trigger-delay'), '0s');
    assert.equal(ruleDuration('1.5h', '--trigger-delay'), '5400s');
    assert.throws(() => ruleDuration('15', '--trigger-delay'), UsageError);
    assert.throws(() => ruleDuration('0.5s', '--trigger-delay'), /whole seconds/);
    assert.deepEqual(parseLabels(['fridge', 'site=oslo', 'room=', 'a=b=c']), {
      fridge: '',
      site: 'oslo',
      room: '',
      a: 'b=c',
    });
    assert.throws(() => parseLabels(['=x']), UsageError);
  });

  it("create's trigger: the field from --field, --connection or a state; --trigger-count alone keeps a file's trigger", () => {
    assert.deepEqual(createTrigger({ field: 'temperature', outside: '2..8', triggerCount: '3' }, undefined), {
      field: 'temperature',
      range: { lower: 2, upper: 8, type: 'OUTSIDE' },
      triggerCount: 3,
    });
    assert.deepEqual(createTrigger({ state: 'closed' }, undefined), { field: 'contact', contact: 'CLOSED' });
    assert.deepEqual(createTrigger({ connection: 'cloud_connector_offline' }, undefined), {
      field: 'connectionStatus',
      connection: 'CLOUD_CONNECTOR_OFFLINE',
    });
    assert.deepEqual(createTrigger({ field: 'future', above: '1' }, undefined), {
      field: 'future',
      range: { upper: 1, type: 'OUTSIDE' },
    });
    const base = { field: 'objectPresent', presence: 'PRESENT', triggerCount: 1 };
    assert.deepEqual(createTrigger({ triggerCount: '4' }, base), { ...base, triggerCount: 4 });
    assert.deepEqual(createTrigger({ state: 'ABSENT' }, base), { field: 'objectPresent', presence: 'ABSENT' });
    assert.equal(createTrigger({}, base), base);
    assert.throws(
      () => createTrigger({ connection: 'SENSOR_OFFLINE', field: 'contact' }, undefined),
      /--connection goes with --field connectionStatus/,
    );
    assert.throws(
      () => createTrigger({ connection: 'SENSOR_OFFLINE', state: 'OPEN' }, undefined),
      /--state or --connection/,
    );
    assert.throws(() => createTrigger({ field: 'touch', state: 'OPEN' }, undefined), /--state does not apply to touch/);
    assert.throws(() => createTrigger({ field: 'future', state: 'ON' }, undefined), /no state criterion is known/);
    assert.throws(() => createTrigger({ field: 'contact', outside: '1..2', state: 'OPEN' }, undefined), /not both/);
  });

  it("update's trigger: one key while the field stays, every criterion when it changes", () => {
    const current = {
      field: 'temperature',
      range: { lower: 2, upper: 8, type: 'OUTSIDE', filter: null },
      presence: null,
      motion: null,
      occupancy: null,
      contact: null,
      connection: null,
      triggerCount: 2,
    };
    assert.deepEqual(updateTrigger({}, current), { trigger: {}, mask: [] });
    assert.deepEqual(updateTrigger({ within: '1..6' }, current), {
      trigger: { range: { lower: 1, upper: 6, type: 'WITHIN' } },
      mask: ['trigger.range'],
    });
    assert.deepEqual(updateTrigger({ triggerCount: '0' }, current), {
      trigger: { triggerCount: 0 },
      mask: ['trigger.triggerCount'],
    });
    const all = [
      'trigger.range',
      'trigger.presence',
      'trigger.motion',
      'trigger.occupancy',
      'trigger.contact',
      'trigger.connection',
    ];
    assert.deepEqual(updateTrigger({ connection: 'SENSOR_OFFLINE' }, current), {
      trigger: { field: 'connectionStatus', connection: 'SENSOR_OFFLINE' },
      mask: ['trigger.field', ...all],
    });
    assert.deepEqual(updateTrigger({ field: 'touch' }, current), {
      trigger: { field: 'touch' },
      mask: ['trigger.field', ...all],
    });
    assert.deepEqual(
      updateTrigger({ state: 'open' }, { ...current, field: 'contact', range: null, contact: 'CLOSED' }),
      {
        trigger: { contact: 'OPEN' },
        mask: ['trigger.contact'],
      },
    );
    assert.throws(() => updateTrigger({ state: 'OPEN' }, current), /--state does not apply to temperature/);
  });

  it("update's levels: the first edited in place, the others kept", () => {
    const nulls = { sms: null, corrigo: null, serviceChannel: null, phoneCall: null, signalTower: null };
    const email = {
      type: 'EMAIL',
      ...nulls,
      webhook: null,
      email: { recipients: ['a@x.org'], contactGroups: ['organizations/o/contactGroups/g'], subject: 's', body: 'b' },
    };
    const hook = (url: string) => ({
      type: 'WEBHOOK',
      ...nulls,
      email: null,
      webhook: { url, headers: { H: 'v' }, signatureSecret: 'k' },
    });
    const second: EscalationLevel = { displayName: 'two', actions: [hook('https://two.test')], escalateAfter: null };
    const levels: EscalationLevel[] = [
      { displayName: 'one', actions: [hook('https://a.test'), email, hook('https://b.test')], escalateAfter: '60s' },
      second,
    ];
    assert.equal(updateLevels({}, levels), undefined);
    const [first, rest] = updateLevels(
      { email: ['c@x.org'], webhook: ['https://c.test'], escalateAfter: '2h' },
      levels,
    )!;
    assert.deepEqual(first, {
      displayName: 'one',
      escalateAfter: '7200s',
      actions: [hook('https://c.test'), { ...email, email: { ...email.email, recipients: ['c@x.org'] } }],
    });
    assert.equal(rest, second);
    const bodyOnly = updateLevels({ body: 'new', webhookSecret: '' }, levels)![0]!;
    assert.deepEqual(
      bodyOnly.actions.map((a) => a.email?.body ?? a.webhook?.signatureSecret),
      ['', 'new', ''],
    );
    assert.deepEqual(
      updateLevels({ removeWebhook: true }, levels)![0]!.actions.map((a) => a.type),
      ['EMAIL'],
    );
    assert.throws(() => updateLevels({ removeEmail: true, body: 'x' }, levels), /not both/);
    assert.throws(() => updateLevels({ subject: 'x' }, [second]), /no e-mail action/);
    assert.throws(() => updateLevels({ webhookHeader: ['A: b'] }, [{ ...second, actions: [email] }]), /no webhook/);
  });

  it('create and update bodies: options over --from-file, update_mask of what changes', () => {
    assert.deepEqual(
      createBody({
        field: 'touch',
        webhook: ['https://a.test'],
        name: 'n',
        triggerDelay: '1m',
        resolvedNotifications: false,
      }),
      {
        displayName: 'n',
        triggerDelay: '60s',
        resolvedNotifications: false,
        trigger: { field: 'touch' },
        escalationLevels: [
          {
            displayName: '',
            actions: [{ type: 'WEBHOOK', webhook: { url: 'https://a.test', headers: {}, signatureSecret: '' } }],
          },
        ],
      },
    );
    assert.throws(() => createBody({ field: 'touch', escalateAfter: '1m' }), /--escalate-after goes with/);
    assert.throws(() => createBody({ field: 'touch', webhookSecret: 'x' }), /go with --webhook/);
    assert.throws(() => createBody({ field: 'touch', removeEmail: true }), /are for update/);
    const current = { trigger: { field: 'temperature' }, escalationLevels: [] } as unknown as Rule;
    assert.deepEqual(updatePatch({ displayName: 'x', label: ['a'], unacknowledgesAfter: '1h', above: '3' }, current), {
      body: {
        displayName: 'x',
        deviceLabels: { a: '' },
        unacknowledgesAfter: '3600s',
        trigger: { range: { upper: 3, type: 'OUTSIDE' } },
      },
      mask: ['displayName', 'deviceLabels', 'unacknowledgesAfter', 'trigger.range'],
    });
    assert.throws(() => updatePatch({ name: 'a', displayName: 'b' }, current), /not both/);
    assert.throws(() => updatePatch({ disabled: true }, current), /rules disable/);
  });

  it('how rules read', () => {
    const t = (range: object | null, extra: object = {}) =>
      triggerText({
        field: 'temperature',
        range: range as any,
        presence: null,
        motion: null,
        occupancy: null,
        contact: null,
        connection: null,
        triggerCount: 0,
        ...extra,
      });
    assert.equal(t({ lower: 2, upper: 8, type: 'OUTSIDE', filter: null }), 'temperature outside 2..8');
    assert.equal(t({ lower: null, upper: 8, type: 'OUTSIDE', filter: null }), 'temperature above 8');
    assert.equal(t({ lower: 2, upper: null, type: 'OUTSIDE', filter: null }), 'temperature below 2');
    assert.equal(t({ lower: 18, upper: null, type: 'WITHIN', filter: null }), 'temperature within 18..');
    assert.equal(t(null, { field: 'contact', contact: 'OPEN', triggerCount: 3 }), 'contact OPEN (3 in a row)');
    assert.equal(durationCell('900s'), '15m');
    assert.equal(durationCell('86400s'), '24h');
    assert.equal(durationCell(null), '-');
    assert.equal(scheduleText(null), '(always)');
    assert.equal(
      scheduleText({
        ...SCHEDULE,
        inverse: true,
        slots: [
          ...SCHEDULE.slots,
          { days: [], times: [{ start: { hour: 22, minute: 30 }, end: { hour: 6, minute: 0 } }] },
        ],
      }),
      'not Mon,Tue,Wed,Thu,Fri 08:00-17:00; every day 22:30-06:00 (Europe/Oslo)',
    );
    const nulls = { sms: null, corrigo: null, serviceChannel: null, phoneCall: null, signalTower: null };
    const redacted = redactRule({
      escalationLevels: [
        {
          displayName: '',
          escalateAfter: null,
          actions: [
            {
              type: 'WEBHOOK',
              ...nulls,
              email: null,
              webhook: { url: 'https://a.test', signatureSecret: 's', headers: { A: 'b' } },
            },
            {
              type: 'WEBHOOK',
              ...nulls,
              email: null,
              webhook: { url: 'https://b.test', signatureSecret: '', headers: {} },
            },
          ],
        },
      ],
      actions: [],
    } as unknown as Rule);
    assert.deepEqual(
      redacted.escalationLevels[0]!.actions.map((a) => [a.webhook!.signatureSecret, a.webhook!.headers]),
      [
        ['<redacted>', { A: '<redacted>' }],
        ['', {}],
      ],
    );
  });
});
