// The fuzz and abuse campaign over every operation of /v2/openapi.json and /oauth2/token, driven by fast-check:
// requests are generated from each operation's own schemas, then mutated (wrong types, missing and unknown fields,
// huge and deep values, text that is not Unicode, hostile path and query values) and sent with every kind of
// credential. Properties checked on every answer:
//   1. no 5xx, and only the contract's statuses;
//   2. every error in the contract's shape (the OAuth shape on the token endpoint);
//   3. no change of state on any answer but 200 (a fingerprint of every table, before and after);
// and after the campaign: the service still answers, and its memory is bounded.
// Used by test/fuzz/api.test.ts (CI) and test/fuzz/cli.ts (`npm run fuzz -- --runs N` for deeper campaigns).
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { EVENT_TYPES } from '../../src/domain/device-types.ts';
import type { SqliteDb } from '../../src/store/sqlite/db.ts';
import type { BootstrapFile } from '../../src/services/bootstrap.ts';
import {
  createTestContext,
  type Auth,
  type RequestOptions,
  type TestContext,
  type TestResponse,
} from '../helpers/context.ts';
import { MINIMAL } from '../helpers/event-bodies.ts';
import { sleep } from '../helpers/until.ts';

type Schema = Record<string, any>;

export interface Operation {
  method: string;
  /** Public path with `{param}` placeholders. */
  path: string;
  pathParams: string[];
  query: Array<{ name: string; schema: Schema }>;
  body: Schema | null;
}

export interface Request {
  op: Operation;
  method: string;
  url: string;
  auth: string;
  options: RequestOptions;
}

export interface CampaignReport {
  runs: number;
  statuses: Record<string, number>;
  /** Operations that answered 200 at least once (the campaign reached past validation). */
  reached: number;
  operations: number;
  heapUsedMb: number;
}

/** Contract §1.4; 429 cannot happen (rate limit off), 503 and 500 never may (the store is up). */
const STATUSES = new Set([200, 400, 401, 403, 404, 409]);
const OAUTH_ERRORS = new Set(['invalid_request', 'unsupported_grant_type', 'invalid_grant']);

// ---- the service under test and its fixtures ----

/** The service under test: in process (test/helpers/context.ts) or a real process over HTTP (process-campaign.ts). */
export interface Target {
  /** A request; `auth` undefined means the bootstrap service account (an organization admin). */
  request(method: string, url: string, options?: RequestOptions): Promise<TestResponse>;
  projectId: string;
  organizationId: string;
  boot: BootstrapFile;
  publicUrl: string;
  /** Now on the service's clock, in seconds. */
  nowSeconds(): number;
}

export const targetOf = (t: TestContext): Target => ({
  request: (method, url, options) => t.request(method, url, options),
  projectId: t.projectId,
  organizationId: t.organizationId,
  boot: t.boot,
  publicUrl: t.deps.config.publicUrl,
  nowSeconds: () => t.clock.now() / 1000,
});

interface Fixtures {
  O: string;
  P: string;
  P2: string;
  device: string;
  cconDevice: string;
  sa: string;
  key: string;
  member: string;
  orgMember: string;
  dc: string;
  /** Extensions §X5: a notification rule, a contact group, a contact, and an alert of the rule. */
  rule: string;
  contactGroup: string;
  contact: string;
  alert: string;
  userEmail: string;
  userPassword: string;
}

/** Credentials by name; the generator picks one name per request. */
export type Credentials = Record<string, Auth>;

const b64url = (o: unknown) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');

function assertion(keyId: string, secret: string, email: string, audience: string, nowSeconds: number): string {
  const input = `${b64url({ alg: 'HS256', kid: keyId })}.${b64url({ iss: email, aud: audience, iat: nowSeconds, exp: nowSeconds + 3600 })}`;
  return `${input}.${createHmac('sha256', Buffer.from(secret, 'utf8')).update(input).digest('base64url')}`;
}

async function must(t: Target, method: string, url: string, body?: unknown): Promise<any> {
  const res = await t.request(method, url, { body });
  assert.equal(res.status, 200, `fixture ${method} ${url}: ${res.text}`);
  return res.body;
}

