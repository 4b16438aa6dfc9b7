// Which statements find nothing when a parameter holds NUL (both stores, src/store/sql/nul-text.ts): those that only
// read or delete, whatever their shape; every statement that inserts or updates rows is refused instead.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findsNothing, holdsNul } from '../../src/store/sql/nul-text.ts';

describe('text holding NUL in a statement', () => {
  it('finds nothing in a read or a delete, however it is written', () => {
    for (const sql of [
      'SELECT * FROM devices WHERE id = $1',
      'SELECT * FROM devices WHERE id = ANY($1::text[]) ORDER BY id COLLATE "C" FOR NO KEY UPDATE',
      'DELETE FROM deliveries WHERE connector_id = $1',
      'WITH e AS (DELETE FROM events WHERE device_id = $1) DELETE FROM devices WHERE id = $1',
      '  with sas as (select id from service_accounts where project_id = ?) delete from projects where id = ?',
    ])
      assert.equal(findsNothing(sql), true, sql);
  });

  it('is refused in any statement that inserts or updates rows', () => {
    for (const sql of [
      'INSERT INTO projects (id, display_name) VALUES ($1, $2)',
      'INSERT INTO delivery_counters (series, value) VALUES ($1, $2) ON CONFLICT (series) DO UPDATE SET value = $2',
      'UPDATE projects SET display_name = $1 WHERE id = $2',
      'UPDATE devices d SET reported = u.reported FROM unnest($1::text[]) AS u(reported) WHERE d.id = u.id',
      'WITH e AS (UPDATE events SET project_id = $2 WHERE device_id = $1) UPDATE devices SET project_id = $2 WHERE id = $1',
      'WITH ins AS (INSERT INTO cluster_settings (name, value) VALUES ($1, $2) RETURNING value) SELECT value FROM ins',
    ])
      assert.equal(findsNothing(sql), false, sql);
  });

  it('is looked for in text parameters only', () => {
    assert.equal(holdsNul(['a', 1, null, Buffer.from([0])]), false);
    assert.equal(holdsNul(['a', 'b\u0000']), true);
  });
});
