// `events export` of 10,000 events: every event exactly once, newest first, page after page (the API pages by at
// most 1000), as NDJSON and as CSV. The events are written into the running service's database through its own
// store (one transaction; SQLite in WAL mode takes a second process), which takes a second where 10,000
// :publish calls took twenty; a few are published through the API as well. The CSV's shape, one row per field
// value, is pinned here for the CLI and for the console's Export CSV, which repeats the code (they must agree).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { eventsToCsv } from '../../console/src/events-csv.ts';
import { eventCsvRows, EVENTS_CSV_HEADER, type ApiEvent } from '../../src/cli/event-format.ts';
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
const ready = () =>
  (setup ??= (async () => {
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
          const event = {
            eventId: ids.next(),
            targetName: device,
            eventType: 'touchCount',
            data: { touchCount: { total: i, updateTime: formatTimestamp(timestamp) } },
            timestamp: formatTimestamp(timestamp),
          };
          await tx.events.insert({
            id: event.eventId,
            projectId: s.projectId,
            deviceId,
            eventType: 'touchCount',
            timestamp,
            createTime: timestamp,
            body: JSON.stringify(event),
          });
        }
      });
    } finally {
      await store.close();
    }
    for (let i = COUNT - PUBLISHED; i < COUNT; i++) {
      const res = await s.api('POST', `${device}:publish`, {
        touchCount: { total: i, updateTime: formatTimestamp(startMicros + i * 1_000_000) },
      });
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
    const res = await s.api(
      'GET',
      `${device}/events?pageSize=1000&startTime=${since}&pageToken=${encodeURIComponent(token)}`,
    );
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
    const r = await s.run(
      ['events', 'export', '--device', device, '--since', '7d', '--format', 'ndjson', '--output', file],
      { env: envCredentials(s), timeoutMs: 90_000 },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Exported 10,000 events/);
    const events = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(events.length, COUNT);
    assert.deepEqual(
      events.map((e) => e.eventId),
      [...seeded].reverse(),
    );
    // Newest first: each count is one less than the one before it.
    events.forEach((e, i) => assert.equal(e.data.touchCount.total, COUNT - 1 - i));
  });

  it('exports them as CSV to stdout: one row per field value, with the device', { timeout: 120_000 }, async () => {
    const r = await s.run(['events', 'export', '--device', device, '--since', '7d'], {
      env: envCredentials(s),
      timeoutMs: 90_000,
    });
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout
      .trimEnd()
      .split('\n')
      .map((row) => row.split(','));
    // touchCount has one field (total): one row per event.
    assert.equal(rows.length, COUNT + 1);
    assert.deepEqual(rows[0], ['timestamp', 'device', 'eventType', 'eventId', 'field', 'value']);
    const deviceId = device.split('/').pop();
    assert.deepEqual(
      rows.slice(1).map((row) => row[3]),
      [...seeded].reverse(),
    );
    rows
      .slice(1)
      .forEach((row, i) =>
        assert.deepEqual(row.slice(1, 3).concat(row.slice(4)), [
          deviceId,
          'touchCount',
          'total',
          String(COUNT - 1 - i),
        ]),
      );
    const timestamps = rows.slice(1).map((row) => Date.parse(row[0]!));
    for (let i = 1; i < timestamps.length; i++)
      assert.ok(timestamps[i]! < timestamps[i - 1]!, `row ${i + 1} is older than the row before`);
  });
});

