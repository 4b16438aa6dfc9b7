// The notifier (extensions §X5) with the fake clock, on the test store (SENSORCLOUD_TEST_STORE): webhooks to a real
// loopback HTTPS receiver through the real push dispatcher (signature, SSRF guard), e-mail to a real SMTP server
// (smtp-server.ts), the push retry schedule and its 12-hour end, the lease that fences a late outcome, two notifiers
// on one store, and the running loop's wake() and stop(). Outbox rows and alerts are written through the store, as a
// transition writes them.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { createSmtpMailer, type Mailer } from '../../src/alerts/email.ts';
import { createNotifier, type Notifier, type NotifierOptions } from '../../src/alerts/notifier.ts';
import { createDispatcher } from '../../src/delivery/dispatcher.ts';
import type { Dispatcher } from '../../src/delivery/types.ts';
import { verifySignature } from '../../src/receiver/verify-signature.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createSilentLogger } from '../../src/runtime/logger.ts';
import type { AlertNotificationRecord, AlertRecord } from '../../src/store/contract/alerting.ts';
import type { Store } from '../../src/store/contract/store.ts';
import { capturedLog, type LoggedLine } from '../helpers/captured-log.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { reopenTestStore, testStoreKind } from '../helpers/store.ts';
import { testTls } from '../helpers/tls.ts';
import { until } from '../helpers/until.ts';
import { startSmtpServer, type SmtpTestServer } from './smtp-server.ts';

const LOCAL = ['127.0.0.0/8', '::1/128'];
const SECRET = 'alert-webhook-secret-0123456789';
const FROM = 'alerts@sensorcloud.test';
const TRANSITION_HEADER = 'X-Sensorcloud-Alert-Transition';

const closers: Array<() => Promise<unknown> | unknown> = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

interface Setup {
  t: TestContext;
  notifier: Notifier;
  log: LoggedLine[];
}

function dispatcherFor(t: TestContext, allow: string[] = LOCAL): Dispatcher {
  const d = createDispatcher({
    config: { caFile: testTls().caFile, allowPrivateEndpoints: allow },
    clock: t.clock,
    ids: t.deps.ids,
    logger: createSilentLogger(),
    extraCaFile: null,
  });
  closers.push(() => d.close());
  return d;
}

async function setup(
  o: { allow?: string[]; mailer?: Mailer | null; dispatcher?: (d: Dispatcher, t: TestContext) => Dispatcher } = {},
  options: NotifierOptions = {},
): Promise<Setup> {
  const t = await createTestContext();
  closers.push(() => t.close());
  const { logger, lines } = capturedLog(['warn', 'error']);
  const real = dispatcherFor(t, o.allow);
  const notifier = createNotifier(
    {
      store: t.deps.store,
      clock: t.clock,
      logger,
      dispatcher: o.dispatcher ? o.dispatcher(real, t) : real,
      mailer: o.mailer === undefined ? null : o.mailer,
      secretBox: t.deps.secretBox,
    },
    options,
  );
  return { t, notifier, log: lines };
}

async function receiver(options: Parameters<typeof startReceiver>[0] = {}): Promise<Receiver> {
  const r = await startReceiver(options);
  closers.push(() => r.close());
  return r;
}

async function smtpServer(options: Parameters<typeof startSmtpServer>[0] = {}): Promise<SmtpTestServer> {
  const s = await startSmtpServer(options);
  closers.push(() => s.close());
  return s;
}

function mailer(options: Parameters<typeof createSmtpMailer>[0]): Mailer {
  const m = createSmtpMailer(options);
  closers.push(() => m.close());
  return m;
}

/** A rule and its alert, with one notification entry per target (RETRYING, as a transition queues them). */
async function seedAlert(t: TestContext, targets: Array<['EMAIL' | 'WEBHOOK', string]>): Promise<AlertRecord> {
  const now = nowMicros(t.deps);
  const ruleId = t.deps.ids.next();
  await t.deps.store.rules.create({
    id: ruleId,
    projectId: t.projectId,
    displayName: 'Fridge',
    enabled: true,
    spec: '{}',
    createTime: now,
    updateTime: now,
  });
  const alert: AlertRecord = {
    id: t.deps.ids.next(),
    projectId: t.projectId,
    ruleId,
    targetId: 'dev1',
    targetName: `projects/${t.projectId}/devices/dev1`,
    state: 'TRIGGERED',
    escalationLevel: 0,
    triggerTime: now,
    acknowledgeTime: null,
    acknowledgedBy: '',
    resolveTime: null,
    lastValue: '9.5',
    notifications: targets.map(([type, target]) => ({
      time: now,
      level: 0,
      type,
      target,
      transition: 'TRIGGERED',
      outcome: 'RETRYING',
      error: '',
    })),
    timerDue: null,
    createTime: now,
    updateTime: now,
  };
  assert.ok(await t.deps.store.alerts.createIfNone(alert));
  return alert;
}

