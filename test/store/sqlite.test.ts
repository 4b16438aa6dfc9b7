// The Store contract on SQLite (in memory and on disk), plus SQLite-specific behaviour.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { HISTORY_SQL } from '../../src/store/sqlite/repos/events.ts';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import { storeContract } from './contract.ts';
import { device, event, row, seedConnector, seedProject, T0 } from './contract/fixtures.ts';
import { until } from '../helpers/until.ts';

storeContract('sqlite (memory)', () => createSqliteStore(':memory:'));

const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
storeContract('sqlite (file)', () => createSqliteStore(join(dir, `contract-${++files}.db`)));

describe('sqlite specifics', () => {
  it('uses WAL and applies migrations once, quietly on a new database', async () => {
    const file = join(dir, 'wal.db');
    const logged: unknown[] = [];
    const first = createSqliteStore(file, { logger: { info: (...args: unknown[]) => logged.push(args) } as never });
    assert.deepEqual(logged, []);
    assert.equal(first.db.raw.pragma('journal_mode', { simple: true }), 'wal');
    const versions = first.db.all<{ version: number }>('SELECT version FROM schema_migrations');
    await first.close();
    const second = createSqliteStore(file);
    assert.deepEqual(second.db.all<{ version: number }>('SELECT version FROM schema_migrations'), versions);
    await second.close();
  });

  it('migration 080 keeps the latest event of each type on the device row, from reported_times and the history', async () => {
    const file = join(dir, 'latest.db');
    const store = createSqliteStore(file);
    const raw = store.db.raw;
    // Back to the schema before 080, with devices and history written as they were then.
    raw.exec(`ALTER TABLE devices DROP COLUMN latest_events;
      ALTER TABLE devices ADD COLUMN reported_times TEXT NOT NULL DEFAULT '{}';
      DROP INDEX events_by_device_time;
      CREATE INDEX events_by_device_time ON events(device_id, timestamp DESC, id DESC);
      CREATE INDEX events_by_device_type_time ON events(device_id, event_type, timestamp DESC, id DESC);
      DELETE FROM schema_migrations WHERE version = 80;
      INSERT INTO organizations VALUES ('o1', 'o', 0);
      INSERT INTO projects (id, organization_id, display_name, location, create_time, update_time) VALUES ('p1', 'o1', 'p', '{}', 0, 0);`);
    const device = raw.prepare(
      "INSERT INTO devices (id, project_id, type, product_number, emulated, create_time, update_time, reported_times) VALUES (?, 'p1', 'touch', '', 1, 0, 0, ?)",
    );
    // d1: the newest touch is stored (two at 300: the greater id is the latest); labelsChanged is never in
    // reported_times. d2: retention deleted its newest touch (900); an older one is still stored. d3: no history.
    device.run('d1', '{"touch":300,"temperature":50}');
    device.run('d2', '{"touch":900}');
    device.run('d3', '{"networkStatus":5}');
    device.run('d4', '{}');
    const insert = raw.prepare(
      "INSERT INTO events (id, project_id, device_id, event_type, timestamp, create_time, body) VALUES (?, 'p1', ?, ?, ?, 0, '{}')",
    );
    for (const [id, d, type, timestamp] of [
      ['e1', 'd1', 'touch', 300],
      ['e2', 'd1', 'touch', 100],
      ['e3', 'd1', 'temperature', 50],
      ['e4', 'd1', 'touch', 300],
      ['e5', 'd1', 'labelsChanged', 70],
      ['e6', 'd2', 'touch', 7],
    ] as const)
      insert.run(id, d, type, timestamp);
    await store.close();

    const logged: Array<[Record<string, unknown>, string]> = [];
    const migrated = createSqliteStore(file, {
      logger: { info: (obj: Record<string, unknown>, msg: string) => logged.push([obj, msg]) } as never,
    });
    assert.deepEqual(
      logged.map(([obj, msg]) => [obj.migration, msg]),
      [
        [
          '080_latest_event_per_type.sql',
          'upgrading the database schema; with a long event history this can take minutes',
        ],
        ['080_latest_event_per_type.sql', 'database schema upgraded'],
      ],
    );
    assert.equal(typeof logged[1]![0].ms, 'number');
    const rows = migrated.db.all<{ id: string; latest_events: string }>(
      'SELECT id, latest_events FROM devices ORDER BY id',
    );
    assert.deepEqual(
      rows.map((r) => [r.id, JSON.parse(r.latest_events)]),
      [
        ['d1', { labelsChanged: [70, 'e5'], temperature: [50, 'e3'], touch: [300, 'e4'] }],
        ['d2', { touch: [900, ''] }],
        ['d3', { networkStatus: [5, ''] }],
        ['d4', {}],
      ],
    );
    assert.deepEqual((await migrated.devices.get('d2'))?.latestEvents, { touch: [900, ''] });
    assert.deepEqual(
      (await migrated.events.latestPerType('p1', ['touch', 'temperature', 'labelsChanged'])).map((e) => e.id),
      ['e3', 'e5', 'e4', 'e6'],
    );
    const columns = migrated.db
      .all<{ name: string }>('SELECT name FROM pragma_table_info(?)', 'devices')
      .map((c) => c.name);
    assert.ok(columns.includes('latest_events') && !columns.includes('reported_times'));
    const indexes = migrated.db.all<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    );
    assert.deepEqual(
      indexes.map((i) => i.name),
      ['events_by_device_time'],
    );
    await migrated.close();
  });

  it('migration 090 rebuilds the per-device time index ascending; history reads the same, newest first', async () => {
    const file = join(dir, 'ascending.db');
    const store = createSqliteStore(file);
    const raw = store.db.raw;
    raw.exec(`DROP INDEX events_by_device_time;
      CREATE INDEX events_by_device_time ON events(device_id, timestamp DESC, id DESC, event_type);
      DELETE FROM schema_migrations WHERE version = 90;`);
    const insert = raw.prepare(
      "INSERT INTO events (id, project_id, device_id, event_type, timestamp, create_time, body) VALUES (?, 'p1', ?, ?, ?, 0, '{}')",
    );
    for (const [id, d, type, timestamp] of [
      ['e1', 'd1', 'touch', 300],
      ['e2', 'd1', 'touch', 100],
      ['e3', 'd1', 'temperature', 300],
      ['e4', 'd2', 'touch', 500],
      ['e5', 'd1', 'touch', 200],
    ] as const)
      insert.run(id, d, type, timestamp);
    const history = (s: typeof store) =>
      s.events.listByDevice({ deviceId: 'd1', startTime: 0, endTime: 1000, eventTypes: [], limit: 10 });
    const before = (await history(store)).map((e) => e.id);
    await store.close();

    const migrated = createSqliteStore(file);
    const order = migrated.db.all<{ name: string; desc: number }>(
      "SELECT name, desc FROM pragma_index_xinfo('events_by_device_time') WHERE key = 1",
    );
    assert.deepEqual(
      order.map((c) => [c.name, c.desc]),
      [
        ['device_id', 0],
        ['timestamp', 0],
        ['id', 0],
        ['event_type', 0],
      ],
    );
    assert.deepEqual(
      (await history(migrated)).map((e) => e.id),
      before,
    );
    assert.deepEqual(before, ['e3', 'e1', 'e5', 'e2']);
    await migrated.close();
  });

  it('migration 100 puts the small device columns first and keeps every device as it was', async () => {
    const file = join(dir, 'columns.db');
    const store = createSqliteStore(file);
    const raw = store.db.raw;
    // The table as migrations 001-090 left it: latest_events last, behind labels and reported.
    raw.exec(`DROP TABLE devices; DELETE FROM schema_migrations WHERE version = 100;
      CREATE TABLE devices (id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES projects(id), type TEXT NOT NULL,
        product_number TEXT NOT NULL, labels TEXT NOT NULL DEFAULT '{}', reported TEXT NOT NULL DEFAULT '{}', emulated INTEGER NOT NULL,
        create_time INTEGER NOT NULL, update_time INTEGER NOT NULL, latest_events TEXT NOT NULL DEFAULT '{}');
      CREATE INDEX devices_by_project ON devices(project_id, id);
      INSERT INTO organizations (id, display_name, create_time) VALUES ('o1', 'O', 0);
      INSERT INTO projects (id, organization_id, display_name, location, labels, create_time, update_time) VALUES ('p1', 'o1', 'P', '{}', '{}', 0, 0);`);
    const big = JSON.stringify({ temperature: { value: 1, samples: Array(5000).fill({ value: 1 }) } });
    raw
      .prepare(
        `INSERT INTO devices VALUES ('emu1', 'p1', 'temperature', '102058', '{"a":"b"}', ?, 1, 5, 6, '{"networkStatus":[7,"e1"]}')`,
      )
      .run(big);
    raw.prepare(`INSERT INTO devices VALUES ('d2', 'p1', 'touch', '100110', '{}', '{}', 0, 8, 9, '{}')`).run();
    await store.close();

    const migrated = createSqliteStore(file);
    const columns = migrated.db
      .all<{ name: string }>("SELECT name FROM pragma_table_info('devices')")
      .map((c) => c.name);
    assert.deepEqual(columns, [
      'id',
      'project_id',
      'type',
      'product_number',
      'emulated',
      'create_time',
      'update_time',
      'latest_events',
      'labels',
      'reported',
    ]);
    const device = (await migrated.devices.get('emu1'))!;
    assert.deepEqual(
      [device.labels, device.reported, device.latestEvents, device.emulated, device.createTime, device.updateTime],
      [{ a: 'b' }, JSON.parse(big), { networkStatus: [7, 'e1'] }, true, 5, 6],
    );
    assert.deepEqual(await migrated.devices.listEmulated({ limit: 10 }), [
      { id: 'emu1', type: 'temperature', latestEvents: { networkStatus: [7, 'e1'] } },
    ]);
    assert.deepEqual(
      (await migrated.devices.listByProject('p1', { limit: 10 })).map((d) => d.id),
      ['d2', 'emu1'],
    );
    await migrated.close();
  });

  it("migration 190 names each published event's deliveries on its row, from the queue and the log", async () => {
    const file = join(dir, 'event-deliveries.db');
    const store = createSqliteStore(file);
    const p = await seedProject(store);
    const d = device(p.id);
    await store.devices.create(d);
    const [c1, c2] = [await seedConnector(store, { projectId: p.id }), await seedConnector(store, { projectId: p.id })];
    const [e0, e1, e2] = [event(d, T0), event(d, T0 + 1), event(d, T0 + 2)];
    for (const e of [e0, e1, e2]) await store.events.insert(e);
    // e0 to both connectors, e1 to c2, e2 to none; e0 resent to c1 later.
    const rows = [row(c1!.id, T0, { eventId: e0.id }), row(c2!.id, T0, { eventId: e0.id })];
    await store.deliveries.insert(rows);
    const e1Row = row(c2!.id, T0 + 1, { eventId: e1.id });
    await store.deliveries.insert([e1Row]);
    const resent = row(c1!.id, T0 + 5, { eventId: e0.id, trigger: 'RESEND' });
    await store.deliveries.insert([resent]);
    const [q0, q1, q2] = [rows[0]!.queued!.id, rows[1]!.queued!.id, e1Row.queued!.id];
    // e0's first delivery ended (its queue row gone, its log row kept), the rest still queued.
    await store.deliveries.delete(q0);
    store.db.run(
      `INSERT INTO delivery_log (id, connector_id, event_id, event_type, device_id, trigger, state, attempt_count,
         create_time, update_time, next_attempt_time, attempts) VALUES (?, ?, ?, 'touch', ?, 0, 2, 1, ?, ?, NULL, '[]')`,
      q0,
      c1!.id,
      e0.id,
      d.id,
      T0,
      T0,
    );
    const named = () =>
      store.db.all<{ id: string; first: number | null; last: number | null }>(
        'SELECT id, first_delivery AS first, last_delivery AS last FROM events ORDER BY id',
      );
    assert.deepEqual(named(), [
      { id: e0.id, first: q0, last: q1 },
      { id: e1.id, first: q2, last: q2 },
      { id: e2.id, first: null, last: null },
    ]);
    // Back to the schema before 190: no names on the events, the event index over every delivery.
    store.db.raw.exec(`DROP INDEX delivery_log_by_event;
      ALTER TABLE events DROP COLUMN first_delivery; ALTER TABLE events DROP COLUMN last_delivery;
      CREATE INDEX delivery_log_by_event ON delivery_log(event_id, connector_id);
      DELETE FROM schema_migrations WHERE version = 190;`);
    await store.close();

    const migrated = createSqliteStore(file);
    assert.deepEqual(
      migrated.db.all('SELECT id, first_delivery AS first, last_delivery AS last FROM events ORDER BY id'),
      [
        { id: e0.id, first: q0, last: q1 },
        { id: e1.id, first: q2, last: q2 },
        { id: e2.id, first: null, last: null },
      ],
    );
    const index = migrated.db.get<{ sql: string }>(
      "SELECT sql FROM sqlite_master WHERE name = 'delivery_log_by_event'",
    );
    assert.match(index!.sql, /WHERE trigger <> 0$/);
    const found = await migrated.deliveryLog.list({ connectorIds: [c1!.id, c2!.id], eventId: e0.id }, 10, T0);
    assert.deepEqual(
      found.map((r) => r.id),
      [resent.queued!.id, q1, q0],
    );
    await migrated.close();
  });
});