/** Resources the generator names in paths and bodies; made again when a request deleted them. */
export async function makeFixtures(t: Target, f: Partial<Fixtures>): Promise<Fixtures> {
  const P = t.projectId;
  const exists = async (url: string) => url !== '' && (await t.request('GET', `/v2/${url}`)).status === 200;
  if (!f.P2 || !(await exists(`projects/${f.P2}`)))
    f.P2 = (
      await must(t, 'POST', '/v2/projects', {
        organization: `organizations/${t.organizationId}`,
        displayName: 'Fuzz second',
      })
    ).name.split('/')[1];
  if (!f.device || !(await exists(f.device))) {
    f.device = (
      await must(t, 'POST', `/v2/projects/${P}/devices`, { type: 'temperature', labels: { name: 'Room 4', room: '4' } })
    ).name;
    await must(t, 'POST', `/v2/${f.device}:publish`, { temperature: { value: 21.5 } });
  }
  if (!f.cconDevice || !(await exists(f.cconDevice)))
    f.cconDevice = (await must(t, 'POST', `/v2/projects/${P}/devices`, { type: 'ccon' })).name;
  if (!f.sa || !(await exists(f.sa))) {
    f.sa = (
      await must(t, 'POST', `/v2/projects/${P}/serviceaccounts`, { displayName: 'fuzz', enableBasicAuth: true })
    ).name;
    f.key = '';
  }
  if (!f.key || !(await exists(f.key))) f.key = (await must(t, 'POST', `/v2/${f.sa}/keys`)).key.name;
  if (!f.member || !(await exists(f.member)))
    f.member = (
      await must(t, 'POST', `/v2/projects/${P}/members`, {
        email: `pending-${Date.now()}@example.com`,
        roles: ['roles/project.user'],
      })
    ).name;
  if (!f.orgMember || !(await exists(f.orgMember)))
    f.orgMember = (
      await must(t, 'POST', `/v2/organizations/${t.organizationId}/members`, {
        email: `org-${Date.now()}@example.com`,
        roles: ['roles/organization.admin'],
      })
    ).name;
  if (!f.dc || !(await exists(f.dc)))
    f.dc = (
      await must(t, 'POST', `/v2/projects/${P}/dataconnectors`, {
        type: 'HTTP_PUSH',
        displayName: 'fuzz',
        httpConfig: { url: 'https://example.com/hook', signatureSecret: 's' },
      })
    ).name;
  if (!f.rule || !(await exists(f.rule)))
    f.rule = (
      await must(t, 'POST', `/v2/projects/${P}/rules`, {
        displayName: 'fuzz',
        enabled: true,
        trigger: { field: 'temperature', range: { upper: 100, type: 'OUTSIDE' } },
        escalationLevels: [
          { displayName: 'one', actions: [{ type: 'WEBHOOK', webhook: { url: 'https://example.com/alert' } }] },
        ],
      })
    ).name;
  if (!f.contactGroup || !(await exists(f.contactGroup)))
    f.contactGroup = (
      await must(t, 'POST', `/v2/organizations/${t.organizationId}/contactGroups`, { displayName: 'fuzz' })
    ).name;
  if (!f.contact || !(await exists(f.contact)))
    f.contact = (
      await must(t, 'POST', `/v2/projects/${P}/contacts`, {
        contactGroup: f.contactGroup,
        displayName: 'fuzz',
        email: 'fuzz@example.com',
      })
    ).name;
  if (!f.alert || !(await exists(f.alert))) {
    // A reading far out of the rule's range: an alert of the fixture device.
    await must(t, 'POST', `/v2/${f.device}:publish`, { temperature: { value: 150 } });
    const open = await must(t, 'GET', `/v2/projects/${P}/alerts?state=TRIGGERED&state=ACKNOWLEDGED`);
    const any = open.alerts[0] ?? (await must(t, 'GET', `/v2/projects/${P}/alerts`)).alerts[0];
    f.alert = any?.name ?? '';
  }
  return { O: t.organizationId, P, userEmail: t.boot.user.email, userPassword: t.boot.user.password, ...f } as Fixtures;
}