function webhookBody(alert: AlertRecord, n = 0): string {
  return JSON.stringify({ alert: { name: `projects/${alert.projectId}/alerts/${alert.id}`, n }, event: null });
}

async function queueWebhook(
  t: TestContext,
  alert: AlertRecord,
  entry: number,
  p: { url: string; secret?: string; headers?: Record<string, string>; body?: string },
): Promise<number> {
  const now = nowMicros(t.deps);
  const payload = JSON.stringify({
    url: p.url,
    headers: { [TRANSITION_HEADER]: 'TRIGGERED', ...p.headers },
    signatureSecretSealed: p.secret ? t.deps.secretBox.seal(p.secret) : '',
    body: p.body ?? webhookBody(alert),
  });
  const [id] = await t.deps.store.outbox.add([
    { alertId: alert.id, entry, type: 'WEBHOOK', payload, enqueueTime: now, dueTime: now },
  ]);
  return id!;
}

async function queueEmail(
  t: TestContext,
  alert: AlertRecord,
  entry: number,
  message: { to: string[]; subject: string; text: string },
): Promise<void> {
  const now = nowMicros(t.deps);
  await t.deps.store.outbox.add([
    { alertId: alert.id, entry, type: 'EMAIL', payload: JSON.stringify(message), enqueueTime: now, dueTime: now },
  ]);
}

async function entryOf(t: TestContext, alert: AlertRecord, entry: number): Promise<AlertNotificationRecord> {
  const stored = await t.deps.store.alerts.get(alert.id);
  assert.ok(stored, 'the alert is stored');
  return stored.notifications[entry]!;
}

