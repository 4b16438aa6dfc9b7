// The SMTP mailer (alerts/email.ts): reading SENSORCLOUD_SMTP_URL, which failures are permanent, the password kept out
// of every message, and the bounded waits, against silent and stalling loopback servers.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { createSilentLogger } from '../../src/runtime/logger.ts';
import { testTls } from '../helpers/tls.ts';
import {
  createConfiguredMailer,
  createSmtpMailer,
  isPermanentReply,
  mailFailureOf,
  smtpSettingsOf,
} from '../../src/alerts/email.ts';
import { startSmtpServer } from './smtp-server.ts';

const message = { to: ['ops@example.test'], subject: 's', text: 't' };

describe('SENSORCLOUD_SMTP_URL', () => {
  it('reads host, port, TLS and credentials (percent-decoded)', () => {
    assert.deepEqual(smtpSettingsOf('smtp://relay.example.org'), {
      host: 'relay.example.org',
      port: undefined,
      secure: false,
      user: '',
      password: '',
    });
    assert.deepEqual(smtpSettingsOf('smtps://alerts%40example.org:p%40ss%3Aw@[::1]:2465'), {
      host: '::1',
      port: 2465,
      secure: true,
      user: 'alerts@example.org',
      password: 'p@ss:w',
    });
  });

  it('refuses other schemes and URLs without a host, never echoing the password', () => {
    assert.throws(() => smtpSettingsOf('http://u:hunter2@relay'), /unsupported scheme "http:"/);
    assert.throws(() => smtpSettingsOf('relay.example.org:25'), /scheme|URL/);
    assert.throws(() => smtpSettingsOf('smtp://'), /no host|not a URL/);
    try {
      smtpSettingsOf('ftp://u:hunter2@relay');
    } catch (err) {
      assert.ok(!(err as Error).message.includes('hunter2'));
    }
  });
});

describe('failures', () => {
  it('5xx replies are permanent, 503 and 4xx are not', () => {
    assert.equal(isPermanentReply(550), true);
    assert.equal(isPermanentReply(554), true);
    assert.equal(isPermanentReply(535), true);
    assert.equal(isPermanentReply(503), false);
    assert.equal(isPermanentReply(451), false);
    assert.equal(isPermanentReply(undefined), false);
  });

  it('a connection error is transient; a recipient the client refuses itself is permanent', () => {
    assert.deepEqual(mailFailureOf(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ESOCKET' })), {
      error: 'connect ECONNREFUSED',
      permanent: false,
    });
    assert.equal(
      mailFailureOf(Object.assign(new Error('No recipients defined'), { code: 'EENVELOPE' })).permanent,
      true,
    );
    assert.equal(
      mailFailureOf(Object.assign(new Error('Try later'), { code: 'EENVELOPE', responseCode: 452 })).permanent,
      false,
    );
  });

  it('the password never appears in the error, which is one line of at most 500 characters', () => {
    const f = mailFailureOf(new Error(`Invalid login for user:hunter2\r\n${'x'.repeat(900)}`), ['hunter2']);
    assert.ok(!f.error.includes('hunter2'));
    assert.ok(!/[\r\n]/.test(f.error));
    assert.equal(f.error.length, 500);
  });
});

describe("the service's mailer", () => {
  it('is none without SENSORCLOUD_SMTP_URL', () => {
    assert.equal(createConfiguredMailer({ smtpUrl: null, smtpFrom: null, caFile: null }, createSilentLogger()), null);
  });

  it("checks an smtps:// relay's certificate against what pushes trust: SENSORCLOUD_CA_FILE", async () => {
    const tls = testTls();
    const smtp = await startSmtpServer({ tls: tls.server });
    const trusting = createConfiguredMailer(
      { smtpUrl: smtp.url(), smtpFrom: 'alerts@example.test', caFile: tls.caFile },
      createSilentLogger(),
    )!;
    const strict = createSmtpMailer({ url: smtp.url(), from: 'alerts@example.test' });
    try {
      assert.deepEqual(await trusting.send(message), { ok: true });
      assert.equal(smtp.messages[0]!.from, 'alerts@example.test');
      const refused = await strict.send(message);
      assert.equal(refused.ok, false);
      assert.equal(!refused.ok && refused.permanent, false, 'a certificate problem is retried');
      assert.equal(smtp.messages.length, 1);
    } finally {
      trusting.close();
      strict.close();
      await smtp.close();
    }
  });
});

describe('bounded waits', () => {
  it('a relay that accepts the connection and never greets fails after the timeout, to be retried', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((s) => sockets.add(s));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as AddressInfo;
    const mailer = createSmtpMailer({ url: `smtp://127.0.0.1:${port}`, from: 'a@example.test', timeoutMs: 200 });
    try {
      const started = Date.now();
      const result = await mailer.send(message);
      assert.equal(result.ok, false);
      assert.equal(!result.ok && result.permanent, false);
      assert.ok(Date.now() - started < 5_000, 'bounded by the timeout');
    } finally {
      mailer.close();
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  it('an exchange that takes longer than the deadline is abandoned, to be retried', async () => {
    const smtp = await startSmtpServer();
    // Every reply comes well within the per-reply timeout, but no exchange finishes within 1 ms.
    const mailer = createSmtpMailer({
      url: smtp.url(),
      from: 'a@example.test',
      timeoutMs: 10_000,
      deadlineMs: 1,
    });
    try {
      const result = await mailer.send(message);
      assert.deepEqual(result, { ok: false, error: 'the SMTP exchange took too long', permanent: false });
      assert.equal(smtp.messages.length, 0);
    } finally {
      mailer.close();
      await smtp.close();
    }
  });

  it('a closed mailer sends nothing', async () => {
    const mailer = createSmtpMailer({ url: 'smtp://127.0.0.1:1', from: 'a@example.test' });
    mailer.close();
    assert.deepEqual(await mailer.send(message), { ok: false, error: 'the mailer is closed', permanent: false });
  });
});
