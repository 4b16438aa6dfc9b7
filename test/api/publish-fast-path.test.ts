// The lean :publish path (src/api/publish-fast-path.ts) against the fastify route it stands in for: which requests
// it takes, and that every request gets the same answer both ways. The route is reached with the same request
// written `%3Apublish`, a form the lean path leaves alone.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createPublishFastPath } from '../../src/api/publish-fast-path.ts';
import { createTestContext, type Auth, type TestContext } from '../helpers/context.ts';
import { sleep } from '../helpers/until.ts';

const ID = 'emu0123456789abcdefghijk';

describe('lean :publish path', () => {
  describe('takes only the plain form of the request', () => {
    const taken = (method: string, url: string, extra: Record<string, string> = {}) => {
      const headers: Record<string, string> = { authorization: 'Basic eDp5', ...extra };
      const fast = createPublishFastPath({} as never, () => new Promise(() => {}));
      const req = { method, url, headers, socket: {}, setEncoding() {}, on() {} } as unknown as IncomingMessage;
      return fast(req, {} as ServerResponse);
    };
    it('a POST to /v2/projects/{p}/devices/{d}:publish with no body or a Content-Length up to 1 MiB', () => {
      assert.equal(taken('POST', `/v2/projects/p1/devices/${ID}:publish`), true);
      assert.equal(taken('POST', `/v2/projects/p1/devices/${ID}:publish`, { 'content-length': '1048576' }), true);
    });
    for (const [what, method, url, headers] of [
      ['another method', 'PUT', `/v2/projects/p1/devices/${ID}:publish`, {}],
      ['another verb', 'POST', `/v2/projects/p1/devices/${ID}:sync`, {}],
      ['a query string', 'POST', `/v2/projects/p1/devices/${ID}:publish?x=1`, {}],
      ['an encoded colon', 'POST', `/v2/projects/p1/devices/${ID}%3Apublish`, {}],
      ['a trailing slash', 'POST', `/v2/projects/p1/devices/${ID}:publish/`, {}],
      ['a percent-encoded id', 'POST', `/v2/projects/p%31/devices/${ID}:publish`, {}],
      ['an id longer than the router takes', 'POST', `/v2/projects/p1/devices/${'a'.repeat(2049)}:publish`, {}],
      ['upper case', 'POST', `/V2/projects/p1/devices/${ID}:publish`, {}],
      ['a chunked body', 'POST', `/v2/projects/p1/devices/${ID}:publish`, { 'transfer-encoding': 'chunked' }],
      ['a body over 1 MiB', 'POST', `/v2/projects/p1/devices/${ID}:publish`, { 'content-length': '1048577' }],
      ['a bad Content-Length', 'POST', `/v2/projects/p1/devices/${ID}:publish`, { 'content-length': 'x' }],
    ] as const) {
      it(`leaves ${what} to the fastify route`, () => assert.equal(taken(method, url, headers), false));
    }
    it('leaves a request without an Authorization header (a console session cookie) to the fastify route', () => {
      const fast = createPublishFastPath({} as never, () => new Promise(() => {}));
      const req = {
        method: 'POST',
        url: `/v2/projects/p1/devices/${ID}:publish`,
        headers: { cookie: 'sensorcloud_session=x' },
        socket: {},
        setEncoding() {},
        on() {},
      } as unknown as IncomingMessage;
      assert.equal(fast(req, {} as ServerResponse), false);
    });
  });

  describe('answers as the fastify route does', () => {
    let t: TestContext;
    let limited: TestContext;
    let device: string;
    let sensor: string;
    before(async () => {
      t = await createTestContext();
      limited = await createTestContext({ env: { SENSORCLOUD_RATE_LIMIT: '2/60s' } });
      const res = await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'temperature' } });
      assert.equal(res.status, 200, res.text);
      device = (res.body.name as string).split('/')[3]!;
      sensor = (await t.createDevice({ projectId: t.projectId, type: 'temperature', emulated: false })).id;
    });
    after(async () => {
      await t.close();
      await limited.close();
    });

    interface Case {
      body?: unknown;
      rawBody?: string;
      auth?: Auth | null;
      project?: string;
      device?: string;
      headers?: Record<string, string>;
    }
    /** The answer of the lean path and of the route, without what differs by nature (the date). */
    const bothWays = async (ctx: TestContext, c: Case) => {
      const path = `/v2/projects/${c.project ?? ctx.projectId}/devices/${c.device ?? device}`;
      const answers = [];
      for (const url of [`${path}:publish`, `${path}%3Apublish`]) {
        const res = await ctx.request('POST', url, {
          body: c.body,
          rawBody: c.rawBody,
          auth: c.auth,
          headers: c.headers,
        });
        answers.push({
          status: res.status,
          body: res.body,
          contentType: res.headers['content-type'],
          retryAfter: res.headers['retry-after'],
        });
      }
      assert.deepEqual(answers[0], answers[1]);
      return answers[0]!;
    };

    const cases: Array<[string, Case, number]> = [
      ['an event', { body: { temperature: { value: 21.5 } } }, 200],
      ['an event with null fields (dropped)', { body: { temperature: { value: 21.5, updateTime: null } } }, 200],
      ['an event sent as text/plain', { rawBody: '{"touch":{}}', headers: { 'content-type': 'text/plain' } }, 200],
      ['no body', {}, 400],
      ['a body that is not JSON', { rawBody: '{"touch":' }, 400],
      ['a JSON array', { rawBody: '[]' }, 400],
      ['two event types', { body: { touch: {}, temperature: { value: 1 } } }, 400],
      ['an unknown event type', { body: { humidity2: {} } }, 400],
      ['a body nested too deep', { rawBody: `${'{"a":'.repeat(70)}1${'}'.repeat(70)}` }, 400],
      ['no credentials', { body: { touch: {} }, auth: null }, 401],
      ['a wrong password', { body: { touch: {} }, auth: { raw: 'Basic eDp5' } }, 401],
      ['the wildcard project', { body: { touch: {} }, project: '-' }, 400],
      ['an unknown project', { body: { touch: {} }, project: 'p0000000000000000000' }, 404],
      ['an unknown device', { body: { touch: {} }, device: 'emu00000000000000000000' }, 404],
      ['a device that is not emulated', { body: { touch: {} }, device: 'SENSOR' }, 400],
    ];
    for (const [what, c, status] of cases) {
      it(`${what}: ${status}`, async () => {
        const answer = await bothWays(t, { ...c, device: c.device === 'SENSOR' ? sensor : c.device });
        assert.equal(answer.status, status, JSON.stringify(answer.body));
        assert.equal(answer.contentType, 'application/json; charset=utf-8');
        if (status === 200) assert.deepEqual(answer.body, {});
        else assert.deepEqual(Object.keys(answer.body), ['error', 'code', 'help']);
      });
    }

    it('a caller without emulator.update: 403', async () => {
      const viewer = await t.createServiceAccount({ roles: ['roles/project.user'] });
      assert.equal((await bothWays(t, { body: { touch: {} }, auth: viewer.auth })).status, 403);
    });

    it('the rate limit: the same bucket, and the same 429 with Retry-After', async () => {
      const res = await limited.request('POST', `/v2/projects/${limited.projectId}/devices`, {
        body: { type: 'touch' },
      });
      assert.equal(res.status, 200, res.text);
      const path = `/v2/projects/${limited.projectId}/${res.body.name.split('/').slice(2).join('/')}`;
      // The create took the first of 2 tokens, the lean path takes the second; then both ways are refused alike.
      assert.equal((await limited.request('POST', `${path}:publish`, { body: { touch: {} } })).status, 200);
      const refused = await bothWays(limited, { body: { touch: {} }, device: res.body.name.split('/')[3] });
      assert.equal(refused.status, 429);
      assert.match(String(refused.retryAfter), /^\d+$/);
    });

    it('over a real connection: the same headers as fastify, the connection kept alive', async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as { port: number };
      const { keyId, secret } = t.boot.serviceAccount;
      const authorization = `Basic ${Buffer.from(`${keyId}:${secret}`).toString('base64')}`;
      const answers = [];
      for (const verb of [':publish', '%3Apublish']) {
        const res = await fetch(`http://127.0.0.1:${port}/v2/projects/${t.projectId}/devices/${device}${verb}`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: '{"touch":{}}',
        });
        const headers = Object.fromEntries([...res.headers].filter(([name]) => name !== 'date'));
        answers.push({ status: res.status, headers, body: await res.text() });
      }
      assert.deepEqual(answers[0], answers[1]);
      assert.equal(answers[0]!.status, 200);
      assert.equal(answers[0]!.headers.connection, 'keep-alive');
      assert.equal(answers[0]!.headers['keep-alive'], 'timeout=72');
    });

    it('a client that leaves mid-body: nothing is stored, and the next request is answered', async () => {
      if (!t.app.server.listening) await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as { port: number };
      const { keyId, secret } = t.boot.serviceAccount;
      const authorization = `Basic ${Buffer.from(`${keyId}:${secret}`).toString('base64')}`;
      const history = async () =>
        (await t.request('GET', `/v2/projects/${t.projectId}/devices/${device}/events`)).body.events as unknown[];
      const before = (await history()).length;
      const socket = connect(port, '127.0.0.1');
      await once(socket, 'connect');
      const body = '{"touch":{}}';
      socket.write(
        `POST /v2/projects/${t.projectId}/devices/${device}:publish HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authorization}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length + 20}\r\n\r\n${body}`,
      );
      let answered = '';
      socket.on('data', (chunk: Buffer) => (answered += chunk.toString()));
      await sleep(100);
      socket.destroy();
      await once(socket, 'close');
      assert.equal(answered, '');
      assert.equal((await history()).length, before);
      const res = await fetch(`http://127.0.0.1:${port}/v2/projects/${t.projectId}/devices/${device}:publish`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body,
      });
      assert.equal(res.status, 200);
      assert.equal((await history()).length, before + 1);
    });
  });
});
