// The PostgreSQL server's version, checked at start-up before anything else of it: refused before 12 (the migrations
// use what came with 12), a warning from 12 to 14 (not tested), nothing from 15 on (what the tests run against).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkVersion } from '../../src/store/postgres/operations/server-check.ts';
import { capturedLog } from '../helpers/captured-log.ts';

/** A connection to a server of this version, as the two settings read it. */
const server = (num: number, version: string) =>
  ({
    query: async () => ({ rows: [{ num, version }] }),
  }) as unknown as Parameters<typeof checkVersion>[0];

describe('the PostgreSQL server version', () => {
  it('refuses a server before 12 in one line that says what to do', async () => {
    await assert.rejects(
      checkVersion(server(110022, '11.22 (Debian 11.22-1.pgdg120+1)')),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'SERVER_VERSION');
        assert.equal(
          err.message,
          'the database server runs PostgreSQL 11.22, and the service needs 12 or later (its tests run against 15): upgrade the server (pg_upgrade), or point the URL at a newer one',
        );
        return true;
      },
    );
    await assert.rejects(
      checkVersion(server(90624, '9.6.24')),
      /PostgreSQL 9\.6\.24, and the service needs 12 or later/,
    );
  });

  it('starts on 12 to 14 with a warning, and on 15 and later without one', async () => {
    const { logger, lines } = capturedLog(['warn']);
    await checkVersion(server(140010, '14.10'), logger);
    await checkVersion(server(120000, '12.0'), logger);
    assert.deepEqual(
      lines.map((l) => l.fields.serverVersion),
      ['14.10', '12.0'],
    );
    assert.match(
      lines[0]!.message,
      /^database: the server runs PostgreSQL 14\.10, which the service starts on but is not tested with/,
    );
    await checkVersion(server(150018, '15.18 (Debian 15.18-0+deb12u1)'), logger);
    await checkVersion(server(170002, '17.2'), logger);
    assert.equal(lines.length, 2);
  });
});