/** Every kind of credential: each role, Basic and Bearer, and every broken form. */
export async function makeCredentials(t: Target): Promise<Credentials> {
  // Through the API, as any client would make them.
  const account = async (roles: string[], enableBasicAuth = true) => {
    const sa = await must(t, 'POST', `/v2/projects/${t.projectId}/serviceaccounts`, {
      displayName: 'fuzz caller',
      enableBasicAuth,
    });
    const key = await must(t, 'POST', `/v2/${sa.name}/keys`);
    const scope =
      roles[0] === 'roles/organization.admin' ? `organizations/${t.organizationId}` : `projects/${t.projectId}`;
    if (roles.length > 0) await must(t, 'POST', `/v2/${scope}/members`, { email: sa.email, roles });
    return {
      keyId: key.key.id as string,
      secret: key.secret as string,
      email: sa.email as string,
      auth: { basic: [key.key.id, key.secret] } as Auth,
    };
  };
  const admin = await account(['roles/organization.admin']);
  const projectAdmin = await account(['roles/project.admin']);
  const developer = await account(['roles/project.developer']);
  const user = await account(['roles/project.user']);
  const nobody = await account([]);
  const noBasic = await account(['roles/project.admin'], false);
  const now = Math.floor(t.nowSeconds());
  const audience = `${t.publicUrl}/oauth2/token`;
  const saToken = await t.request('POST', '/oauth2/token', {
    auth: null,
    rawBody: `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=${assertion(developer.keyId, developer.secret, developer.email, audience, now)}`,
  });
  const userToken = await t.request('POST', '/oauth2/token', {
    auth: null,
    rawBody: new URLSearchParams({
      grant_type: 'password',
      username: t.boot.user.email,
      password: t.boot.user.password,
    }).toString(),
  });
  assert.equal(saToken.status, 200, saToken.text);
  assert.equal(userToken.status, 200, userToken.text);
  return {
    admin: admin.auth,
    projectAdmin: projectAdmin.auth,
    developer: developer.auth,
    user: user.auth,
    nobody: nobody.auth,
    noBasic: noBasic.auth,
    saBearer: { bearer: saToken.body.access_token },
    userBearer: { bearer: userToken.body.access_token },
    none: null,
    wrongSecret: { basic: [admin.keyId, '0'.repeat(32)] },
    garbageBasic: { raw: 'Basic !!!' },
    emptyBasic: { raw: 'Basic ' },
    garbageBearer: { raw: 'Bearer x.y.z' },
    tamperedBearer: { bearer: `${saToken.body.access_token}x` },
    otherScheme: { raw: 'Digest username="x"' },
    hugeHeader: { raw: `Bearer ${'a'.repeat(8000)}` },
  };
}

// ---- generators ----

/** Strings no client should send: empty, wildcard, traversal, encoded separators, controls, very long, markup. */
const HOSTILE_STRINGS = [
  '',
  '-',
  ' ',
  '..',
  '../..',
  '/',
  '%2F',
  '%00',
  '\u0000',
  '\r\n',
  '\t',
  '__proto__',
  'constructor',
  'prototype',
  '%',
  '%ZZ',
  ':',
  '%3A',
  '@publish',
  '"',
  "'",
  '\\',
  '<img src=x onerror=alert(1)>',
  '$' + '{7*7}' /* a template-injection probe */,
  '{{7*7}}',
  'é',
  '😀',
  '\ufeff',
  '\u202e',
  '\ud800',
  'a\udfffb',
  'room\udc00',
  'x'.repeat(300),
  'x'.repeat(5000),
  'roles/organization.admin',
  'projects/-',
  'organizations/-',
  'https://127.0.0.1/hook',
  'http://example.com',
  'https://[::1]/',
  'file:///etc/passwd',
  '2025-13-45T25:61:61Z',
  '1e308',
  'NaN',
  '-1',
  '0',
  'true',
  'null',
];

const fixtureStrings = (f: Fixtures) => [
  `projects/${f.P}`,
  `projects/${f.P2}`,
  `organizations/${f.O}`,
  f.device,
  f.cconDevice,
  f.sa,
  f.key,
  f.member,
  f.orgMember,
  f.dc,
  f.rule,
  f.contactGroup,
  f.contact,
  f.device.split('/').pop()!,
  'roles/project.user',
  'roles/project.developer',
  'roles/project.admin',
  'roles/organization.admin',
  'HTTP_PUSH',
  'ACTIVE',
  'USER_DISABLED',
  'SYSTEM_DISABLED',
  'temperature',
  'touch',
  'ccon',
  'name',
  'room',
  'a@example.com',
  f.userEmail,
  'https://example.com/hook',
  '2025-06-01T12:00:00Z',
  'displayName',
  'status,events',
  ...EVENT_TYPES,
];

/** A string: from the fixtures, ordinary, hostile, or huge. */
const anyString = (f: Fixtures): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...fixtureStrings(f)) },
    { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
    { weight: 1, arbitrary: fc.integer({ min: 1000, max: 200_000 }).map((n) => 'y'.repeat(n)) },
  );

