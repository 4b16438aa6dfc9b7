// Every JSON body ends with a newline (issue 22), whichever path answers it: fastify's replies and errors, the lean
// :publish path, the device list built as bytes, a request Node could not parse, and the server main.ts binds
// before the app exists (503 while starting and while stopping). The NDJSON stream already ends every line.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createApiServer } from '../../src/api/http-server.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

/** Bytes sent on a raw socket, and everything the server answers until it closes the connection. */
async function raw(port: number, bytes: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.end(bytes);
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  await once(socket, 'close');
  return answer;
}

describe('happy', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  it('replies, errors, deletes, :publish and the device list end with a newline', async () => {
    const device = await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'touch' } });
    assert.match(device.text, /^\{.*\}\n$/s);
    for (const [method, url, body] of [
      ['GET', `/v2/projects/${t.projectId}`],
      ['GET', `/v2/projects/${t.projectId}/devices`],
      ['GET', '/v2/projects/nope'],
      ['GET', '/no/such/api/v2'],
      ['POST', `/v2/${device.body.name}:publish`, { touch: {} }],
      ['GET', '/v2/openapi.json'],
      ['GET', '/healthz'],
    ] as const) {
      const res = await t.request(method, url, body === undefined ? {} : { body });
      if (!String(res.headers['content-type']).startsWith('application/json')) continue;
      assert.ok(res.text.endsWith('}\n'), `${method} ${url}: ${JSON.stringify(res.text.slice(-20))}`);
      assert.equal(res.text.indexOf('\n'), res.text.length - 1, `${method} ${url}: one line`);
    }
  });

  it('a request Node cannot parse is answered 400 with the error body and a newline', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const answer = await raw((t.app.server.address() as { port: number }).port, 'NOT HTTP\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /\r\n\r\n\{"error":"malformed HTTP request","code":400,"help":"[^"]+"\}\n$/);
  });
});

describe('sad', () => {
  it('the server bound before the app answers 503 while starting, then the app, then 503 while stopping', async () => {
    const api = createApiServer({ requestTimeoutMs: 30_000, publicUrl: 'http://127.0.0.1:1' });
    api.server.listen(0, '127.0.0.1');
    await once(api.server, 'listening');
    const url = `http://127.0.0.1:${(api.server.address() as { port: number }).port}/healthz`;
    try {
      const starting = await fetch(url);
      assert.equal(starting.status, 503);
      assert.equal(starting.headers.get('retry-after'), '1');
      assert.equal(
        await starting.text(),
        '{"error":"the service is starting; try again in a moment","code":503,"help":"http://127.0.0.1:1/docs/errors#503"}\n',
      );
      api.attach((_req, res) => res.end('attached'));
      assert.equal(await (await fetch(url)).text(), 'attached');
      api.refuse('the service is stopping');
      const stopping = await fetch(url);
      assert.equal(stopping.status, 503);
      assert.equal(((await stopping.json()) as { error: string }).error, 'the service is stopping');
      // A client that keeps its connection and keeps sending must not hold a stopping server open.
      assert.equal(stopping.headers.get('connection'), 'close');
      const closed = new Promise<void>((resolve) => api.server.close(() => resolve()));
      api.server.closeIdleConnections();
      await closed;
    } finally {
      api.server.closeAllConnections();
      api.server.close();
    }
  });
});
