// The engine's side of the delivery log, on its own (extensions §X1, §X2): the fields an outcome logs (event type
// and device read from any body without failing, one short error line, no snippet for a blocked address), the
// trigger header, and pruning in bounded pieces. The engine writing it is engine-log.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  eventFieldsOf,
  LOG_PIECE,
  loggedAttempt,
  logOutcomeOf,
  pruneDeliveryLog,
} from '../../src/delivery/delivery-log.ts';
import { buildPushBody } from '../../src/delivery/push-body.ts';
import { buildPushHeaders, TRIGGER_HEADER } from '../../src/delivery/push-headers.ts';
import type { AttemptOutcome } from '../../src/delivery/types.ts';
import type { LoggedAttempt } from '../../src/store/contract/delivery-log.ts';
import type { Store } from '../../src/store/contract/store.ts';
import { attemptsJson, toLogRecord } from '../../src/store/sql/delivery-log-rows.ts';

const device = {
  id: 'dev-1',
  projectId: 'p1',
  type: 'touch',
  productNumber: '102058',
  labels: { name: 'a "quoted" \\ label', eventType: 'not this' },
};

describe('eventFieldsOf', () => {
  it('reads the event type and device of a push body', () => {
    const event = JSON.stringify({
      eventId: 'e1',
      targetName: 'projects/p1/devices/dev-1',
      eventType: 'temperature',
      data: { temperature: { value: 1 }, eventType: 'nested', metadata: { deviceId: 'nested' } },
      timestamp: '2025-06-01T12:00:00.000000Z',
    });
    const body = buildPushBody(event, device, ['name', 'eventType']);
    assert.deepEqual(eventFieldsOf(body), { eventType: 'temperature', deviceId: 'dev-1' });
  });

  it('parses a body of another shape, and gives empty fields for one that is not JSON', () => {
    const spaced = Buffer.from('{ "event": { "eventType": "touch" }, "metadata": { "deviceId": "d2" } }');
    assert.deepEqual(eventFieldsOf(spaced), { eventType: 'touch', deviceId: 'd2' });
    const escaped = Buffer.from('{"event":{"eventType":"t\\u0041"},"labels":{},"metadata":{"deviceId":"d3"}}');
    assert.deepEqual(eventFieldsOf(escaped), { eventType: 'tA', deviceId: 'd3' });
    for (const bad of ['', '{}', '{"event":{"eventType":', 'null', '{"event":{"eventType":7},"metadata":{}}', '\xff'])
      assert.deepEqual(eventFieldsOf(Buffer.from(bad, 'latin1')), { eventType: '', deviceId: '' }, bad);
  });

  it('reads the same from bodies whose fields lie far from their ends, or hold what a latin1 read would garble', () => {
    const event = (data: unknown, targetName = 'projects/p1/devices/dev-1') =>
      JSON.stringify({ eventId: 'e1', targetName, eventType: 'touch', data, timestamp: '2025-06-01T12:00:00.000000Z' });
    const parsed = (body: Buffer) => {
      const json = JSON.parse(body.toString('utf8'));
      return { eventType: json.event.eventType, deviceId: json.metadata.deviceId };
    };
    const bodies = [
      // A large event and labels of several-byte characters between the two ends.
      buildPushBody(event({ blob: 'x'.repeat(4000), metadata: { deviceId: 'nested' } }), device, ['name']),
      buildPushBody(event({}), { ...device, labels: { name: 'ø'.repeat(600) } }, ['name']),
      // The body's own device further than the read end from the last byte: parsed instead.
      buildPushBody(event({}), { ...device, productNumber: 'p'.repeat(700) }, []),
      // The event's type beyond the read start: parsed instead.
      buildPushBody(event({}, `projects/p1/devices/${'d'.repeat(600)}`), device, []),
      // A device id that is not plain ASCII.
      buildPushBody(event({}), { ...device, id: 'dév-1' }, []),
    ];
    for (const body of bodies) assert.deepEqual(eventFieldsOf(body), parsed(body));
  });
});