/** Any JSON value, nested a little. */
const anyJson = (f: Fixtures): fc.Arbitrary<unknown> =>
  fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      anyString(f),
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(fc.oneof(anyString(f), fc.constant('__proto__')), tie('value'), { maxKeys: 4 }),
    ),
  })).value;

/** Values the service accepts for a field of this name, so requests get past validation to the rules behind it. */
function goodValues(field: string, f: Fixtures): fc.Arbitrary<unknown> | null {
  const role = fc.constantFrom('roles/project.user', 'roles/project.developer', 'roles/project.admin');
  switch (field) {
    case 'email':
      return fc.oneof(
        fc.integer({ min: 0, max: 1e6 }).map((n) => `person${n}@example.com`),
        fc.constant(f.userEmail),
      );
    case 'roles':
      return fc.oneof(fc.array(role, { minLength: 1, maxLength: 3 }), fc.constant(['roles/organization.admin']));
    case 'organization':
      return fc.constant(`organizations/${f.O}`);
    case 'project':
      return fc.constantFrom(`projects/${f.P}`, `projects/${f.P2}`);
    case 'projects':
      return fc.constantFrom([`projects/${f.P}`], [`projects/${f.P2}`], [`projects/${f.P}`, `projects/${f.P2}`]);
    case 'devices':
      return fc.constantFrom([f.device], [f.device, f.cconDevice], [f.device.split('/').pop()]);
    case 'names':
      return fc.constantFrom([f.member], [`${f.member}x`]);
    case 'type':
      return fc.constantFrom('temperature', 'touch', 'humidity', 'ccon', 'co2', 'HTTP_PUSH');
    case 'displayName':
      return fc.string({ minLength: 1, maxLength: 30 });
    case 'status':
      return fc.constantFrom('ACTIVE', 'USER_DISABLED');
    case 'events':
      return fc.subarray([...EVENT_TYPES]);
    case 'labels':
      return fc.oneof(
        fc.constantFrom(['name'], ['name', 'room']),
        fc.dictionary(fc.constantFrom('name', 'room', 'floor'), fc.string({ maxLength: 20 }), { maxKeys: 3 }),
      );
    case 'addLabels':
      return fc.dictionary(fc.constantFrom('name', 'room', 'floor'), fc.string({ maxLength: 20 }), {
        minKeys: 1,
        maxKeys: 3,
      });
    case 'removeLabels':
      return fc.constantFrom(['room'], ['floor', 'name']);
    case 'url':
      return fc.constantFrom('https://example.com/hook', 'https://example.org/a/b?c=d');
    case 'headers':
      return fc.dictionary(fc.constantFrom('X-Api-Key', 'X-Tenant'), fc.string({ maxLength: 20 }), { maxKeys: 2 });
    case 'signatureSecret':
      return fc.string({ maxLength: 20 });
    case 'key':
      return fc.constantFrom('room', 'floor', 'name', 'room\ud800');
    case 'value':
      return fc.string({ maxLength: 20 });
    case 'enableBasicAuth':
      return fc.boolean();
    case 'location':
      return fc.record({
        latitude: fc.double({ min: -90, max: 90, noNaN: true }),
        longitude: fc.double({ min: -180, max: 180, noNaN: true }),
        timeLocation: fc.constantFrom('Europe/Oslo', ''),
      });
    case 'token':
      return fc.string({ minLength: 10, maxLength: 60 });
    case 'password':
      return fc.string({ minLength: 12, maxLength: 30 });
    default:
      return null;
  }
}