describe('sqlite statements', () => {
  it('bind no LIMIT or OFFSET as a bare parameter, which would recompile the statement at every call (db.ts)', () => {
    const sqliteDir = fileURLToPath(new URL('../../src/store/sqlite/', import.meta.url));
    const bare = readdirSync(sqliteDir)
      .filter((f) => f.endsWith('.ts'))
      .flatMap((f) =>
        (readFileSync(join(sqliteDir, f), 'utf8').match(/\b(LIMIT|OFFSET)\s+\?/gi) ?? []).map((m) => `${f}: ${m}`),
      );
    assert.deepEqual(bare, []);
  });

  it("reads a device's history newest first by walking its ascending time index backwards, without a sort", async () => {
    const store = createSqliteStore(':memory:');
    const plan = store.db.raw
      .prepare(`EXPLAIN QUERY PLAN ${HISTORY_SQL}`)
      .all(...Array(10).fill(1))
      .map((r) => (r as { detail: string }).detail);
    assert.ok(
      plan.some((d) => d.includes('USING INDEX events_by_device_time')),
      plan.join('\n'),
    );
    assert.ok(!plan.some((d) => d.includes('TEMP B-TREE')), plan.join('\n'));
    const columns = store.db.all<{ name: string; desc: number }>(
      "SELECT name, desc FROM pragma_index_xinfo('events_by_device_time') WHERE key = 1",
    );
    assert.deepEqual(columns, [
      { name: 'device_id', desc: 0 },
      { name: 'timestamp', desc: 0 },
      { name: 'id', desc: 0 },
      { name: 'event_type', desc: 0 },
    ]);
    await store.close();
  });

  it('pages with a LIMIT +? exactly as with a literal limit, a negative one meaning none', async () => {
    const store = createSqliteStore(':memory:');
    const raw = store.db.raw;
    raw.exec('CREATE TABLE t (x INTEGER)');
    for (let i = 0; i < 10; i++) raw.prepare('INSERT INTO t VALUES (?)').run(i);
    const page = (limit: number, after: number) =>
      store.db.all<{ x: number }>('SELECT x FROM t WHERE x > ? ORDER BY x LIMIT +?', after, limit).map((r) => r.x);
    assert.deepEqual(page(3, -1), [0, 1, 2]);
    assert.deepEqual(page(3, 2), [3, 4, 5]);
    assert.deepEqual(page(0, -1), []);
    assert.equal(page(-1, -1).length, 10);
    await store.close();
  });
});

