// The start-up line for a connection PostgreSQL refused by pg_hba.conf (28000). The server writes its reason in its
// own language (lc_messages); only the English one says "no encryption", so a refusal of a connection made without
// TLS names TLS as a cure whatever the words.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { plainTcp } from '../../src/runtime/database-url.ts';
import { explainConnectError } from '../../src/store/operations/open.ts';

const refused = (message: string) => Object.assign(new Error(message), { code: '28000' });
const TLS = "add sslmode=verify-full&sslrootcert=<the CA certificate that signed the server's> to the URL";

describe('a connection refused by pg_hba.conf', () => {
  it('names TLS from the English words, and without them for a connection made without TLS', () => {
    const url = 'postgres://sensorcloud:pw@db.internal/sensorcloud';
    assert.equal(
      explainConnectError(
        refused('no pg_hba.conf entry for host "10.0.0.5", user "sensorcloud", database "sensorcloud", no encryption'),
        url,
      ).message,
      `SENSORCLOUD_DATABASE_URL postgres://sensorcloud:***@db.internal/sensorcloud: cannot use the database (28000): the server accepts this user over TLS only: ${TLS}`,
    );
    // German, as a server with lc_messages = 'de_DE.UTF-8' words it.
    assert.equal(
      explainConnectError(
        refused(
          'kein pg_hba.conf-Eintrag für Host »10.0.0.5«, Benutzer »sensorcloud«, Datenbank »sensorcloud«, keine Verschlüsselung',
        ),
        url,
      ).message,
      `SENSORCLOUD_DATABASE_URL postgres://sensorcloud:***@db.internal/sensorcloud: cannot use the database (28000): the server refused this user (pg_hba.conf); if it accepts this user over TLS only, ${TLS}`,
    );
  });

  it('does not name TLS when the connection asked for it, or went through a Unix socket', () => {
    for (const url of [
      'postgres://u@db.internal/sc?sslmode=verify-full',
      'postgres://u@db.internal/sc?ssl=true',
      'postgres://u@/sc?host=/var/run/postgresql',
    ]) {
      assert.equal(plainTcp(url), false, url);
      assert.match(
        explainConnectError(refused('kein pg_hba.conf-Eintrag'), url).message,
        /\(28000\): the server refused this user \(pg_hba\.conf\)$/,
        url,
      );
    }
    assert.equal(plainTcp('postgres://u@db.internal/sc?sslmode=disable'), true);
  });
});