/** A value for a schema: usually of the right type (so validation is passed and the service's own rules run). */
function fromSchema(schema: Schema | undefined, f: Fixtures, depth = 0, field = ''): fc.Arbitrary<unknown> {
  const good = goodValues(field, f);
  if (good !== null)
    return fc.oneof({ weight: 4, arbitrary: good }, { weight: 1, arbitrary: fromSchema(schema, f, depth) });
  if (!schema || depth > 4) return anyJson(f);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s: Schema) => fromSchema(s, f, depth + 1)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  switch (schema.type) {
    case 'string':
      return anyString(f);
    case 'integer':
      return fc.oneof(fc.integer({ min: -5, max: 2000 }), fc.constant(2 ** 53));
    case 'number':
      return fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ min: -300, max: 300 }));
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.oneof(
        { weight: 5, arbitrary: fc.array(fromSchema(schema.items, f, depth + 1), { maxLength: 5 }) },
        { weight: 1, arbitrary: fc.integer({ min: 1001, max: 3000 }).map((n) => Array(n).fill(`projects/${f.P}`)) },
      );
    case 'object': {
      const props = Object.entries<Schema>(schema.properties ?? {});
      const record = schema.patternProperties ? Object.values<Schema>(schema.patternProperties)[0] : null;
      // Required fields are usually there, the others now and then; unknown fields now and then too.
      const known = fc.record(Object.fromEntries(props.map(([k, s]) => [k, fromSchema(s, f, depth + 1, k)])), {
        requiredKeys: [],
      });
      const required = fc.record(
        Object.fromEntries(
          props.filter(([k]) => schema.required?.includes(k)).map(([k, s]) => [k, fromSchema(s, f, depth + 1, k)]),
        ),
      );
      const extra = fc.dictionary(anyString(f), record ? fromSchema(record, f, depth + 1) : anyJson(f), {
        maxKeys: record ? 4 : 2,
      });
      return fc
        .tuple(known, fc.option(required, { freq: 4, nil: {} }), fc.option(extra, { freq: 3, nil: {} }))
        .map(([k, r, e]) => ({ ...e, ...k, ...r }));
    }
    default:
      return anyJson(f);
  }
}

/** The body of a :publish: a valid event of some type, mutated or not. */
const publishBody = (f: Fixtures): fc.Arbitrary<unknown> =>
  fc.oneof(
    fc.constantFrom(...Object.entries(MINIMAL).map(([type, { body }]) => ({ [type]: body }))),
    fc
      .tuple(
        fc.constantFrom(...Object.keys(MINIMAL)),
        fc.dictionary(
          fc.constantFrom(
            'value',
            'samples',
            'updateTime',
            'state',
            'total',
            'percentage',
            'signalStrength',
            'cloudConnectors',
            'errors',
            'remarks',
            'available',
            'connection',
            'macAddress',
            'ipAddress',
            'relativeHumidity',
            'temperature',
            'ppm',
            'pascal',
            'isBackfilled',
          ),
          anyJson(f),
          { maxKeys: 4 },
        ),
      )
      .map(([type, data]) => ({ [type]: data })),
    fc
      .tuple(fc.constantFrom('temperature', 'humidity'), fc.integer({ min: 99, max: 20_000 }))
      .map(([type, n]) => ({ [type]: { value: 1, temperature: 1, relativeHumidity: 1, samples: Array(n).fill({}) } })),
    anyJson(f),
  );

/** Ways to break a body that is otherwise well-formed. */
function mutateBody(body: unknown): fc.Arbitrary<{ json?: unknown; raw?: string }> {
  const text = JSON.stringify(body) ?? 'null';
  return fc.oneof(
    { weight: 14, arbitrary: fc.constant({ json: body }) },
    { weight: 2, arbitrary: fc.constant({ raw: text.replace(/:"([^"\\]*)"/, ':"$1\\ud800"') }) }, // a lone surrogate in the first text value
    { weight: 1, arbitrary: fc.constant({ raw: text.replace(/"([^"\\]*)":/, '"\\udc00$1":') }) }, // ... in the first key
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('', ' ', '{', '[]', '"x"', '1', 'null', '{"a":}', 'grant_type=password', '\u0000')
        .map((raw) => ({ raw })),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 60, max: 300 }).map((n) => ({ raw: `${'{"a":'.repeat(n)}1${'}'.repeat(n)}` })),
    },
    { weight: 1, arbitrary: fc.constant({ raw: `{"pad":"${'p'.repeat(1024 * 1024)}"}` }) }, // over 1 MiB
  );
}

/** A path parameter: the fixture it names, or something hostile. */
function pathParam(name: string, f: Fixtures): fc.Arbitrary<string> {
  const last = (n: string) => n.split('/').pop()!;
  const good: Record<string, string[]> = {
    project: [f.P, f.P, f.P2, '-'],
    organization: [f.O],
    device: [last(f.device), last(f.cconDevice)],
    serviceAccount: [last(f.sa), last(f.sa)],
    key: [last(f.key)],
    member: [last(f.member), last(f.orgMember), last(f.sa)],
    dc: [last(f.dc)],
    rule: [last(f.rule)],
    contactGroup: [last(f.contactGroup)],
    contact: [last(f.contact)],
    alert: f.alert ? [last(f.alert)] : ['x'],
    role: ['project.user', 'organization.admin'],
  };
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...(good[name] ?? ['x'])) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(...HOSTILE_STRINGS.filter((s) => s !== '' && s.length < 3000))
        .map((s) => encodeURIComponent(s.toWellFormed())),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'room',
        'name',
        '__proto__',
        '%ED%A0%80',
        '%E2%9C%93',
        'a%2Fb',
        'x'.repeat(2100),
        'd0000000000000000000',
        'emu00000000000000000000',
      ),
    },
  );
}