describe('sqlite checkpoints', () => {
  it('turns off the in-commit autocheckpoint and checkpoints the WAL from a worker thread', async () => {
    const file = join(dir, 'checkpoint.db');
    const store = createSqliteStore(file);
    try {
      assert.equal(store.db.raw.pragma('wal_autocheckpoint', { simple: true }), 0);
      const before = statSync(file).size;
      await store.transaction(async (tx) => {
        for (let i = 0; i < 200; i++)
          await tx.organizations.create({
            id: `o${String(i).padStart(19, '0')}`,
            displayName: 'x'.repeat(500),
            createTime: i,
          });
      });
      // The worker copies committed pages into the database file; wait for it (bounded), without asserting a time.
      await until('the database file to receive the checkpointed pages', () => statSync(file).size > before);
    } finally {
      await store.close();
    }
  });

  it('runs re-runnable transactions without a savepoint, and undoes one that fails after writing by running the others again', async () => {
    const store = createSqliteStore(':memory:');
    try {
      const savepoints: string[] = [];
      const exec = store.db.raw.exec.bind(store.db.raw);
      store.db.raw.exec = (sql: string) => {
        if (sql.startsWith('SAVEPOINT')) savepoints.push(sql);
        return exec(sql);
      };
      const org = (i: number) => ({ id: `r${String(i).padStart(19, '0')}`, displayName: `r${i}`, createTime: i });
      const calls = [0, 0, 0];
      const rerunnable = { rerunnable: true };
      // Alone in their commit, all succeeding: no savepoint at all.
      await Promise.all(
        [0, 1].map((i) =>
          store.transaction(async (tx) => {
            calls[i]!++;
            await tx.organizations.create(org(i));
          }, rerunnable),
        ),
      );
      assert.deepEqual({ savepoints, calls }, { savepoints: [], calls: [1, 1, 0] });
      // The middle one fails after writing: the commit is undone with it, 0 runs again and 2 runs (once), both in savepoints.
      calls.fill(0);
      const results = await Promise.allSettled([
        store.transaction(async (tx) => {
          calls[0]!++;
          await tx.organizations.create(org(10));
        }, rerunnable),
        store.transaction(async (tx) => {
          calls[1]!++;
          await tx.organizations.create(org(11));
          throw new Error('fails after writing');
        }, rerunnable),
        store.transaction(async (tx) => {
          calls[2]!++;
          await tx.organizations.create(org(12));
        }, rerunnable),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      assert.deepEqual(calls, [2, 1, 1]);
      assert.equal(savepoints.length, 2);
      const names = store.db
        .all<{ id: string }>("SELECT id FROM organizations WHERE id LIKE 'r%' ORDER BY id")
        .map((r) => r.id);
      assert.deepEqual(names, [org(0).id, org(1).id, org(10).id, org(12).id]);
    } finally {
      await store.close();
    }
  });

  it('starts the WAL over under a steady stream of commits instead of letting it grow', async () => {
    const file = join(dir, 'restart.db');
    const store = createSqliteStore(file, { checkpoints: { intervalMs: 5, restartFrames: 64 } });
    try {
      // A writer that never pauses, until the checkpointer has run a few rounds beside it (bounded in count).
      let commits = 0;
      while (store.checkpointRounds() < 5 && commits < 200_000) {
        const i = commits++;
        await store.transaction((tx) =>
          tx.organizations.create({ id: `o${String(i).padStart(19, '0')}`, displayName: 'x', createTime: i }),
        );
      }
      assert.ok(
        store.checkpointRounds() >= 5,
        `only ${store.checkpointRounds()} checkpoint rounds in ${commits} commits`,
      );
      // Every commit appends at least one frame; a WAL never started over would hold at least one per commit.
      const [{ log }] = store.db.raw.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>;
      assert.ok(log < commits / 2, `the WAL holds ${log} frames after ${commits} commits`);
      assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM organizations')?.n, commits);
    } finally {
      await store.close();
    }
  });
});
