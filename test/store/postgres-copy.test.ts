// PostgreSQL only: the copy of a SQLite file into a new database (store/postgres/operations/copy-from-sqlite.ts, what
// `sensorcloud admin copy-to-postgres` runs) at the store level: the notification rules, contacts, alerts, conditions
// and outbox come over as they were, a table WITHOUT ROWID (connector pacing, rule conditions) included; a leased
// outbox row comes free, and new outbox rows take ids after the copied ones. test/cluster/copy-to-postgres.test.ts
// moves a whole installation through the CLI.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { copySqliteToPostgres } from '../../src/store/postgres/operations/copy-from-sqlite.ts';
import { createPostgresStore } from '../../src/store/postgres/index.ts';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import {
  alert,
  condition,
  contact,
  contactGroup,
  id,
  MINUTE,
  notification,
  organization,
  project,
  rule,
  seedConnector,
  T0,
} from './contract/fixtures.ts';

describe('postgres: the copy from SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-copy-store-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('copies rules, contacts, alerts, conditions and the outbox as they were; a leased notification comes free', async () => {
    const file = join(dir, 'sensorcloud.db');
    const sqlite = createSqliteStore(file);
    const org = organization();
    const p = project(org.id);
    const on = rule(p.id, { displayName: 'On ☃' });
    const off = rule(p.id, { enabled: false, spec: '{"a":[1,2]}' });
    const group = contactGroup(org.id, { description: 'd' });
    const contacts = [contact(p.id, { contactGroupId: group.id }), contact(p.id)];
    const open = alert(on, id('d'), {
      timerDue: T0 + MINUTE,
      lastValue: '{"v":1}',
      notifications: [
        {
          time: T0,
          level: 0,
          type: 'EMAIL',
          target: 'a@example.com',
          transition: 'TRIGGERED',
          outcome: 'SENT',
          error: '',
        },
      ],
    });
    const resolved = alert(on, open.targetId, { state: 'RESOLVED', resolveTime: T0 });
    const conditions = [condition(on, 'd1', { due: T0 + 5 }), condition(off, 'd2', { count: 3 })];
    let outboxIds: number[];
    try {
      await sqlite.organizations.create(org);
      await sqlite.projects.create(p);
      // A paced connector: connector_pacing is a table WITHOUT ROWID.
      const c = await seedConnector(sqlite, { projectId: p.id });
      await sqlite.deliveries.setPacing(c.id, T0 + 7);
      for (const r of [on, off]) await sqlite.rules.create(r);
      await sqlite.contacts.createGroup(group);
      for (const x of contacts) await sqlite.contacts.create(x);
      for (const a of [resolved, open]) assert.equal(await sqlite.alerts.createIfNone(a), true);
      for (const x of conditions) await sqlite.conditions.put(x);
      outboxIds = await sqlite.outbox.add([
        notification(open.id, T0),
        notification(open.id, T0 + 1, { type: 'WEBHOOK', entry: 1 }),
      ]);
      assert.equal((await sqlite.outbox.claim(T0, T0 + MINUTE, 1)).length, 1, 'the first one leased');
    } finally {
      await sqlite.close();
    }

    const db = await createTestDatabase();
    try {
      const copied = await copySqliteToPostgres(file, db.url, { keyCheck: 'sealed check' });
      assert.deepEqual(
        [
          copied.rules,
          copied.contact_groups,
          copied.contacts,
          copied.alerts,
          copied.rule_conditions,
          copied.alert_outbox,
        ],
        [2, 1, 2, 2, 2, 2],
      );
      assert.equal(copied.connector_pacing, 1);
      const pg = await createPostgresStore(db.url, { poolSize: 2 });
      try {
        assert.deepEqual(await pg.rules.listByProject(p.id, { limit: 10 }), [on, off]);
        assert.deepEqual(await pg.rules.listEnabledByProject(p.id), [on]);
        assert.deepEqual(await pg.contacts.getGroup(group.id), group);
        assert.deepEqual(await pg.contacts.listByProject(p.id, { limit: 10 }), contacts);
        assert.deepEqual(await pg.alerts.list({ projectId: p.id }, { limit: 10 }), [resolved, open]);
        assert.deepEqual(await pg.alerts.openFor(on.id, open.targetId), open);
        assert.deepEqual(await pg.alerts.due(T0 + MINUTE, 10), [open.id]);
        assert.deepEqual(await pg.conditions.get(on.id, 'd1'), conditions[0]);
        assert.deepEqual(await pg.conditions.get(off.id, 'd2'), conditions[1]);
        // Both notifications are free: the leased one is due when its lease would have ended.
        const claimed = await pg.outbox.claim(T0 + MINUTE, T0 + 2 * MINUTE, 10);
        assert.deepEqual(
          claimed.map((o) => [o.id, o.alertId, o.entry, o.type]),
          [
            [outboxIds[1], open.id, 1, 'WEBHOOK'],
            [outboxIds[0], open.id, 0, 'EMAIL'],
          ],
        );
        const [next] = await pg.outbox.add([notification(open.id, T0)]);
        assert.ok(next! > Math.max(...outboxIds), `${next} after ${outboxIds}`);
        assert.equal(
          await pg.deliveries.pacingForUpdate((await pg.dataConnectors.listByProject(p.id, { limit: 1 }))[0]!.id),
          T0 + 7,
        );
        // The rule's delete cascades in the copied database too.
        await pg.rules.delete(on.id);
        assert.equal(await pg.outbox.count(), 0);
        assert.deepEqual(await pg.alerts.list({ projectId: p.id }, { limit: 10 }), []);
      } finally {
        await pg.close();
      }
    } finally {
      await db.drop();
    }
  });
});