const QUERY_VALUES = (f: Fixtures) =>
  fc.oneof(
    fc.constantFrom(
      '',
      '0',
      '1',
      '-1',
      '1.5',
      '1e3',
      '5000',
      'abc',
      '%',
      'room',
      'room=4',
      '__proto__',
      'name=Room%204',
      'temperature',
      `organizations/${f.O}`,
      `projects/${f.P}`,
      '-labels.name',
      'reported.temperature.value',
      'labels.__proto__',
      'createTime',
      '2025-06-01T00:00:00Z',
      '2099-01-01T00:00:00Z',
      'displayName,bogus',
      '10s',
      '0.001s',
      Buffer.from('{"k":[{}],"f":""}').toString('base64url'),
    ),
    anyString(f).map((s) => encodeURIComponent(s.slice(0, 3000).toWellFormed())),
  );

function requestFor(op: Operation, f: Fixtures, credentials: string[]): fc.Arbitrary<Request> {
  const params = fc.tuple(...op.pathParams.map((p) => pathParam(p, f)));
  const query = fc.array(
    fc.tuple(fc.constantFrom(...op.query.map((q) => q.name), 'page_size', 'update_mask', 'foo'), QUERY_VALUES(f)),
    { maxLength: 3 },
  );
  const body = op.path.endsWith(':publish')
    ? publishBody(f)
    : op.body
      ? fromSchema(op.body, f)
      : fc.option(anyJson(f), { nil: undefined });
  return fc
    .record({
      params,
      query,
      body,
      // Now and then a method the route does not have.
      method: fc.constantFrom(...Array(30).fill(op.method), 'GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'),
      // Mostly the organization admin, so requests reach the rules behind authorisation; every other kind too.
      auth: fc.oneof(
        { weight: 3, arbitrary: fc.constant('admin') },
        { weight: 2, arbitrary: fc.constantFrom(...credentials) },
      ),
      contentType: fc.constantFrom(
        undefined,
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'garbage',
        'application/json; charset=latin1',
      ),
      shape: fc.constantFrom('plain', 'plain', 'plain', 'encodedColon', 'trailingSlash'),
    })
    .chain((r) => mutateBody(r.body).map((b) => ({ ...r, b })))
    .map((r) => {
      let i = 0;
      let url = op.path.replace(/\{(\w+)\}/g, () => r.params[i++]!);
      if (r.shape === 'encodedColon') url = url.replace(':', '%3A');
      if (r.shape === 'trailingSlash') url += '/';
      if (r.query.length > 0) url += `?${r.query.map(([k, v]) => `${k}=${v}`).join('&')}`;
      const options: RequestOptions = { headers: {} };
      if (r.b.raw !== undefined) options.rawBody = r.b.raw;
      else if (r.b.json !== undefined) options.rawBody = JSON.stringify(r.b.json);
      if (r.contentType) options.headers!['content-type'] = r.contentType;
      return { op, method: r.method, url, auth: r.auth, options };
    });
}

/** The token endpoint's own requests: every grant, well-formed or not. */
function tokenRequest(f: Fixtures, t: Target): fc.Arbitrary<Request> {
  const op: Operation = { method: 'POST', path: '/oauth2/token', pathParams: [], query: [], body: null };
  const now = Math.floor(t.nowSeconds());
  const fields = fc.dictionary(
    fc.constantFrom('grant_type', 'assertion', 'username', 'password', 'scope', '__proto__'),
    fc.oneof(
      fc.constantFrom(
        'password',
        'urn:ietf:params:oauth:grant-type:jwt-bearer',
        'client_credentials',
        f.userEmail,
        f.userPassword,
        'wrong password!',
        assertion('nope', 'x', 'a@b.c', `${t.publicUrl}/oauth2/token`, now),
        'a.b.c',
        `${b64url({ alg: 'none', kid: 'x' })}.${b64url({})}.`,
      ),
      anyString(f),
    ),
    { maxKeys: 4 },
  );
  return fc
    .record({ fields, form: fc.boolean() })
    .chain((r) => {
      const text = r.form
        ? new URLSearchParams(Object.entries(r.fields).map(([k, v]): [string, string] => [k, String(v)])).toString()
        : JSON.stringify(r.fields);
      return fc.oneof(
        { weight: 5, arbitrary: fc.constant({ raw: text }) },
        { weight: 1, arbitrary: mutateBody(r.fields) },
      );
    })
    .map((b) => ({
      op,
      method: 'POST',
      url: '/oauth2/token',
      auth: 'none',
      options: { rawBody: 'raw' in b ? b.raw : JSON.stringify(b.json), headers: {} },
    }));
}