const report = (r: Partial<Record<'claimed' | 'sent' | 'retrying' | 'failed' | 'lost', number>>) => ({
  claimed: 0,
  sent: 0,
  retrying: 0,
  failed: 0,
  lost: 0,
  ...r,
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

describe('webhook notifications', () => {
  it('arrive at the receiver as a signed POST of the body, with the transition and custom headers', async () => {
    const { t, notifier } = await setup();
    const rx = await receiver();
    const alert = await seedAlert(t, [
      ['EMAIL', 'ops@example.test'],
      ['WEBHOOK', rx.url],
    ]);
    const body = webhookBody(alert);
    await queueWebhook(t, alert, 1, { url: rx.url, secret: SECRET, headers: { 'X-Api-Key': 'k3y' }, body });

    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, sent: 1 }));
    assert.equal(rx.requests.length, 1);
    const req = rx.requests[0]!;
    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/hook');
    assert.equal(req.body.toString('utf8'), body);
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(req.headers['x-sensorcloud-alert-transition'], 'TRIGGERED');
    assert.equal(req.headers['x-api-key'], 'k3y');
    const claims = await verifySignature(req.body, req.headers, SECRET, { now: new Date(t.clock.now()) });
    assert.equal(claims.checksum_sha256, createHash('sha256').update(req.body).digest('hex'));
    assert.equal(claims.iat, Math.floor(t.clock.now() / 1000));

    const entry = await entryOf(t, alert, 1);
    assert.equal(entry.outcome, 'SENT');
    assert.equal(entry.error, '');
    assert.equal(entry.target, rx.url, 'the rest of the entry is left as the transition wrote it');
    assert.equal((await entryOf(t, alert, 0)).outcome, 'RETRYING', 'only its own entry changes');
    assert.equal(await t.deps.store.outbox.count(), 0);
    assert.deepEqual(await notifier.runOnce(), report({}), 'sent once');
  });

  it('without a secret, carries no signature', async () => {
    const { t, notifier } = await setup();
    const rx = await receiver();
    const alert = await seedAlert(t, [['WEBHOOK', rx.url]]);
    await queueWebhook(t, alert, 0, { url: rx.url });
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, sent: 1 }));
    assert.equal(rx.requests[0]!.headers['x-service-signature'], undefined);
  });

  it('a receiver failing twice gets three attempts, at 0, 8 and 24 s: RETRYING, then SENT', async () => {
    const { t, notifier } = await setup();
    const rx = await receiver();
    rx.replyOnce({ status: 500 }, { status: 503 });
    const alert = await seedAlert(t, [['WEBHOOK', rx.url]]);
    await queueWebhook(t, alert, 0, { url: rx.url, secret: SECRET });
    const t0 = t.clock.now();

    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, retrying: 1 }));
    assert.equal((await entryOf(t, alert, 0)).outcome, 'RETRYING');
    assert.equal((await entryOf(t, alert, 0)).error, 'HTTP 500');
    t.clock.set(t0 + 8_000 - 1);
    assert.deepEqual(await notifier.runOnce(), report({}), 'nothing due before 8 s');
    t.clock.set(t0 + 8_000);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, retrying: 1 }));
    assert.equal((await entryOf(t, alert, 0)).error, 'HTTP 503');
    t.clock.set(t0 + 24_000 - 1);
    assert.deepEqual(await notifier.runOnce(), report({}), 'nothing due before 8 + 16 s');
    t.clock.set(t0 + 24_000);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, sent: 1 }));

    assert.equal(rx.requests.length, 3);
    const iats = await Promise.all(
      rx.requests.map(
        async (r) => (await verifySignature(r.body, r.headers, SECRET, { now: new Date(t0 + 24_000) })).iat,
      ),
    );
    assert.deepEqual(
      iats,
      [0, 8, 24].map((s) => Math.floor(t0 / 1000) + s),
    );
    assert.ok(
      rx.requests.every((r) => r.body.equals(rx.requests[0]!.body)),
      'the same body each time',
    );
    const entry = await entryOf(t, alert, 0);
    assert.equal(entry.outcome, 'SENT');
    assert.equal(entry.error, '');
    assert.equal(await t.deps.store.outbox.count(), 0);
  });

  it('12 hours of failures: attempts on the push schedule, then FAILED, the row gone, one log line', async () => {
    const { t, notifier, log } = await setup();
    const rx = await receiver({ reply: { status: 500 } });
    const alert = await seedAlert(t, [['WEBHOOK', rx.url]]);
    const secretPath = `${rx.url}/T0123/B0456/tokenInThePath?key=secret`;
    await queueWebhook(t, alert, 0, { url: secretPath, secret: SECRET });
    const t0 = t.clock.now();
    // The schedule of a push (delivery/retry.ts): 8 s doubling to 1 h; attempt 21 would fall after 12 h.
    const expected = [0, 8, 24, 56, 120, 248, 504, 1016, 2040, 4088];
    for (let n = 10; n < 20; n++) expected.push(expected[n - 1]! + 3600);
    for (const [i, at] of expected.entries()) {
      if (at > 0) {
        t.clock.set(t0 + at * 1000 - 1);
        assert.deepEqual(await notifier.runOnce(), report({}), `nothing due just before ${at} s`);
      }
      t.clock.set(t0 + at * 1000);
      const last = i === expected.length - 1;
      assert.deepEqual(
        await notifier.runOnce(),
        report({ claimed: 1, ...(last ? { failed: 1 } : { retrying: 1 }) }),
        `attempt at ${at} s`,
      );
      if (!last) assert.equal((await entryOf(t, alert, 0)).outcome, 'RETRYING');
    }
    assert.equal(rx.requests.length, 20);
    const entry = await entryOf(t, alert, 0);
    assert.equal(entry.outcome, 'FAILED');
    assert.equal(entry.error, 'HTTP 500');
    assert.equal(await t.deps.store.outbox.count(), 0);
    t.clock.set(t0 + 43_688_000);
    assert.deepEqual(await notifier.runOnce(), report({}));

    assert.equal(log.length, 1, JSON.stringify(log));
    assert.equal(log[0]!.level, 'warn');
    assert.equal(log[0]!.message, 'alert notification given up');
    assert.deepEqual(log[0]!.fields, {
      alertId: alert.id,
      entry: 0,
      type: 'WEBHOOK',
      target: new URL(rx.url).origin,
      attempts: 20,
      error: 'HTTP 500',
    });
    const text = JSON.stringify(log);
    for (const secret of [SECRET, 'tokenInThePath', 'key=secret']) assert.ok(!text.includes(secret), secret);
  });

  it('a row queued 12 hours ago or more is given up without an attempt', async () => {
    const { t, notifier, log } = await setup();
    const rx = await receiver();
    const alert = await seedAlert(t, [['WEBHOOK', rx.url]]);
    await queueWebhook(t, alert, 0, { url: rx.url });
    t.clock.advance(12 * 3600_000);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, failed: 1 }));
    assert.equal(rx.requests.length, 0);
    const entry = await entryOf(t, alert, 0);
    assert.equal(entry.outcome, 'FAILED');
    assert.match(entry.error, /12 hours/);
    assert.equal(log.length, 1);
    assert.equal(log[0]!.fields.attempts, 0);
  });

  it('a loopback address the SSRF guard refuses fails as a push does: no connection, retried', async () => {
    const { t, notifier } = await setup({ allow: [] });
    const rx = await receiver();
    const alert = await seedAlert(t, [['WEBHOOK', rx.url]]);
    await queueWebhook(t, alert, 0, { url: rx.url, secret: SECRET });
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, retrying: 1 }));
    assert.equal(rx.connections, 0, 'the guard refused before connecting');
    const entry = await entryOf(t, alert, 0);
    assert.equal(entry.outcome, 'RETRYING');
    assert.match(entry.error, /^refused address: .*loopback/);
    assert.equal(await t.deps.store.outbox.count(), 1);
  });

  it('a receiver whose certificate no trusted CA signed fails (TLS), and is retried', async () => {
    const { t, notifier } = await setup();
    const rx = await receiver({ cert: 'self-signed' });
    const alert = await seedAlert(t, [['WEBHOOK', rx.url]]);
    await queueWebhook(t, alert, 0, { url: rx.url });
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, retrying: 1 }));
    assert.equal(rx.requests.length, 0);
    assert.equal((await entryOf(t, alert, 0)).outcome, 'RETRYING');
  });

  it('a row that cannot be read, or whose secret cannot be opened, is given up at once', async () => {
    const { t, notifier } = await setup();
    const rx = await receiver();
    const alert = await seedAlert(t, [
      ['WEBHOOK', rx.url],
      ['WEBHOOK', rx.url],
    ]);
    const now = nowMicros(t.deps);
    const sealedElsewhere = JSON.stringify({ url: rx.url, headers: {}, signatureSecretSealed: 'v1.bogus', body: '{}' });
    await t.deps.store.outbox.add([
      { alertId: alert.id, entry: 0, type: 'WEBHOOK', payload: '{"url": 5}', enqueueTime: now, dueTime: now },
      { alertId: alert.id, entry: 1, type: 'WEBHOOK', payload: sealedElsewhere, enqueueTime: now, dueTime: now },
    ]);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 2, failed: 2 }));
    assert.equal(rx.requests.length, 0);
    assert.match((await entryOf(t, alert, 0)).error, /cannot be read/);
    assert.match((await entryOf(t, alert, 1)).error, /secret cannot be opened/);
  });
});

