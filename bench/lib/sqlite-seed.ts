// Large fixtures written straight into the service's SQLite file while the service is stopped (the HTTP path
// would take far longer than the benchmark budget). Rows are cloned from ones the service itself created, so
// the schema is read, never assumed; a missing table or column makes the scenario skip, not crash.
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { Skip } from './api.ts';

const ALPHABET = '0123456789abcdefghijklmnopqrstuv';
let counter = randomBytes(3).readUIntBE(0, 3);
const machine = randomBytes(5);

/** A 20-character xid-like id (contract §1.7), like the service's own. */
export function newId(): string {
  const buf = Buffer.alloc(12);
  buf.writeUInt32BE(Math.floor(Date.now() / 1000) >>> 0, 0);
  machine.copy(buf, 4);
  counter = (counter + 1) & 0xffffff;
  buf.writeUIntBE(counter, 9, 3);
  let out = '';
  let acc = 0;
  let bits = 0;
  for (const b of buf) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET[(acc << (5 - bits)) & 31];
  return out;
}

interface Column {
  name: string;
  type: string;
  pk: number;
}

export function openDb(file: string): Database.Database {
  if (!existsSync(file)) throw new Skip(`database file not found: ${file}`);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.pragma('busy_timeout = 10000');
  return db;
}

export function columns(db: Database.Database, table: string): Column[] {
  const cols = db.prepare(`PRAGMA table_info(${JSON.stringify(table)})`).all() as Column[];
  if (cols.length === 0) throw new Skip(`table ${table} not found in the service database`);
  return cols;
}

function requireColumns(table: string, cols: Column[], names: string[]): void {
  for (const n of names)
    if (!cols.some((c) => c.name === n)) throw new Skip(`column ${table}.${n} not found; the seeding needs it`);
}

/** Inserts copies of `template` with the given overrides, in one transaction. */
export function cloneRows(
  db: Database.Database,
  table: string,
  template: Record<string, unknown>,
  count: number,
  overrides: (i: number) => Record<string, unknown>,
): void {
  const cols = columns(db, table).map((c) => c.name);
  const probe = overrides(0);
  requireColumns(table, columns(db, table), Object.keys(probe));
  const stmt = db.prepare(
    `INSERT INTO ${JSON.stringify(table)} (${cols.map((c) => JSON.stringify(c)).join(',')}) VALUES (${cols.map(() => '?').join(',')})`,
  );
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const row = { ...template, ...overrides(i) };
      stmt.run(...cols.map((c) => row[c]));
    }
  })();
}

export interface QueueSeed {
  realRows: number;
  copiedRows: number;
  madeDue: string[];
}

/**
 * Grows the delivery queue to `target` rows by copying the rows the service queued itself (doubling
 * INSERT … SELECT), then makes every row due now with its lease cleared, so the drain measures throughput
 * rather than the retry schedule.
 */
export function growQueue(db: Database.Database, target: number, nowMicros: number): QueueSeed {
  const cols = columns(db, 'deliveries');
  const realRows = (db.prepare('SELECT count(*) AS n FROM deliveries').get() as { n: number }).n;
  if (realRows === 0) throw new Skip('the service queued nothing while the receiver was down');
  const pk = cols.filter((c) => c.pk > 0);
  const autoPk = pk.length === 1 && pk[0]!.type.toUpperCase() === 'INTEGER';
  if (pk.length > 0 && !autoPk)
    throw new Skip(`deliveries has a non-integer primary key (${pk.map((c) => c.name).join(', ')}); cannot copy rows`);
  const copy = cols
    .filter((c) => !(autoPk && c.pk > 0))
    .map((c) => JSON.stringify(c.name))
    .join(',');
  let rows = realRows;
  while (rows < target) {
    const add = Math.min(rows, target - rows);
    db.prepare(`INSERT INTO deliveries (${copy}) SELECT ${copy} FROM deliveries LIMIT ?`).run(add);
    rows += add;
  }
  const madeDue: string[] = [];
  const names = new Set(cols.map((c) => c.name));
  if (names.has('due_time')) {
    db.prepare('UPDATE deliveries SET due_time = ?').run(nowMicros);
    madeDue.push('due_time');
  }
  if (names.has('lease_until')) {
    db.prepare('UPDATE deliveries SET lease_until = NULL').run();
    madeDue.push('lease_until');
  }
  return { realRows, copiedRows: rows - realRows, madeDue };
}

/** Bytes of a table and its indexes (dbstat), or null when SQLite lacks the dbstat table. */
export function tableBytes(db: Database.Database, table: string): number | null {
  try {
    const r = db
      .prepare(
        `SELECT sum(pgsize) AS bytes FROM dbstat WHERE name = ? OR name IN (SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?)`,
      )
      .get(table, table) as { bytes: number | null };
    return r.bytes ?? 0;
  } catch {
    return null;
  }
}

/** Checkpoints the WAL into the main file and returns the file's size. */
export function checkpointedSize(db: Database.Database, file: string): number {
  db.pragma('wal_checkpoint(TRUNCATE)');
  const wal = `${file}-wal`;
  return statSync(file).size + (existsSync(wal) ? statSync(wal).size : 0);
}