describe('attemptsJson', () => {
  it('is the JSON of the stored attempts, read back as they were logged', () => {
    const attempts: LoggedAttempt[] = [
      {
        time: 1_700_000_000_123_456,
        durationMicros: 0,
        outcome: 'SUCCESS',
        httpStatus: 200,
        responseBody: '',
        responseBodyTruncated: false,
        error: '',
      },
      {
        time: 1,
        durationMicros: 12_500,
        outcome: 'HTTP_ERROR',
        httpStatus: 503,
        responseBody: '{"a":"\\"q\u00e9\u2028\n',
        responseBodyTruncated: true,
        error: 'HTTP 503 "busy"',
      },
      {
        time: 2,
        durationMicros: 3,
        outcome: 'TIMEOUT',
        httpStatus: 0,
        responseBody: '',
        responseBodyTruncated: false,
        error: 'timed out',
      },
    ];
    for (const some of [attempts.slice(0, 1), attempts]) {
      const json = attemptsJson(some);
      assert.doesNotThrow(() => JSON.parse(json), json);
      const row = { id: 1, connector_id: 'c', event_id: 'e', event_type: 't', device_id: 'd', trigger: 0, state: 2 };
      const read = toLogRecord({
        ...row,
        attempt_count: some.length,
        create_time: 0,
        update_time: 0,
        next_attempt_time: null,
        attempts: json,
      });
      assert.deepEqual(read.attempts, some);
    }
    // A number that is not finite never makes text that is not JSON.
    assert.doesNotThrow(() => JSON.parse(attemptsJson([{ ...attempts[0]!, durationMicros: Number.NaN }])));
  });
});

describe('loggedAttempt', () => {
  const base: AttemptOutcome = { ok: false, reason: 'http_status', status: 500, responseTimeMs: 12.5, message: '' };

  it('keeps time, duration, class, status, snippet and one short error line', () => {
    const a = loggedAttempt(
      {
        ...base,
        message: `HTTP 500\n${'a'.repeat(1000)}`,
        responseBody: Buffer.from('bad\nthing'),
        responseBodyTruncated: true,
      },
      1_700_000_000_123.5,
    );
    assert.equal(a.time, 1_700_000_000_123_500);
    assert.equal(a.durationMicros, 12_500);
    assert.equal(a.outcome, 'HTTP_ERROR');
    assert.equal(a.httpStatus, 500);
    assert.equal(a.responseBody, 'bad\nthing');
    assert.equal(a.responseBodyTruncated, true);
    assert.doesNotMatch(a.error, /\n/);
    assert.ok(a.error.startsWith('HTTP 500 aaa'));
    assert.ok(a.error.length <= 320);
  });

  it('a success has no error; an outcome without a class gets the one its reason gives', () => {
    const a = loggedAttempt({ ok: true, reason: 'ack', status: 204, responseTimeMs: 1, message: 'HTTP 204' }, 0);
    assert.deepEqual([a.outcome, a.httpStatus, a.error, a.responseBody], ['SUCCESS', 204, '', '']);
    const t = loggedAttempt({ ok: false, reason: 'timeout', responseTimeMs: 10_000, message: 'no response' }, 0);
    assert.deepEqual([t.outcome, t.httpStatus], ['TIMEOUT', 0]);
  });

  it('never keeps a snippet of a blocked address', () => {
    const a = loggedAttempt(
      {
        ok: false,
        reason: 'refused_address',
        outcome: 'BLOCKED_ADDRESS',
        responseTimeMs: 0,
        message: 'refused address: 10.0.0.1',
        responseBody: Buffer.from('internal secret page'),
        responseBodyTruncated: true,
      },
      0,
    );
    assert.deepEqual([a.responseBody, a.responseBodyTruncated], ['', false]);
  });

  it('logOutcomeOf: the row, its trigger (EVENT when absent) and the state after the attempt', () => {
    const row = {
      id: 7,
      connectorId: 'c1',
      eventId: 'e1',
      body: Buffer.from('{"event":{"eventType":"touch"},"labels":{},"metadata":{"deviceId":"d1"}}'),
      enqueueTime: 5,
    };
    const o = logOutcomeOf(row, { ...base, status: 503 }, 1, { time: 9, state: 'RETRYING', nextAttemptTime: 99 });
    assert.deepEqual(
      [o.id, o.connectorId, o.eventId, o.eventType, o.deviceId, o.trigger, o.createTime, o.state, o.nextAttemptTime],
      [7, 'c1', 'e1', 'touch', 'd1', 'EVENT', 5, 'RETRYING', 99],
    );
    assert.equal(o.updateTime, 9);
    assert.equal(
      logOutcomeOf({ ...row, trigger: 'REPLAY' }, base, 1, { time: 9, state: 'EXPIRED', nextAttemptTime: null })
        .trigger,
      'REPLAY',
    );
  });
});