describe('e-mail notifications', () => {
  const message = {
    to: ['ops@example.test', 'oncall@example.test'],
    subject: 'Fridge 4: 9.5 °C (TRIGGERED)',
    text: 'Temperature in Fridge 4 is 9.5 °C.\nRule: Fridge — Grüße',
  };

  it('are received by the SMTP server: From, To, Subject and text as given, logged in with the URL credentials', async () => {
    const smtp = await smtpServer({ users: { notifier: 'p@ss:w/rd' } });
    const { t, notifier } = await setup({
      mailer: mailer({ url: smtp.url({ user: 'notifier', password: 'p@ss:w/rd' }), from: FROM }),
    });
    const alert = await seedAlert(t, [['EMAIL', message.to.join(', ')]]);
    await queueEmail(t, alert, 0, message);

    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, sent: 1 }));
    assert.equal(smtp.messages.length, 1);
    const mail = smtp.messages[0]!;
    assert.equal(mail.user, 'notifier');
    assert.equal(mail.mailFrom, FROM);
    assert.equal(mail.from, FROM);
    assert.deepEqual(mail.rcptTo, message.to);
    assert.deepEqual(mail.to, message.to);
    assert.equal(mail.subject, message.subject);
    assert.equal(mail.text.replace(/\n$/, ''), message.text);
    const entry = await entryOf(t, alert, 0);
    assert.equal(entry.outcome, 'SENT');
    assert.equal(await t.deps.store.outbox.count(), 0);
  });

  it('a subject with a line break stays one header', async () => {
    const smtp = await smtpServer();
    const { t, notifier } = await setup({ mailer: mailer({ url: smtp.url(), from: FROM }) });
    const alert = await seedAlert(t, [['EMAIL', 'ops@example.test']]);
    await queueEmail(t, alert, 0, { to: ['ops@example.test'], subject: 'a\r\nBcc: x@example.test', text: 'b' });
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, sent: 1 }));
    assert.equal(smtp.messages[0]!.subject, 'a Bcc: x@example.test');
    assert.deepEqual(smtp.messages[0]!.rcptTo, ['ops@example.test']);
  });

  it('a server answering 550 is a permanent refusal: FAILED at once, the row gone', async () => {
    const smtp = await smtpServer();
    smtp.refuseRecipients({ code: 550, message: 'No such user here' });
    const { t, notifier, log } = await setup({ mailer: mailer({ url: smtp.url(), from: FROM }) });
    const alert = await seedAlert(t, [['EMAIL', 'nobody@example.test']]);
    await queueEmail(t, alert, 0, { ...message, to: ['nobody@example.test'] });

    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, failed: 1 }));
    const entry = await entryOf(t, alert, 0);
    assert.equal(entry.outcome, 'FAILED');
    assert.match(entry.error, /550/);
    assert.equal(await t.deps.store.outbox.count(), 0);
    assert.equal(log.length, 1);
    assert.deepEqual(
      { ...log[0]!.fields, error: undefined },
      { alertId: alert.id, entry: 0, type: 'EMAIL', target: '1 recipient', attempts: 1, error: undefined },
    );
  });

  it('a 4xx answer is retried', async () => {
    const smtp = await smtpServer();
    smtp.refuseData({ code: 451, message: 'Try again later' });
    const { t, notifier } = await setup({ mailer: mailer({ url: smtp.url(), from: FROM }) });
    const alert = await seedAlert(t, [['EMAIL', 'ops@example.test']]);
    await queueEmail(t, alert, 0, message);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, retrying: 1 }));
    assert.match((await entryOf(t, alert, 0)).error, /451/);
    smtp.refuseData(null);
    t.clock.advance(8_000);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, sent: 1 }));
    assert.equal(smtp.messages.length, 1);
  });

  it('a refused login fails for good, and its error never holds the password', async () => {
    const smtp = await smtpServer({ users: { notifier: 'right' } });
    const password = 'wrong-pa$$word';
    const { t, notifier, log } = await setup({
      mailer: mailer({ url: smtp.url({ user: 'notifier', password }), from: FROM }),
    });
    const alert = await seedAlert(t, [['EMAIL', 'ops@example.test']]);
    await queueEmail(t, alert, 0, message);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, failed: 1 }));
    const entry = await entryOf(t, alert, 0);
    assert.match(entry.error, /535/);
    assert.ok(!JSON.stringify([entry, log]).includes(password));
    assert.equal(smtp.messages.length, 0);
  });

  it('a relay that is down: RETRYING, then SENT once it answers', async () => {
    const port = await closedPort();
    const { t, notifier } = await setup({ mailer: mailer({ url: `smtp://127.0.0.1:${port}`, from: FROM }) });
    const alert = await seedAlert(t, [['EMAIL', 'ops@example.test']]);
    await queueEmail(t, alert, 0, message);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, retrying: 1 }));
    const entry = await entryOf(t, alert, 0);
    assert.equal(entry.outcome, 'RETRYING');
    assert.match(entry.error, /ECONNREFUSED|connect/i);
    assert.equal(await t.deps.store.outbox.count(), 1);

    const smtp = await smtpServer({ port });
    t.clock.advance(8_000);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, sent: 1 }));
    assert.equal(smtp.messages.length, 1);
    assert.equal((await entryOf(t, alert, 0)).outcome, 'SENT');
  });

  it('without SENSORCLOUD_SMTP_URL an e-mail is retried, saying so', async () => {
    const { t, notifier } = await setup({ mailer: null });
    const alert = await seedAlert(t, [['EMAIL', 'ops@example.test']]);
    await queueEmail(t, alert, 0, message);
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, retrying: 1 }));
    assert.match((await entryOf(t, alert, 0)).error, /SENSORCLOUD_SMTP_URL/);
  });
});

