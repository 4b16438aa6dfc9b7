// `events export` of 10,000 events: every event exactly once, newest first, page after page (the API pages by at
// most 1000), as NDJSON and as CSV; the events are seeded through the API's :publish (rate limit off).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
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
  // One event per second, ending a minute ago: distinct timestamps, all inside --since 7d.
  const start = Date.now() - (COUNT + 60) * 1000;
  let next = 0;
  const worker = async () => {
    while (next < COUNT) {
      const i = next++;
      const res = await s.api('POST', `${device}:publish`, { touchCount: { total: i, updateTime: new Date(start + i * 1000).toISOString() } });
      assert.equal(res.status, 200);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
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
