// Every device type × every event type it emits, published over HTTP and read back through the event stream
// in both framings (NDJSON and SSE), byte-identical to the event history.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { DEVICE_TYPES, DEVICE_TYPE_NAMES } from '../../src/domain/device-types.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { MINIMAL } from '../helpers/event-bodies.ts';
import { sleep } from '../helpers/until.ts';

interface Reader {
  contentType: string;
  events: string[];
  close(): void;
}

/** Opens a stream and collects the JSON text of every event message (pings skipped). */
function openStream(url: string, authorization: string, accept?: string): Promise<Reader> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization, ...(accept ? { accept } : {}) } });
    req.on('error', reject);
    req.on('response', (res) => {
      const sse = accept === 'text/event-stream';
      const events: string[] = [];
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        const sep = sse ? '\n\n' : '\n';
        let i: number;
        while ((i = buffer.indexOf(sep)) >= 0) {
          let frame = buffer.slice(0, i);
          buffer = buffer.slice(i + sep.length);
          if (sse) {
            assert.ok(frame.startsWith('data: '), frame);
            frame = frame.slice(6);
          }
          const msg = JSON.parse(frame);
          if (msg.result?.event?.eventType !== 'ping') events.push(JSON.stringify(msg.result.event));
        }
      });
      resolve({ contentType: String(res.headers['content-type']), events, close: () => req.destroy() });
    });
    req.end();
  });
}

describe('publish → stream, every device type × event type', () => {
  let t: TestContext;
  let base: string;
  before(async () => {
    t = await createTestContext();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  after(() => t.close());

  it('delivers each published event to NDJSON and SSE streams exactly as history stores it', async () => {
    const auth = `Basic ${Buffer.from(`${t.boot.serviceAccount.keyId}:${t.boot.serviceAccount.secret}`).toString('base64')}`;
    const url = `${base}/v2/projects/${t.projectId}/devices:stream?ping_interval=60s`;
    const ndjson = await openStream(url, auth);
    const sse = await openStream(url, auth, 'text/event-stream');
    try {
      assert.equal(ndjson.contentType, 'application/json');
      assert.equal(sse.contentType, 'text/event-stream');
      const published: Array<{ device: string; eventType: string }> = [];
      for (const type of DEVICE_TYPE_NAMES) {
        const created = await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type } });
        assert.equal(created.status, 200, created.text);
        for (const eventType of DEVICE_TYPES[type]!.events) {
          const res = await t.request('POST', `/v2/${created.body.name}:publish`, {
            body: { [eventType]: MINIMAL[eventType]!.body },
          });
          assert.equal(res.status, 200, `${type}/${eventType}: ${res.text}`);
          published.push({ device: created.body.name, eventType });
        }
      }
      // Bounded wait for the streams to catch up (they are written after each commit).
      for (
        let i = 0;
        i < 250 && (ndjson.events.length < published.length || sse.events.length < published.length);
        i++
      ) {
        await sleep(20);
      }
      assert.equal(ndjson.events.length, published.length);
      assert.deepEqual(sse.events, ndjson.events, 'both framings carry the same events in the same order');

      const history = new Map<string, string>();
      for (const device of new Set(published.map((p) => p.device))) {
        const res = await t.request('GET', `/v2/${device}/events?pageSize=1000`);
        for (const e of res.body.events) history.set(e.eventId, JSON.stringify(e));
      }
      for (const [i, text] of ndjson.events.entries()) {
        const event = JSON.parse(text);
        assert.equal(event.targetName, published[i]!.device);
        assert.equal(event.eventType, published[i]!.eventType);
        assert.equal(
          text,
          history.get(event.eventId),
          `${published[i]!.eventType}: stream and history agree byte for byte`,
        );
        assert.equal(JSON.stringify(event.data[event.eventType]), JSON.stringify(MINIMAL[event.eventType]!.data));
      }
    } finally {
      ndjson.close();
      sse.close();
    }
  });
});