describe('the trigger header', () => {
  const headersOf = (trigger?: 'EVENT' | 'SYNC' | 'TEST', headers: Record<string, string> = {}) =>
    buildPushHeaders({ headers, signatureSecret: '', trigger }, Buffer.from('{}'), 'ua', 0, () => 'jti');

  it('names SYNC, RESEND, REPLAY and TEST deliveries, never a published event', () => {
    assert.equal(headersOf('SYNC')[TRIGGER_HEADER], 'SYNC');
    assert.equal(headersOf('TEST')[TRIGGER_HEADER], 'TEST');
    assert.deepEqual(Object.keys(headersOf('EVENT')), ['Content-Type', 'User-Agent']);
    assert.deepEqual(Object.keys(headersOf()), ['Content-Type', 'User-Agent']);
  });

  it('cannot be set or spoofed by a custom header an older store holds', () => {
    const spoofed = { 'x-sensorcloud-delivery-trigger': 'REPLAY', 'X-Other': '1' };
    assert.deepEqual(headersOf(undefined, spoofed), {
      'Content-Type': 'application/json',
      'User-Agent': 'ua',
      'X-Other': '1',
    });
    const test = headersOf('TEST', { 'X-SensorCloud-Delivery-Trigger': 'EVENT' });
    assert.equal(test[TRIGGER_HEADER], 'TEST');
    assert.equal(test['X-SensorCloud-Delivery-Trigger'], undefined);
  });
});

describe('pruneDeliveryLog', () => {
  /** A store whose log holds `rows` deliveries created before the cutoff and `over` connectors over the cap. */
  function fakeStore(old: number, over: Map<string, number>) {
    const calls: string[] = [];
    let left = old;
    const deliveryLog = {
      async deleteBefore(_before: number, limit: number) {
        const n = Math.min(left, limit);
        left -= n;
        calls.push(`deleteBefore ${n}`);
        return n;
      },
      async connectorsOver() {
        calls.push('connectorsOver');
        return [...over.keys()];
      },
      async trimEdge(id: string) {
        calls.push(`trimEdge ${id}`);
        return over.get(id)! > 0 ? 1_000 : null;
      },
      async trim(id: string, upTo: number, limit: number) {
        assert.equal(upTo, 1_000, 'the edge read once for the pass');
        const n = Math.min(over.get(id)!, limit);
        over.set(id, over.get(id)! - n);
        calls.push(`trim ${id} ${n}`);
        return n;
      },
    };
    let transactions = 0;
    const store = {
      deliveryLog,
      transaction: async (fn: (tx: unknown) => Promise<unknown>) => {
        transactions++;
        return fn({ deliveryLog });
      },
    } as unknown as Store;
    return { store, calls, transactions: () => transactions };
  }

  it('prunes the retention, then each connector beyond its cap from an edge read once, each piece a statement of its own', async () => {
    const f = fakeStore(
      LOG_PIECE + 10,
      new Map([
        ['a', 3],
        ['b', LOG_PIECE],
      ]),
    );
    const removed = await pruneDeliveryLog(f.store, 0, { retentionSeconds: 60, max: 10 });
    assert.equal(removed, LOG_PIECE + 10 + 3 + LOG_PIECE);
    assert.deepEqual(f.calls, [
      `deleteBefore ${LOG_PIECE}`,
      'deleteBefore 10',
      'connectorsOver',
      'trimEdge a',
      'trim a 3',
      'trimEdge b',
      `trim b ${LOG_PIECE}`,
      'trim b 0',
    ]);
    // Not in store.transaction: on SQLite that would put a piece in a savepoint of the group commit.
    assert.equal(f.transactions(), 0);
  });

  it('stops after a bounded number of pieces per pass (the next pass goes on)', async () => {
    const f = fakeStore(100 * LOG_PIECE, new Map([['a', 1]]));
    await pruneDeliveryLog(f.store, 0, { retentionSeconds: 60, max: 10 });
    assert.equal(f.calls.length, 40);
    assert.ok(f.calls.every((c) => c === `deleteBefore ${LOG_PIECE}`));
  });

  it('with the log off, applies only the retention', async () => {
    const f = fakeStore(1, new Map([['a', 5]]));
    assert.equal(await pruneDeliveryLog(f.store, 0, { retentionSeconds: 60, max: 0 }), 1);
    assert.deepEqual(f.calls, ['deleteBefore 1']);
  });
});
