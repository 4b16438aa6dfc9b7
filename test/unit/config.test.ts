// Configuration: defaults, precedence, and one message naming every problem.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, withListeningPort } from '../../src/config.ts';

describe('config', () => {
  it('has the operator contract defaults', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.ok(c.dataDir.endsWith('/data'));
    assert.equal(c.publicUrl, 'http://127.0.0.1:8080');
    assert.equal(c.emailDomain, 'sensorcloud.local');
    assert.deepEqual(c.rateLimit, { capacity: 100, refillPerSecond: 20 });
    assert.equal(c.eventRetentionSeconds, 31 * 86400);
    assert.equal(c.heartbeatIntervalSeconds, 900);
    assert.ok(Object.isFrozen(c));
  });

  it('lets flags override env', () => {
    const c = loadConfig({ PORT: '9000', HOST: '0.0.0.0' }, { port: '9100' });
    assert.equal(c.port, 9100);
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.publicUrl, 'http://127.0.0.1:9100');
  });

  it('reads every variable', () => {
    const c = loadConfig({
      SENSORCLOUD_PUBLIC_URL: 'https://cloud.example.com/',
      SENSORCLOUD_EMAIL_DOMAIN: 'Example.COM',
      SENSORCLOUD_RATE_LIMIT: 'off',
      SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8, ::1/128',
      SENSORCLOUD_EVENT_RETENTION: '12h',
      SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
      SENSORCLOUD_ADMIN_EMAIL: 'Boss@Example.com',
      SENSORCLOUD_ADMIN_PASSWORD: 'a-long-password',
    });
    assert.equal(c.publicUrl, 'https://cloud.example.com');
    assert.equal(c.emailDomain, 'example.com');
    assert.equal(c.rateLimit, null);
    assert.deepEqual(c.allowPrivateEndpoints, ['127.0.0.0/8', '::1/128']);
    assert.equal(c.eventRetentionSeconds, 43200);
    assert.equal(c.heartbeatIntervalSeconds, 0);
    assert.equal(c.adminEmail, 'boss@example.com');
  });

  it('names every problem in one error', () => {
    try {
      loadConfig({
        PORT: 'abc',
        SENSORCLOUD_RATE_LIMIT: 'lots',
        SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: 'nope',
        SENSORCLOUD_ADMIN_PASSWORD: 'short',
        SENSORCLOUD_DATABASE_URL: 'mysql://x',
      });
      assert.fail('expected a ConfigError');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.problems.length, 5);
      for (const name of [
        'PORT',
        'SENSORCLOUD_RATE_LIMIT',
        'SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS',
        'SENSORCLOUD_ADMIN_PASSWORD',
        'SENSORCLOUD_DATABASE_URL',
      ]) {
        assert.match(err.message, new RegExp(name));
      }
    }
  });
});

describe('config: event stream limits', () => {
  it('defaults, sizes with a unit, and clear refusals', () => {
    assert.deepEqual({ ...loadConfig({}).streamCaps }, { perPrincipal: 100, total: 1000, bufferedBytes: 64 * 2 ** 20 });
    const c = loadConfig({
      SENSORCLOUD_STREAMS_PER_CALLER: '5',
      SENSORCLOUD_STREAMS_MAX: '50',
      SENSORCLOUD_STREAM_MEMORY: '1GiB',
    });
    assert.deepEqual({ ...c.streamCaps }, { perPrincipal: 5, total: 50, bufferedBytes: 2 ** 30 });
    assert.equal(loadConfig({ SENSORCLOUD_STREAM_MEMORY: '200MB' }).streamCaps.bufferedBytes, 200e6);
    assert.throws(
      () => loadConfig({ SENSORCLOUD_STREAM_MEMORY: '64' }),
      /SENSORCLOUD_STREAM_MEMORY must be a size of at least 1MiB, like 64MiB or 1GiB, got "64"/,
    );
    assert.throws(() => loadConfig({ SENSORCLOUD_STREAM_MEMORY: '512KiB' }), /at least 1MiB/);
    assert.throws(
      () => loadConfig({ SENSORCLOUD_STREAMS_PER_CALLER: '0', SENSORCLOUD_STREAMS_MAX: 'many' }),
      /SENSORCLOUD_STREAMS_PER_CALLER must be a whole number of at least 1, got "0"; SENSORCLOUD_STREAMS_MAX must be a whole number of at least 1, got "many"/,
    );
  });
});