describe('the CSV shape (docs/cli.md, docs/console.md)', () => {
  const at = (s: number) => `2025-06-01T12:00:${String(s).padStart(2, '0')}.000000Z`;
  const ev = (seconds: number, eventType: string, data: unknown): ApiEvent => ({
    eventId: `e${String(seconds).padStart(19, '0')}`,
    targetName: 'projects/p1/devices/emu00000000000000000001',
    eventType,
    data,
    timestamp: at(seconds),
  });
  // Newest first, as the API returns them; every kind of field the event types have.
  const events: ApiEvent[] = [
    ev(9, 'labelsChanged', {
      added: { name: 'Room 4, east', '=cmd': '@SUM(1)' },
      modified: { floor: '-2', note: '-x' },
      removed: ['room', 'desk'],
    }),
    ev(8, 'deskOccupancy', {
      deskOccupancy: { state: 'OCCUPIED', remarks: ['said "hi"\nthen left'], updateTime: at(8) },
    }),
    ev(7, 'connectionStatus', {
      connectionStatus: { connection: 'ETHERNET', available: ['ETHERNET', 'CELLULAR'], updateTime: at(7) },
    }),
    ev(6, 'networkStatus', {
      networkStatus: {
        signalStrength: 80,
        rssi: -61,
        updateTime: at(6),
        cloudConnectors: [{ id: 'ccon1', signalStrength: 80, rssi: -61 }],
        transmissionMode: 'LOW_POWER_STANDARD_MODE',
      },
    }),
    ev(5, 'ethernetStatus', {
      ethernetStatus: { macAddress: '00:00:5e:00:53:01', ipAddress: '192.0.2.10', errors: [], updateTime: at(5) },
    }),
    ev(4, 'temperature', {
      temperature: {
        value: -3.5,
        updateTime: at(4),
        samples: [{ value: -3.5, sampleTime: at(4) }],
        isBackfilled: false,
      },
    }),
    ev(3, 'touch', { touch: { updateTime: at(3) } }),
  ];
  const D = 'emu00000000000000000001';
  const expected = [
    'timestamp,device,eventType,eventId,field,value',
    `${at(9)},${D},labelsChanged,e0000000000000000009,added.name,"Room 4, east"`,
    `${at(9)},${D},labelsChanged,e0000000000000000009,added.=cmd,'@SUM(1)`,
    `${at(9)},${D},labelsChanged,e0000000000000000009,modified.floor,-2`,
    `${at(9)},${D},labelsChanged,e0000000000000000009,modified.note,'-x`,
    `${at(9)},${D},labelsChanged,e0000000000000000009,removed[0],room`,
    `${at(9)},${D},labelsChanged,e0000000000000000009,removed[1],desk`,
    `${at(8)},${D},deskOccupancy,e0000000000000000008,state,OCCUPIED`,
    `${at(8)},${D},deskOccupancy,e0000000000000000008,remarks[0],"said ""hi""\nthen left"`,
    `${at(7)},${D},connectionStatus,e0000000000000000007,connection,ETHERNET`,
    `${at(7)},${D},connectionStatus,e0000000000000000007,available[0],ETHERNET`,
    `${at(7)},${D},connectionStatus,e0000000000000000007,available[1],CELLULAR`,
    `${at(6)},${D},networkStatus,e0000000000000000006,signalStrength,80`,
    `${at(6)},${D},networkStatus,e0000000000000000006,rssi,-61`,
    `${at(6)},${D},networkStatus,e0000000000000000006,cloudConnectors[0].id,ccon1`,
    `${at(6)},${D},networkStatus,e0000000000000000006,cloudConnectors[0].signalStrength,80`,
    `${at(6)},${D},networkStatus,e0000000000000000006,cloudConnectors[0].rssi,-61`,
    `${at(6)},${D},networkStatus,e0000000000000000006,transmissionMode,LOW_POWER_STANDARD_MODE`,
    `${at(5)},${D},ethernetStatus,e0000000000000000005,macAddress,00:00:5e:00:53:01`,
    `${at(5)},${D},ethernetStatus,e0000000000000000005,ipAddress,192.0.2.10`,
    `${at(4)},${D},temperature,e0000000000000000004,value,-3.5`,
    `${at(4)},${D},temperature,e0000000000000000004,isBackfilled,false`,
    `${at(3)},${D},touch,e0000000000000000003,,`,
    '',
  ].join('\n');

  it('one row per field value; nested fields by path; updateTime and samples left out; formulas disarmed; RFC 4180 quoting', () => {
    assert.equal(`${EVENTS_CSV_HEADER}\n${events.map(eventCsvRows).join('')}`, expected);
  });

  it("the console's Export CSV writes the same bytes as the CLI for the same events", () => {
    assert.equal(eventsToCsv(events), expected);
  });
});
