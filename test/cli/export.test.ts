// `events export` of 10,000 events: every event exactly once, newest first, page after page (the API pages by at
// most 1000), as NDJSON and as CSV. The events are written into the running service's database through its own
// store (one transaction; SQLite in WAL mode takes a second process), which takes a second where 10,000
// :publish calls took twenty; a few are published through the API as well.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { formatTimestamp } from '../../src/domain/time.ts';
import { systemClock } from '../../src/runtime/clock.ts';
import { createIdGenerator } from '../../src/runtime/ids.ts';
import { systemRandom } from '../../src/runtime/random.ts';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import { envCredentials, startService, type Service } from './harness.ts';

const COUNT = 10_000;
let s: Service;
let device: string;
/** eventId of each seeded event, oldest first. */
let seeded: string[] = [];

let setup: Promise<void> | null = null;
const ready = () => (setup ??= (async () => {
  s = await startService();
  const created = await s.api('POST', `${s.boot.project}/devices`, { type: 'touchCounter' });
  device = created.body.name;
  const deviceId = device.split('/').pop()!;
  // One event per second, ending a few minutes ago: distinct timestamps, all inside --since 7d.
  const PUBLISHED = 3;
  const startMicros = (Date.now() - (COUNT + 300) * 1000) * 1000;
  const ids = createIdGenerator(systemClock, systemRandom);
  const store = createSqliteStore(join(s.dataDir, 'sensorcloud.db'));
  try {
    await store.transaction(async (tx) => {
      for (let i = 0; i < COUNT - PUBLISHED; i++) {
        const timestamp = startMicros + i * 1_000_000;
        const event = { eventId: ids.next(), targetName: device, eventType: 'touchCount', data: { touchCount: { total: i, updateTime: formatTimestamp(timestamp) } }, timestamp: formatTimestamp(timestamp) };
        await tx.events.insert({ id: event.eventId, projectId: s.projectId, deviceId, eventType: 'touchCount', timestamp, createTime: timestamp, body: JSON.stringify(event) });
      }
    });
  } finally {
    await store.close();
  }
  for (let i = COUNT - PUBLISHED; i < COUNT; i++) {
    const res = await s.api('POST', `${device}:publish`, { touchCount: { total: i, updateTime: formatTimestamp(startMicros + i * 1_000_000) } });
    assert.equal(res.status, 200);
  }
  seeded = [];
  for await (const page of pagesOldestFirst()) seeded.push(...page);
})());

/** The seeded ids from the API directly (newest first in the API), returned oldest first. */
async function* pagesOldestFirst(): AsyncGenerator<string[]> {
  const all: string[] = [];
  // The same filters on every page: a page token is bound to them.
  const since = encodeURIComponent(new Date(Date.now() - 7 * 86_400_000).toISOString());
  let token = '';
  do {
    const res = await s.api('GET', `${device}/events?pageSize=1000&startTime=${since}&pageToken=${encodeURIComponent(token)}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    all.push(...res.body.events.map((e: any) => e.eventId));
    token = res.body.nextPageToken;
  } while (token);
  yield all.reverse();
}

describe('happy', () => {
  before(ready);

  it('exports all 10,000 events as NDJSON, newest first, each once', { timeout: 120_000 }, async () => {
    assert.equal(seeded.length, COUNT);
    const file = join(s.dataDir, 'history.ndjson');
    const r = await s.run(['events', 'export', '--device', device, '--since', '7d', '--format', 'ndjson', '--output', file], { env: envCredentials(s), timeoutMs: 90_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Exported 10,000 events/);
    const events = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.equal(events.length, COUNT);
    assert.deepEqual(events.map((e) => e.eventId), [...seeded].reverse());
    // Newest first: each count is one less than the one before it.
    events.forEach((e, i) => assert.equal(e.data.touchCount.total, COUNT - 1 - i));
  });

  it('exports them as CSV to stdout', { timeout: 120_000 }, async () => {
    const r = await s.run(['events', 'export', '--device', device, '--since', '7d'], { env: envCredentials(s), timeoutMs: 90_000 });
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.trimEnd().split('\n');
    assert.equal(rows.length, COUNT + 1);
    assert.equal(rows[0], 'timestamp,eventId,device,eventType,data');
    assert.deepEqual(rows.slice(1).map((row) => row.split(',')[1]), [...seeded].reverse());
    const timestamps = rows.slice(1).map((row) => Date.parse(row.split(',')[0]!));
    for (let i = 1; i < timestamps.length; i++) assert.ok(timestamps[i]! < timestamps[i - 1]!, `row ${i + 1} is older than the row before`);
  });
});