// ---- properties ----

/** A fingerprint of every table: equal before and after means nothing was written. */
function fingerprint(db: SqliteDb): string {
  const hash = createHash('sha256');
  const tables = db.raw
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .pluck()
    .all() as string[];
  for (const table of tables) {
    hash.update(`\u0001${table}`);
    for (const row of db.raw.prepare(`SELECT * FROM "${table}"`).raw().iterate() as Iterable<unknown[]>) {
      for (const v of row) hash.update(v instanceof Uint8Array ? v : `\u0002${String(v)}`);
    }
  }
  return hash.digest('base64');
}

export function checkAnswer(t: Target, req: Request, res: TestResponse): void {
  const label = `${req.method} ${req.url.slice(0, 160)} as ${req.auth} body=${(req.options.rawBody ?? '').slice(0, 160)} → ${res.status} ${res.text.slice(0, 300)}`;
  const token = req.url.startsWith('/oauth2/token') && req.method === 'POST';
  // The token endpoint's login throttle (10 failed logins for one email) is a 429 with Retry-After (contract §2.5).
  if (token && res.status === 429) {
    assert.ok(Number(res.headers['retry-after']) >= 1, `Retry-After: ${label}`);
    assert.deepEqual(Object.keys(res.body), ['error', 'code', 'help'], `429 shape: ${label}`);
    return;
  }
  // A test push needs the delivery engine, which the in-process target does not run: 503, in the error shape.
  if (
    res.status === 503 &&
    req.method === 'POST' &&
    /(:|%3a)test\b/i.test(req.url.split('?')[0]!) &&
    String(res.body?.error).startsWith('the delivery engine does not run in this process')
  ) {
    assert.deepEqual(Object.keys(res.body), ['error', 'code', 'help'], `503 shape: ${label}`);
    return;
  }
  assert.ok(STATUSES.has(res.status), `status outside the contract: ${label}`);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', `content type: ${label}`);
  assert.ok(res.body && typeof res.body === 'object' && !Array.isArray(res.body), `not a JSON object: ${label}`);
  if (res.status === 200) return;
  if (isStreamRequest(req) && typeof res.body.error === 'object') {
    assert.deepEqual(Object.keys(res.body.error), ['code', 'message'], `stream error shape: ${label}`);
    assert.equal(res.body.error.code, res.status, `stream error code: ${label}`);
    return;
  }
  const oauth = token;
  const keys = oauth ? ['error', 'error_description', 'code', 'help'] : ['error', 'code', 'help'];
  assert.deepEqual(Object.keys(res.body), keys, `error shape: ${label}`);
  if (oauth) assert.ok(OAUTH_ERRORS.has(res.body.error), `OAuth error code: ${label}`);
  else assert.ok(typeof res.body.error === 'string' && res.body.error.length > 0, `error message: ${label}`);
  assert.equal(res.body.code, res.status, `code: ${label}`);
  assert.equal(res.body.help, `${t.publicUrl}/docs/errors#${res.status}`, `help: ${label}`);
}

/** An event stream: answered 200 with a body that never ends. */
export const isStreamRequest = (req: Request) => req.op.path.endsWith(':stream') && req.method === 'GET';

/** Operations from the service's own OpenAPI document. Streams answer 200 with an endless body, so they are sent
 *  only in forms that fail before streaming (the in-process client waits for a whole response). */
export function operationsOf(doc: any): Operation[] {
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      out.push({
        method: method.toUpperCase(),
        path,
        pathParams: op.parameters.filter((p: any) => p.in === 'path').map((p: any) => p.name),
        query: op.parameters.filter((p: any) => p.in === 'query').map((p: any) => ({ name: p.name, schema: p.schema })),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
      });
    }
  }
  return out;
}