describe('leases', () => {
  it('an outcome that comes after the lease ended is not recorded: the row and entry are the next claimer’s', async () => {
    let other: Awaited<ReturnType<Store['outbox']['claim']>> = [];
    const { t, notifier } = await setup({
      dispatcher: (real, t) => ({
        async send(target, body) {
          const outcome = await real.send(target, body);
          // Meanwhile, the process froze past the lease, and another process claimed the row.
          t.clock.advance(61_000);
          const now = nowMicros(t.deps);
          other = await t.deps.store.outbox.claim(now, now + 60_000_000, 10);
          return outcome;
        },
        close: () => real.close(),
      }),
    });
    const rx = await receiver({ reply: { status: 500 } });
    const alert = await seedAlert(t, [['WEBHOOK', rx.url]]);
    const id = await queueWebhook(t, alert, 0, { url: rx.url });
    assert.deepEqual(await notifier.runOnce(), report({ claimed: 1, lost: 1 }));
    assert.deepEqual(
      other.map((r) => r.id),
      [id],
    );
    assert.equal(await t.deps.store.outbox.count(), 1, 'still queued, leased by the other claim');
    assert.equal((await entryOf(t, alert, 0)).error, '', 'the late outcome wrote nothing');
  });

  it('two notifiers on one store send each row once', async () => {
    const { t, notifier } = await setup();
    const second = testStoreKind() === 'postgres' ? await reopenTestStore(t.dataDir) : t.deps.store;
    if (second !== t.deps.store) closers.push(() => second.close());
    const rx = await receiver({ reply: { status: 200, delayMs: 5 } });
    const alert = await seedAlert(
      t,
      Array.from({ length: 40 }, () => ['WEBHOOK', rx.url] as ['WEBHOOK', string]),
    );
    for (let i = 0; i < 40; i++) await queueWebhook(t, alert, i, { url: rx.url, body: webhookBody(alert, i) });
    const other = createNotifier(
      {
        store: second,
        clock: t.clock,
        logger: createSilentLogger(),
        dispatcher: dispatcherFor(t),
        mailer: null,
        secretBox: t.deps.secretBox,
      },
      { batchSize: 4 },
    );
    const small = createNotifier(
      {
        store: t.deps.store,
        clock: t.clock,
        logger: createSilentLogger(),
        dispatcher: dispatcherFor(t),
        mailer: null,
        secretBox: t.deps.secretBox,
      },
      { batchSize: 4 },
    );
    const reports = await Promise.all([small.runOnce(), other.runOnce(), notifier.runOnce()]);
    assert.equal(
      reports.reduce((n, r) => n + r.sent, 0),
      40,
    );
    assert.equal(rx.requests.length, 40);
    const ns = rx.requests.map((r) => JSON.parse(r.body.toString('utf8')).alert.n as number).sort((a, b) => a - b);
    assert.deepEqual(
      ns,
      Array.from({ length: 40 }, (_, i) => i),
    );
    const stored = await t.deps.store.alerts.get(alert.id);
    assert.ok(stored!.notifications.every((e) => e.outcome === 'SENT'));
  });
});

