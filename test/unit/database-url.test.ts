// SENSORCLOUD_DATABASE_URL: the forms taken (libpq's Unix socket forms included), the URL shown without its secrets,
// and the sslmode handed to node-postgres.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import {
  connectTimeoutMs,
  databaseUrlNames,
  driverUrl,
  isDatabaseUrl,
  redactDatabaseUrl,
} from '../../src/runtime/database-url.ts';

describe('database URL', () => {
  it('takes a host, a socket directory (libpq forms, the host left empty too) and parameters; refuses other schemes', () => {
    for (const url of [
      'postgres://sc:pw@db.internal:5432/sensorcloud',
      'postgresql://sc@10.0.0.5/sensorcloud?sslmode=verify-full&sslrootcert=/etc/sensorcloud/db-ca.pem',
      'postgres://sc@/sensorcloud?host=/var/run/postgresql',
      'postgres:///sensorcloud?host=/var/run/postgresql&user=sc',
      'postgresql://sc@%2Fvar%2Frun%2Fpostgresql/sensorcloud',
    ]) {
      assert.ok(isDatabaseUrl(url), url);
      assert.equal(loadConfig({ SENSORCLOUD_DATABASE_URL: url }).databaseUrl, url);
    }
    for (const url of ['mysql://sc@db/sensorcloud', 'db.internal:5432', 'postgres://sc@db:notaport/x', '']) {
      assert.equal(isDatabaseUrl(url), false, url);
    }
    assert.throws(() => loadConfig({ SENSORCLOUD_DATABASE_URL: 'postgres://sc@db:notaport/x' }), ConfigError);
    // The service names its connections; admin commands look for that name.
    assert.throws(
      () => loadConfig({ SENSORCLOUD_DATABASE_URL: 'postgres://sc@db/x?application_name=mine' }),
      /must not set application_name/,
    );
  });

  it("takes libpq's connect_timeout as the bound of each connection attempt; 10 s without it; refuses waiting forever", () => {
    assert.equal(connectTimeoutMs('postgres://sc@db/x'), 10_000);
    assert.equal(connectTimeoutMs('postgres://sc@db/x?sslmode=verify-full&connect_timeout=5'), 5_000);
    assert.equal(connectTimeoutMs('postgres://sc@/x?host=/var/run/postgresql&connect_timeout=3600'), 3_600_000);
    // libpq reads 1 as 2.
    assert.equal(connectTimeoutMs('postgres://sc@db/x?connect_timeout=1'), 2_000);
    for (const bad of ['0', '-1', '2.5', '3601', '10s', '']) {
      assert.ok(Number.isNaN(connectTimeoutMs(`postgres://sc@db/x?connect_timeout=${bad}`)), bad);
      assert.throws(
        () => loadConfig({ SENSORCLOUD_DATABASE_URL: `postgres://sc@db/x?connect_timeout=${bad}` }),
        /connect_timeout must be a whole number of seconds from 1 to 3600 \(how long to wait for a connection; 10 when not given\)/,
      );
    }
  });

  it('is shown without its password, wherever the URL holds it', () => {
    assert.equal(
      redactDatabaseUrl('postgres://sc:hunter2@db:5432/sensorcloud'),
      'postgres://sc:***@db:5432/sensorcloud',
    );
    assert.equal(redactDatabaseUrl('postgres://sc:p@ss@db/sensorcloud'), 'postgres://sc:***@db/sensorcloud');
    assert.equal(
      redactDatabaseUrl('postgres://sc@db/sensorcloud?password=hunter2&sslmode=verify-full&sslpassword=keypass'),
      'postgres://sc@db/sensorcloud?password=***&sslmode=verify-full&sslpassword=***',
    );
    assert.equal(
      redactDatabaseUrl('postgres://sc@/sensorcloud?host=/var/run/postgresql&PASSWORD=x'),
      'postgres://sc@/sensorcloud?host=/var/run/postgresql&PASSWORD=***',
    );
    // Nothing to hide: shown as typed.
    assert.equal(redactDatabaseUrl('postgres://sc@db/sensorcloud'), 'postgres://sc@db/sensorcloud');
    assert.equal(redactDatabaseUrl('not a url'), 'postgres://…');
  });

  it('names the user and database for hints, from the authority, the path or ?user=', () => {
    assert.deepEqual(databaseUrlNames('postgres://sc@db/telemetry'), { user: 'sc', database: 'telemetry' });
    assert.deepEqual(databaseUrlNames('postgres:///telemetry?host=/run/postgresql&user=ops'), {
      user: 'ops',
      database: 'telemetry',
    });
    assert.deepEqual(databaseUrlNames('postgres://ops@/?host=/run/postgresql'), { user: 'ops', database: 'ops' });
  });

  it('hands node-postgres the sslmode it applies: prefer, require and verify-ca check the certificate as verify-full', () => {
    for (const mode of ['prefer', 'require', 'verify-ca', 'REQUIRE']) {
      assert.equal(
        driverUrl(`postgres://sc@db/x?sslmode=${mode}&sslrootcert=/ca.pem`),
        'postgres://sc@db/x?sslmode=verify-full&sslrootcert=/ca.pem',
      );
    }
    for (const url of [
      'postgres://sc@db/x?sslmode=verify-full',
      'postgres://sc@db/x?sslmode=no-verify',
      'postgres://sc@db/x?sslmode=disable',
      'postgres://sc@db/x',
      'postgres://sc@db/x?uselibpqcompat=true&sslmode=require',
    ]) {
      assert.equal(driverUrl(url), url);
    }
    // node-postgres takes only the lowercase `true` as asking for libpq's meaning.
    assert.equal(
      driverUrl('postgres://sc@db/x?uselibpqcompat=TRUE&sslmode=require'),
      'postgres://sc@db/x?uselibpqcompat=TRUE&sslmode=verify-full',
    );
  });
});
