// Findings of an outside attack run, each tested as a class (docs/errors.md, docs/configuration.md): bounded
// payloads and pages, all-or-nothing writes with text that cannot be stored (not Unicode, or holding NUL), `__proto__` refused as a label key on
// every path, connector headers and URLs checked as they will be sent, and the HTTP edge (timeouts, Expect,
// the OAuth shape of low-level errors on the token endpoint) on a real socket.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { EVENT_LIMITS } from '../../src/domain/event-data.ts';
import { MAX_PAGE_BYTES } from '../../src/domain/paging.ts';
import { createHeartbeats } from '../../src/emulator/heartbeats.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

/** Everything the API shows of a device (its state, labels and history), to prove a refused write changed nothing. */
async function snapshot(t: TestContext, device: string) {
  return {
    device: (await t.request('GET', `/v2/${device}`)).body,
    history: (await t.request('GET', `/v2/${device}/events?pageSize=1000`)).body,
  };
}

describe('bounded payloads', () => {
  let t: TestContext;
  let device: string;
  before(async () => {
    t = await createTestContext();
    device = (await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'temperature' } })).body
      .name;
  });
  after(() => t.close());

  it('refuses a publish beyond the event limits with 400 naming the field, and stores nothing', async () => {
    const before = await snapshot(t, device);
    const samples = (n: number) => Array.from({ length: n }, () => ({ value: 21.5 }));
    const refused = await t.request('POST', `/v2/${device}:publish`, {
      body: { temperature: { value: 1, samples: samples(15_000) } },
    });
    assert.equal(refused.status, 400);
    assert.match(refused.body.error, /temperature\.samples must hold at most 100 items, got 15000/);
    assert.equal(
      (
        await t.request('POST', `/v2/${device}:publish`, {
          body: { temperature: { value: 1, samples: samples(EVENT_LIMITS.samples + 1) } },
        })
      ).status,
      400,
    );
    assert.deepEqual(await snapshot(t, device), before);
    assert.equal(
      (
        await t.request('POST', `/v2/${device}:publish`, {
          body: { temperature: { value: 1, samples: samples(EVENT_LIMITS.samples) } },
        })
      ).status,
      200,
    );
  });

  it('bounds every list and string inside an event', async () => {
    const make = async (type: string) =>
      (await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type } })).body.name as string;
    const [sensor, ccon, desk, humidity] = [
      await make('touch'),
      await make('ccon'),
      await make('deskOccupancy'),
      await make('humidity'),
    ];
    const cases: Array<[string, unknown, RegExp]> = [
      [
        humidity,
        { humidity: { temperature: 1, relativeHumidity: 1, samples: Array(101).fill({}) } },
        /humidity\.samples must hold at most 100/,
      ],
      [sensor, { networkStatus: { cloudConnectors: Array(17).fill({}) } }, /cloudConnectors must hold at most 16/],
      [
        sensor,
        { networkStatus: { cloudConnectors: [{ id: 'c'.repeat(65) }] } },
        /cloudConnectors\[0\]\.id must be at most 64/,
      ],
      [
        ccon,
        { connectionStatus: { connection: 'SDS', available: Array(5).fill('SDS') } },
        /available must hold at most 4/,
      ],
      [
        ccon,
        { ethernetStatus: { macAddress: 'm'.repeat(65), ipAddress: '10.0.0.1' } },
        /macAddress must be at most 64/,
      ],
      [ccon, { ethernetStatus: { macAddress: 'm', ipAddress: 'i'.repeat(65) } }, /ipAddress must be at most 64/],
      [
        ccon,
        { ethernetStatus: { macAddress: 'm', ipAddress: 'i', errors: Array(17).fill('e') } },
        /errors must hold at most 16/,
      ],
      [
        ccon,
        { cellularStatus: { signalStrength: 5, errors: [{ detail: 'x'.repeat(2000) }] } },
        /errors\[0\] must be at most 1024 bytes/,
      ],
      [desk, { deskOccupancy: { state: 'OCCUPIED', remarks: Array(17).fill('r') } }, /remarks must hold at most 16/],
      [desk, { deskOccupancy: { state: 'OCCUPIED', remarks: ['r'.repeat(257)] } }, /remarks\[0\] must be at most 256/],
    ];
    for (const [name, body, message] of cases) {
      const res = await t.request('POST', `/v2/${name}:publish`, { body });
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.text}`);
      assert.match(res.body.error, message);
    }
  });

  it('refuses batches of more than 1,000 items before touching anything', async () => {
    const P = t.projectId;
    const many = (f: (i: number) => unknown) => Array.from({ length: 1001 }, (_, i) => f(i));
    const cases: Array<[string, unknown, RegExp]> = [
      [
        `/v2/projects/${P}/devices:batchUpdate`,
        { devices: many(() => device), addLabels: { k: 'v' } },
        /devices may hold at most 1000 items, got 1001/,
      ],
      [`/v2/projects/${P}/devices:transfer`, { devices: many(() => device) }, /devices may hold at most 1000/],
      [
        '/v2/projects:batchUpdate',
        { projects: many(() => `projects/${P}`), addLabels: { k: 'v' } },
        /projects may hold at most 1000/,
      ],
      [
        '/v2/projects/-/members:batchCreate',
        {
          members: many((i) => ({
            project: `projects/${P}`,
            email: `m${i}@example.com`,
            roles: ['roles/project.user'],
          })),
        },
        /members may hold at most 1000/,
      ],
    ];
    for (const [url, body, message] of cases) {
      const res = await t.request('POST', url, { body });
      assert.equal(res.status, 400, `${url}: ${res.text.slice(0, 200)}`);
      assert.match(res.body.error, message);
    }
    assert.deepEqual((await t.request('GET', `/v2/${device}`)).body.labels, { 'virtual-sensor': '' });
  });

  it('ends a device page early at MAX_PAGE_BYTES, and the pages still hold every device once, in order', async () => {
    const project = await t.createProject('heavy');
    const big = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 'v'.repeat(1024)]));
    const count = Math.ceil((MAX_PAGE_BYTES * 2.5) / 110_000);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push((await t.createDevice({ projectId: project, labels: big })).id);
    const seen: string[] = [];
    let token = '';
    let pages = 0;
    do {
      const res = await t.request('GET', `/v2/projects/${project}/devices?pageSize=1000&pageToken=${token}`);
      assert.equal(res.status, 200);
      assert.ok(res.text.length <= MAX_PAGE_BYTES + 200_000, `a page of ${res.text.length} bytes`);
      seen.push(...res.body.devices.map((d: { name: string }) => d.name.split('/').pop()));
      token = res.body.nextPageToken;
      pages++;
    } while (token !== '' && pages < 20);
    assert.ok(pages >= 3, `${pages} pages`);
    assert.deepEqual(seen, ids.sort());
    // A device bigger than the bound on its own still gets a page of its own.
    const single = await t.request('GET', `/v2/projects/${project}/devices?pageSize=1`);
    assert.equal(single.body.devices.length, 1);
    assert.notEqual(single.body.nextPageToken, '');
  });

  it('ends a history page early at MAX_PAGE_BYTES', async () => {
    const d = (await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'touch' } })).body
      .name as string;
    // Each PUT that replaces 100 long labels emits one labelsChanged event of ~100 KB.
    const rounds = Math.ceil((MAX_PAGE_BYTES * 1.5) / 105_000);
    for (let i = 0; i < rounds; i++) {
      const labels = Object.fromEntries(Array.from({ length: 99 }, (_, k) => [`k${k}`, String(i % 10).repeat(1024)]));
      assert.equal((await t.request('PUT', `/v2/${d}`, { body: { type: 'touch', labels } })).status, 200);
    }
    const first = await t.request('GET', `/v2/${d}/events?pageSize=1000`);
    assert.ok(
      first.body.events.length < rounds && first.body.nextPageToken !== '',
      `${first.body.events.length} of ${rounds}`,
    );
    const second = await t.request('GET', `/v2/${d}/events?pageSize=1000&pageToken=${first.body.nextPageToken}`);
    assert.equal(first.body.events.length + second.body.events.length, rounds);
  });

  it('heartbeats over large devices yield to requests between slices', async () => {
    const ctx = await createTestContext();
    try {
      const reported = {
        temperature: {
          value: 1,
          updateTime: '2025-06-01T12:00:00.000000Z',
          samples: Array(15_000).fill({ value: 1, sampleTime: '2025-06-01T12:00:00.000000Z' }),
          isBackfilled: false,
        },
      };
      for (let i = 0; i < 40; i++) await ctx.createDevice({ reported });
      const hb = createHeartbeats(ctx.deps, { intervalSeconds: 60 });
      let finished = false;
      const pass = hb.tickOnce().then((n) => {
        finished = true;
        return n;
      });
      // A request made while the pass runs is answered before the pass ends.
      const health = await ctx.request('GET', '/healthz', { auth: null });
      assert.equal(health.status, 200);
      assert.equal(finished, false);
      assert.equal(await pass, 80);
    } finally {
      await ctx.close();
    }
  });
});

describe('all or nothing: text that cannot be stored', () => {
  let t: TestContext;
  let device: string;
  before(async () => {
    t = await createTestContext();
    device = (await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'temperature' } })).body
      .name;
  });
  after(() => t.close());

  it('a lone surrogate anywhere in a body is 400 naming the field, before anything is written', async () => {
    const before = await snapshot(t, device);
    const cases: Array<[string, string, string, RegExp]> = [
      ['POST', `/v2/${device}/labels`, '{"key":"\\ud800","value":"v"}', /^key: /],
      ['POST', `/v2/${device}/labels`, '{"key":"k","value":"a\\udc00b"}', /^value: /],
      [
        'POST',
        `/v2/${device}:publish`,
        '{"temperature":{"value":1,"samples":[{"sampleTime":"\\ud83d"}]}}',
        /^temperature\.samples\[0\]\.sampleTime: /,
      ],
      ['PUT', `/v2/${device}`, '{"type":"temperature","labels":{"\\ud800":"x"}}', /^a field name in labels: /],
      [
        'POST',
        `/v2/projects/${t.projectId}/devices:batchUpdate`,
        `{"devices":["${device}"],"addLabels":{"k":"\\ud800"}}`,
        /^addLabels\.k: /,
      ],
    ];
    for (const [method, url, body, message] of cases) {
      const res = await t.request(method, url, { rawBody: body });
      assert.equal(res.status, 400, `${method} ${url} ${body}: ${res.text}`);
      assert.match(res.body.error, message);
      assert.match(res.body.error, /not valid Unicode/);
    }
    assert.deepEqual(await snapshot(t, device), before);
    const projects = (await t.request('GET', '/v2/projects')).body;
    assert.equal(
      (await t.request('POST', `/v2/projects/${t.projectId}/serviceaccounts`, { rawBody: '{"displayName":"\\udfff"}' }))
        .status,
      400,
    );
    assert.equal(
      (await t.request('PATCH', `/v2/projects/${t.projectId}`, { rawBody: '{"displayName":"x\\ud800"}' })).status,
      400,
    );
    assert.deepEqual((await t.request('GET', '/v2/projects')).body, projects);
    const token = await t.request('POST', '/oauth2/token', {
      auth: null,
      rawBody: '{"grant_type":"password","username":"a@b.c","password":"\\ud800"}',
    });
    assert.equal(token.status, 400);
    assert.equal(token.body.error, 'invalid_request');
  });

  it('the NUL character anywhere in a body is 400 naming the field, on either backend, before anything is written', async () => {
    // PostgreSQL's text cannot hold U+0000; SQLite's can. Refused at the API on both, so a body means the same.
    const before = await snapshot(t, device);
    const P = t.projectId;
    const lists = async () => [
      (await t.request('GET', `/v2/projects/${P}/serviceaccounts`)).body,
      (await t.request('GET', `/v2/projects/${P}/dataconnectors`)).body,
      (await t.request('GET', '/v2/projects')).body,
    ];
    const listsBefore = await lists();
    const cases: Array<[string, string, string, RegExp]> = [
      ['POST', `/v2/${device}/labels`, '{"key":"k","value":"a\\u0000b"}', /^value: /],
      [
        'POST',
        `/v2/${device}:publish`,
        '{"temperature":{"value":1,"samples":[{"sampleTime":"\\u0000"}]}}',
        /^temperature\.samples\[0\]\.sampleTime: /,
      ],
      ['PUT', `/v2/${device}`, '{"type":"temperature","labels":{"a\\u0000":"x"}}', /^a field name in labels: /],
      [
        'POST',
        `/v2/projects/${P}/devices:batchUpdate`,
        `{"devices":["${device}"],"addLabels":{"k":"\\u0000"}}`,
        /^addLabels\.k: /,
      ],
      ['PATCH', `/v2/projects/${P}`, '{"displayName":"x\\u0000"}', /^displayName: /],
      ['POST', `/v2/projects/${P}/serviceaccounts`, '{"displayName":"\\u0000"}', /^displayName: /],
      [
        'POST',
        `/v2/projects/${P}/dataconnectors`,
        '{"type":"HTTP_PUSH","displayName":"a\\u0000","httpConfig":{"url":"https://example.com/h"}}',
        /^displayName: /,
      ],
    ];
    for (const [method, url, body, message] of cases) {
      const res = await t.request(method, url, { rawBody: body });
      assert.equal(res.status, 400, `${method} ${url} ${body}: ${res.text}`);
      assert.match(res.body.error, message);
      assert.match(res.body.error, /may not contain the NUL character \(U\+0000\)/);
    }
    assert.deepEqual(await snapshot(t, device), before);
    assert.deepEqual(await lists(), listsBefore);
    // Looking up a name that holds NUL finds nothing on either backend: a 404, not a fault.
    assert.equal((await t.request('GET', `/v2/projects/${P}/devices/a%00b`)).status, 404);
  });

  it('well-formed text outside the BMP and escaped text are fine', async () => {
    const res = await t.request('POST', `/v2/${device}/labels`, {
      rawBody: '{"key":"\\ud83d\\ude00 emoji","value":"\\u00e9t\\u00e9"}',
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.key, '😀 emoji');
    assert.equal(res.body.name, `${device}/labels/${encodeURIComponent('😀 emoji')}`);
  });
});

describe('__proto__ as a label key: 400 on every path', () => {
  let t: TestContext;
  let device: string;
  before(async () => {
    t = await createTestContext();
    device = (await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'touch' } })).body.name;
  });
  after(() => t.close());

  it('is refused when adding, replacing, editing, removing, filtering, sorting and copying labels', async () => {
    const P = t.projectId;
    const before = await snapshot(t, device);
    const cases: Array<[string, string, string | undefined]> = [
      ['POST', `/v2/projects/${P}/devices`, '{"type":"touch","labels":{"__proto__":"x"}}'],
      ['PUT', `/v2/${device}`, '{"type":"touch","labels":{"__proto__":"x"}}'],
      ['POST', `/v2/${device}/labels`, '{"key":"__proto__","value":"x"}'],
      ['PATCH', `/v2/${device}/labels/__proto__`, '{"value":"x"}'],
      ['DELETE', `/v2/${device}/labels/__proto__`, undefined],
      ['POST', '/v2/projects:batchUpdate', `{"projects":["projects/${P}"],"addLabels":{"__proto__":"x"}}`],
      [
        'POST',
        `/v2/projects/${P}/dataconnectors`,
        '{"type":"HTTP_PUSH","labels":["__proto__"],"httpConfig":{"url":"https://example.com/h"}}',
      ],
      ['GET', `/v2/projects/${P}/devices?label_filters=__proto__`, undefined],
      ['GET', `/v2/projects/${P}/devices?label_filters=__proto__%3Dx`, undefined],
      ['GET', `/v2/projects/${P}/devices?order_by=labels.__proto__`, undefined],
      ['GET', `/v2/projects/${P}/devices:stream?label_filters=__proto__`, undefined],
    ];
    for (const [method, url, body] of cases) {
      const res = await t.request(method, url, { rawBody: body });
      assert.equal(res.status, 400, `${method} ${url} ${body}: ${res.text}`);
      assert.match(res.text, /__proto__ is reserved/);
    }
    // The label batch answers a bad key as it answers any: INVALID_ARGUMENT for each device (contract §4.6).
    for (const body of [
      `{"devices":["${device}"],"addLabels":{"__proto__":"x"}}`,
      `{"devices":["${device}"],"removeLabels":["__proto__"]}`,
    ]) {
      const res = await t.request('POST', `/v2/projects/${P}/devices:batchUpdate`, { rawBody: body });
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.batchErrors.map((e: { status: { code: string } }) => e.status.code),
        ['INVALID_ARGUMENT'],
      );
      assert.match(res.body.batchErrors[0].status.message, /__proto__ is reserved/);
    }
    assert.deepEqual(await snapshot(t, device), before);
    assert.equal((await t.request('GET', `/v2/projects/${P}/devices`)).body.devices.length, 1);
    assert.deepEqual((await t.request('GET', `/v2/projects/${P}/dataconnectors`)).body.dataConnectors, []);
  });

  it('other keys that name Object.prototype members are ordinary keys', async () => {
    for (const key of ['constructor', 'toString', 'hasOwnProperty']) {
      assert.equal((await t.request('POST', `/v2/${device}/labels`, { body: { key, value: key } })).status, 200);
      assert.equal((await t.request('GET', `/v2/${device}`)).body.labels[key], key);
      assert.equal((await t.request('DELETE', `/v2/${device}/labels/${key}`)).status, 200);
    }
  });
});

describe('data connector settings as they will be sent', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());
  const create = (httpConfig: Record<string, unknown>) =>
    t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
      body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.com/hook', ...httpConfig } },
    });

  it('refuses a URL that URL parsing would change (whitespace, control characters, backslashes)', async () => {
    for (const url of [
      'https://example.com/a\r\nb',
      'https://example.com/\tx',
      ' https://example.com/x',
      'https://example.com/x ',
      'https://example.com\\x',
      'https://exa mple.com/',
      'https://example.com/\u0000',
    ]) {
      const res = await create({ url });
      assert.equal(res.status, 400, `${JSON.stringify(url)}: ${res.text}`);
      // NUL is refused with any text of any body, before the URL's own checks.
      assert.match(
        res.body.error,
        url.includes('\u0000')
          ? /^httpConfig\.url: the text may not contain the NUL/
          : /httpConfig\.url must not contain/,
      );
    }
    assert.deepEqual((await t.request('GET', `/v2/projects/${t.projectId}/dataconnectors`)).body.dataConnectors, []);
  });

  it('accepts every header value the HTTP client can send: tab, space, visible ASCII, Latin-1', async () => {
    const res = await create({ headers: { 'X-Token': 'a\tb c~', 'X-Latin': 'caf\u00e9 \u00ff' } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.httpConfig.headers, { 'X-Token': 'a\tb c~', 'X-Latin': 'caf\u00e9 \u00ff' });
  });
});

describe('the HTTP edge, on a real socket', () => {
  let t: TestContext;
  let port: number;
  let auth: string;
  before(async () => {
    t = await createTestContext({ env: { SENSORCLOUD_REQUEST_TIMEOUT: '1s' } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as { port: number }).port;
    auth = `Basic ${Buffer.from(`${t.boot.serviceAccount.keyId}:${t.boot.serviceAccount.secret}`).toString('base64')}`;
  });
  after(() => t.close());

  /** Writes raw parts (waiting `gapMs` between them) and reads until the server answers and closes (10 s at most). */
  function exchange(parts: string[], gapMs = 0): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let data = '';
      let sent = 0;
      socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer: ${data}`)));
      socket.on('data', (chunk) => {
        data += chunk.toString('utf8');
      });
      socket.on('error', (err) => (data ? resolve(data) : reject(err)));
      socket.on('close', () => resolve(data));
      const next = () => {
        if (sent >= parts.length || socket.destroyed) return;
        socket.write(parts[sent++]!);
        if (sent < parts.length) setTimeout(next, gapMs);
      };
      next();
    });
  }
  const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

  it('a body that arrives too slowly ends with 400 and the error body, not a connection held forever', async () => {
    const head = `POST /v2/projects/${t.projectId}/serviceaccounts HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: 40\r\n\r\n`;
    // One byte every 300 ms: the whole request would take 12 s; the timeout is 1 s.
    const answer = await exchange([head, ...'{"displayName":"slow"}'.split('')], 300);
    assert.match(answer, /^HTTP\/1\.1 400 /, answer);
    assert.match(bodyOf(answer).error, /did not arrive completely within 1 s/);
    assert.equal(
      (await t.request('GET', `/v2/projects/${t.projectId}/serviceaccounts`)).body.serviceAccounts.length,
      1,
    );
  });

  it('the slow :publish fast path times out the same way', async () => {
    const device = (await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'touch' } })).body
      .name;
    const head = `POST /v2/${device}:publish HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: 12\r\n\r\n`;
    const answer = await exchange([head, '{', '"', 't'], 600);
    assert.match(answer, /^HTTP\/1\.1 400 /, answer);
    assert.deepEqual((await t.request('GET', `/v2/${device}/events`)).body.events, []);
  });

  it('an unknown Expect is ignored: the request is answered as usual, never 417', async () => {
    const ok = await exchange([
      `GET /v2/roles HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nExpect: banana\r\nConnection: close\r\n\r\n`,
    ]);
    assert.match(ok, /^HTTP\/1\.1 200 /, ok);
    assert.equal(bodyOf(ok).roles.length, 4);
    const missing = await exchange(['GET /v2/nope HTTP/1.1\r\nHost: x\r\nExpect: banana\r\nConnection: close\r\n\r\n']);
    assert.match(missing, /^HTTP\/1\.1 404 /, missing);
    assert.deepEqual(Object.keys(bodyOf(missing)), ['error', 'code', 'help']);
  });

  it('low-level errors on the token endpoint use the OAuth shape', async () => {
    const answers = [
      await exchange([`POST /oauth2/token HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]),
      await exchange(['POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n']),
      await exchange(['POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\n', 'grant', '_type'], 700),
      await exchange([
        `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Length: ${1024 * 1024 + 10}\r\nConnection: close\r\n\r\n${'a'.repeat(1024 * 1024 + 10)}`,
      ]),
    ];
    for (const answer of answers) {
      assert.match(answer, /^HTTP\/1\.1 400 /, answer.slice(0, 200));
      const body = bodyOf(answer);
      assert.deepEqual(Object.keys(body), ['error', 'error_description', 'code', 'help'], answer.slice(0, 300));
      assert.equal(body.error, 'invalid_request');
    }
    // Elsewhere the standard shape.
    const other = await exchange([`GET /v2/roles HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]);
    assert.deepEqual(Object.keys(bodyOf(other)), ['error', 'code', 'help']);
  });

  it('a body over the limit is read to its end, then refused with the message: the sender sees the 400, never a broken pipe', async () => {
    const size = 1024 * 1024 + 10;
    const send = (path: string, length: number, parts: string[]) =>
      new Promise<{ answer: string; answeredAfterLastPart: boolean; error: string | null }>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        let answer = '';
        let lastPartSent = false;
        let answeredAfterLastPart = false;
        let error: string | null = null;
        socket.on('data', (chunk) => {
          if (answer === '') answeredAfterLastPart = lastPartSent;
          answer += chunk.toString('utf8');
        });
        socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
        socket.on('close', () => resolve({ answer, answeredAfterLastPart, error }));
        socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: ${length}\r\n\r\n`);
        // The body in pieces 100 ms apart: before, the answer came at the headers and the connection closed under
        // the pieces still to come (write EPIPE, or a reset that could lose the answer).
        const next = (i: number) => {
          if (socket.destroyed) return;
          if (i === parts.length) return;
          socket.write(parts[i]!, () => {
            if (i === parts.length - 1) lastPartSent = true;
          });
          setTimeout(() => next(i + 1), 100);
        };
        next(0);
      });
    const piece = Math.ceil(size / 4);
    const parts = Array.from({ length: 4 }, (_, i) => 'a'.repeat(Math.min(piece, size - i * piece)));
    for (const path of ['/oauth2/token', `/v2/projects/${t.projectId}/serviceaccounts`]) {
      const { answer, answeredAfterLastPart, error } = await send(path, size, parts);
      assert.equal(error, null, `${path}: ${answer.slice(0, 200)}`);
      assert.match(answer, /^HTTP\/1\.1 400 /, answer.slice(0, 200));
      assert.match(answer, /request body larger than 1 MiB/);
      assert.ok(answeredAfterLastPart, `${path}: answered before the body was read`);
    }
    // A body declared far larger is not waited for: the 400 at once, then the connection closes.
    const huge = await send('/oauth2/token', 64 * 1024 * 1024, Array(4).fill('a'.repeat(1024)));
    assert.match(huge.answer, /^HTTP\/1\.1 400 /, huge.answer.slice(0, 200));
    assert.equal(huge.answeredAfterLastPart, false);
  });

  it('the request timeout is configurable and refused out of range', async () => {
    const { loadConfig } = await import('../../src/config.ts');
    assert.equal(loadConfig({}).requestTimeoutMs, 30_000);
    assert.equal(loadConfig({ SENSORCLOUD_REQUEST_TIMEOUT: '2m' }).requestTimeoutMs, 120_000);
    assert.throws(() => loadConfig({ SENSORCLOUD_REQUEST_TIMEOUT: '0' }), /SENSORCLOUD_REQUEST_TIMEOUT/);
    assert.throws(() => loadConfig({ SENSORCLOUD_REQUEST_TIMEOUT: 'soon' }), /SENSORCLOUD_REQUEST_TIMEOUT/);
  });
});