describe('the running loop', () => {
  it('sends when woken, retries on its poll, and stop() waits for the sends in flight', async () => {
    const { t, notifier } = await setup({}, { pollIntervalMs: 20 });
    const rx = await receiver();
    const alert = await seedAlert(t, [
      ['WEBHOOK', rx.url],
      ['WEBHOOK', rx.url],
    ]);
    notifier.start();
    try {
      await queueWebhook(t, alert, 0, { url: rx.url });
      notifier.wake();
      await rx.waitFor(1);
      await until('the outcome', async () => (await entryOf(t, alert, 0)).outcome === 'SENT', { everyMs: 5 });

      rx.replyOnce({ status: 500 });
      await queueWebhook(t, alert, 1, { url: rx.url });
      notifier.wake();
      await until('the retry', async () => (await entryOf(t, alert, 1)).error === 'HTTP 500', { everyMs: 5 });
      t.clock.advance(8_000);
      // No wake: the poll finds the retry due.
      await rx.waitFor(3);

      rx.reply({ status: 200, delayMs: 200 });
      await queueWebhook(t, alert, 0, { url: rx.url });
      notifier.wake();
      await rx.waitFor(4);
      await notifier.stop();
      assert.equal(await t.deps.store.outbox.count(), 0, 'stop() waited for the outcome');
    } finally {
      await notifier.stop();
    }
  });
});