describe('config: password checks at once', () => {
  it('defaults, below the libuv thread pool, and no more per client than in all', () => {
    assert.deepEqual({ ...loadConfig({}).passwordChecks }, { total: 2, perClient: 1 });
    assert.deepEqual(
      {
        ...loadConfig({ SENSORCLOUD_PASSWORD_CHECKS: '3', SENSORCLOUD_PASSWORD_CHECKS_PER_CLIENT: '3' }).passwordChecks,
      },
      { total: 3, perClient: 3 },
    );
    assert.deepEqual(
      { ...loadConfig({ SENSORCLOUD_PASSWORD_CHECKS: '7', UV_THREADPOOL_SIZE: '8' }).passwordChecks },
      { total: 7, perClient: 1 },
    );
    assert.throws(
      () => loadConfig({ SENSORCLOUD_PASSWORD_CHECKS: '4' }),
      /SENSORCLOUD_PASSWORD_CHECKS must be below the 4 threads of the libuv pool.*at most 3, or raise UV_THREADPOOL_SIZE \(got 4\)/,
    );
    assert.throws(
      () => loadConfig({ SENSORCLOUD_PASSWORD_CHECKS: '2', SENSORCLOUD_PASSWORD_CHECKS_PER_CLIENT: '3' }),
      /SENSORCLOUD_PASSWORD_CHECKS_PER_CLIENT must be at most SENSORCLOUD_PASSWORD_CHECKS \(2\), got 3/,
    );
    assert.throws(
      () => loadConfig({ SENSORCLOUD_PASSWORD_CHECKS: '0' }),
      /SENSORCLOUD_PASSWORD_CHECKS must be a whole number of at least 1, got "0"/,
    );
    assert.throws(
      () => loadConfig({ UV_THREADPOOL_SIZE: 'lots' }),
      /UV_THREADPOOL_SIZE must be a whole number from 2 to 1024/,
    );
  });
});

describe('config: SMTP for e-mail actions', () => {
  it("is off by default; a URL and a sender are read, the sender defaulting to the URL's host", () => {
    const off = loadConfig({});
    assert.equal(off.smtpUrl, null);
    assert.equal(off.smtpFrom, null);
    const c = loadConfig({ SENSORCLOUD_SMTP_URL: 'smtps://alerts:s%40cret@Mail.Example.org:465' });
    assert.equal(c.smtpUrl, 'smtps://alerts:s%40cret@Mail.Example.org:465');
    assert.equal(c.smtpFrom, 'sensorcloud@mail.example.org');
    assert.equal(
      loadConfig({ SENSORCLOUD_SMTP_URL: 'smtp://mail.example.org/' }).smtpFrom,
      'sensorcloud@mail.example.org',
    );
    const ip = loadConfig({ SENSORCLOUD_SMTP_URL: 'smtp://127.0.0.1:2525', SENSORCLOUD_EMAIL_DOMAIN: 'example.net' });
    assert.equal(ip.smtpFrom, 'sensorcloud@example.net');
    assert.equal(loadConfig({ SENSORCLOUD_SMTP_URL: 'smtp://[::1]:25' }).smtpFrom, 'sensorcloud@sensorcloud.local');
    const from = loadConfig({
      SENSORCLOUD_SMTP_URL: 'smtp://mail.example.org',
      SENSORCLOUD_SMTP_FROM: 'alerts@example.org',
    });
    assert.equal(from.smtpFrom, 'alerts@example.org');
  });

  it('refuses at start what is not an smtp:// or smtps:// URL of a host, and a sender that is not one address', () => {
    for (const url of [
      'mail.example.org',
      'https://mail.example.org',
      'smtp://',
      'smtp://mail.example.org/x',
      'smtp://mail.example.org?tls=1',
    ]) {
      assert.throws(() => loadConfig({ SENSORCLOUD_SMTP_URL: url }), /SENSORCLOUD_SMTP_URL must/, url);
    }
    for (const from of ['alerts', 'Alerts <alerts@example.org>', 'a@example.org, b@example.org']) {
      assert.throws(
        () => loadConfig({ SENSORCLOUD_SMTP_URL: 'smtp://mail.example.org', SENSORCLOUD_SMTP_FROM: from }),
        /SENSORCLOUD_SMTP_FROM must be an e-mail address/,
        from,
      );
    }
    assert.throws(
      () => loadConfig({ SENSORCLOUD_SMTP_FROM: 'alerts@example.org' }),
      /SENSORCLOUD_SMTP_FROM is set but SENSORCLOUD_SMTP_URL is not/,
    );
  });
});