/** Heap in use after a full garbage collection, in MB. */
async function heapAfterGc(): Promise<number> {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

export interface CampaignOptions {
  runs: number;
  seed?: number;
  log?: (line: string) => void;
}

/** The generated requests against a target, with the properties checked on each answer. */
export async function runCampaign(
  t: Target,
  options: CampaignOptions & {
    /** Answers one request; null for an event stream that opened (200 with an endless body), closed at once. */
    send(req: Request, auth: Auth): Promise<TestResponse | null>;
    /** When given, compared before and after every answer but 200: nothing may change. */
    fingerprint?: () => string;
  },
): Promise<Omit<CampaignReport, 'heapUsedMb'>> {
  const log = options.log ?? (() => undefined);
  const credentials = await makeCredentials(t);
  let fixtures = await makeFixtures(t, {});
  const doc = (await t.request('GET', '/v2/openapi.json', { auth: null })).body;
  const operations = operationsOf(doc).filter((op) => op.path !== '/oauth2/token');
  const names = Object.keys(credentials);
  const statuses: Record<string, number> = {};
  const reached = new Set<string>();
  let done = 0;
  const arbitrary = (f: Fixtures) =>
    fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom(...operations).chain((op) => requestFor(op, f, names)) },
      { weight: 1, arbitrary: tokenRequest(f, t) },
    );
  // Fixtures are made again between rounds, so deletes earlier in the campaign do not starve later requests.
  while (done < options.runs) {
    const numRuns = Math.min(250, options.runs - done);
    const round = done / 250;
    await fc.assert(
      fc.asyncProperty(arbitrary(fixtures), async (req) => {
        const before = options.fingerprint?.();
        const res = await options.send(req, credentials[req.auth] ?? null);
        if (res === null) return;
        checkAnswer(t, req, res);
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status === 200) reached.add(`${req.op.method} ${req.op.path}`);
        else if (before !== undefined) {
          assert.equal(
            options.fingerprint!(),
            before,
            `state changed on a ${res.status}: ${req.method} ${req.url.slice(0, 160)} body=${(req.options.rawBody ?? '').slice(0, 200)} → ${res.text.slice(0, 200)}`,
          );
        }
      }),
      {
        numRuns,
        seed: options.seed === undefined ? undefined : options.seed + round,
        endOnFailure: false,
        verbose: 1,
        includeErrorInReport: true,
      },
    );
    done += numRuns;
    log(`fuzz: ${done}/${options.runs} requests, statuses ${JSON.stringify(statuses)}`);
    fixtures = await makeFixtures(t, fixtures);
  }
  // The service is still healthy and coherent afterwards.
  assert.equal((await t.request('GET', '/healthz', { auth: null })).status, 200);
  assert.equal((await t.request('GET', '/v2/projects', { auth: credentials.admin })).status, 200);
  return { runs: done, statuses, reached: reached.size, operations: operations.length };
}

/** The campaign in process: the real app (fast path included), real SQLite, fake clock, state fingerprints. */
export async function runApiCampaign(options: CampaignOptions): Promise<CampaignReport> {
  const t = await createTestContext();
  try {
    const db = (t.deps.store as unknown as { db: SqliteDb }).db;
    const report = await runCampaign(targetOf(t), {
      ...options,
      send: (req, auth) => sendBounded(t, req, auth),
      fingerprint: () => fingerprint(db),
    });
    return { ...report, heapUsedMb: Math.round(await heapAfterGc()) };
  } finally {
    await t.close();
  }
}

/** Sends one request; an event stream that opens (200) is closed at once and reported as null. */
async function sendBounded(t: TestContext, req: Request, auth: Auth): Promise<TestResponse | null> {
  if (!isStreamRequest(req)) return t.request(req.method, req.url, { ...req.options, auth });
  // The in-process client waits for a whole response, which an open stream never gives: ask the fan-out instead.
  const open = t.app.eventStreams.openCount();
  let answered: TestResponse | null = null;
  const pending = t.request(req.method, req.url, { ...req.options, auth }).then((res) => (answered = res));
  for (let waited = 0; answered === null && t.app.eventStreams.openCount() === open; waited += 10) {
    assert.ok(waited < 10_000, `a stream request neither answered nor opened within 10 s: ${req.url}`);
    await sleep(10);
  }
  if (answered !== null) return answered;
  await t.app.eventStreams.closeAll();
  await pending;
  return null;
}