describe('config files', () => {
  it('refuses an unreadable or non-PEM SENSORCLOUD_CA_FILE at start', () => {
    assert.throws(
      () => loadConfig({ SENSORCLOUD_CA_FILE: '/nonexistent/ca.pem' }),
      /SENSORCLOUD_CA_FILE .* cannot be read/,
    );
    assert.throws(() => loadConfig({ SENSORCLOUD_CA_FILE: '/etc/hostname' }), /holds no PEM certificate/);
  });
});

describe('config sources', () => {
  it('a problem names what the operator typed: the flag over the variable, and never a URL derived from it', () => {
    assert.throws(
      () => loadConfig({ PORT: '8080' }, { port: 'abc' }),
      (err: ConfigError) => {
        assert.deepEqual(err.problems, [
          '--port must be a port number from 0 to 65535 (0 picks a free one), got "abc"',
        ]);
        return true;
      },
    );
    assert.throws(
      () => loadConfig({ PORT: '99999' }),
      (err: ConfigError) => {
        assert.deepEqual(err.problems, [
          'PORT must be a port number from 0 to 65535 (0 picks a free one), got "99999"',
        ]);
        return true;
      },
    );
    assert.throws(() => loadConfig({ HOST: 'a host' }), /HOST must be a host name or an IP address/);
    assert.throws(() => loadConfig({}, { host: 'x/y' }), /--host must be a host name or an IP address/);
  });

  it('checks LOG_LEVEL against the levels of the logger, and reports in one line', () => {
    assert.throws(
      () => loadConfig({ LOG_LEVEL: 'verbose' }),
      (err: ConfigError) => {
        assert.equal(
          err.message,
          'invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
        );
        return true;
      },
    );
    assert.equal(loadConfig({ LOG_LEVEL: 'silent' }).logLevel, 'silent');
  });

  it('records where port, host and data dir came from, for start-up messages', () => {
    assert.deepEqual(loadConfig({}).sources, {
      port: '--port or PORT',
      host: '--host or HOST',
      dataDir: '--data-dir or SENSORCLOUD_DATA_DIR',
    });
    assert.deepEqual(loadConfig({ PORT: '1', HOST: '::1' }, { dataDir: '/tmp/x' }).sources, {
      port: 'PORT',
      host: 'HOST',
      dataDir: '--data-dir',
    });
  });

  it('a derived public URL follows the port listened on (PORT=0); one that was set stays', () => {
    const derived = withListeningPort(loadConfig({ PORT: '0', HOST: '::1' }), 41234);
    assert.equal(derived.publicUrl, 'http://[::1]:41234');
    assert.equal(derived.port, 41234);
    assert.ok(Object.isFrozen(derived));
    const set = loadConfig({ PORT: '0', SENSORCLOUD_PUBLIC_URL: 'https://sensors.example.org' });
    assert.equal(withListeningPort(set, 41234).publicUrl, 'https://sensors.example.org');
  });
});
