// The console's form errors (console/src/form-errors.ts) against the API's own refusals: each refusal a console
// form can meet is put next to the field it concerns, in words that do not repeat the API's field names, and
// what names no field of the form goes to its top. The rules match the server's messages by text, so a message
// reworded on the server fails here rather than falling back, unnoticed, to the API's wording in the console.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { explainError, type FieldMap } from '../../console/src/form-errors.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

/** The console's maps (connector-form.tsx with delivery-controls.tsx, members.tsx, service-accounts.tsx, invite.tsx). */
const CONNECTOR: FieldMap = {
  displayName: 'name',
  'httpConfig.url': 'url',
  'httpConfig.signatureSecret': 'secret',
  'httpConfig.headers': 'headers',
  labels: 'labels',
  events: 'events',
  'deliveryConfig.maxConcurrency': 'maxConcurrency',
  'deliveryConfig.maxRate': 'maxRate',
  'deliveryConfig.labelFilters': 'labelFilters',
  'deliveryConfig.paused': 'paused',
};
const MEMBER: FieldMap = { email: 'email', roles: 'role' };
const SERVICE_ACCOUNT: FieldMap = { displayName: 'name' };
const INVITE: FieldMap = { password: 'password', displayName: 'displayName' };

/** An error as the console's api() throws it (ApiError: the body's message and the status). */
function apiError(status: number, body: { error: string; error_description?: string }): Error {
  return Object.assign(new Error(body.error_description ?? body.error), { status });
}

let t: TestContext;
before(async () => {
  t = await createTestContext();
});
after(() => t.close());

async function explain(method: string, url: string, body: unknown, fields: FieldMap, auth?: null) {
  const res = await t.request(method, url, { body, auth });
  assert.ok(res.status >= 400, `${url} ${JSON.stringify(body)} was accepted`);
  return { ...explainError(apiError(res.status, res.body), fields), api: res.body.error as string };
}

describe('happy', () => {
  it('data connector refusals go to their field, in words', async () => {
    const url = `/v2/projects/${t.projectId}/dataconnectors`;
    const connector = (patch: Record<string, unknown>, http: Record<string, unknown> = {}) => ({
      type: 'HTTP_PUSH',
      displayName: 'x',
      ...patch,
      httpConfig: { url: 'https://hooks.example.org/in', ...http },
    });
    const cases: [unknown, string, RegExp][] = [
      [connector({}, { url: 'http://hooks.example.org/in' }), 'url', /^The URL must start with https:\/\//],
      [
        connector({}, { url: 'hooks.example.org' }),
        'url',
        /^Enter the full address of your endpoint, starting with https:\/\//,
      ],
      [connector({}, { url: '' }), 'url', /^Enter the full address/],
      [connector({}, { url: 'https://hooks.example.org/a b' }), 'url', /^The URL must not contain spaces/],
      [
        connector({}, { url: 'https://10.1.2.3/in' }),
        'url',
        /^This address cannot receive pushes \(10\.1\.2\.3 is a private address\)/,
      ],
      [connector({}, { url: `https://hooks.example.org/${'a'.repeat(2100)}` }), 'url', /^At most 2048 characters\.$/],
      [
        connector({}, { headers: { 'Content-Type': 'text/plain' } }),
        'headers',
        /^Content-Type is set by the service itself/,
      ],
      [connector({}, { headers: { 'a b': 'x' } }), 'headers', /^“a b” is not a valid header name/],
      [connector({}, { headers: { 'X-A': '1', 'x-a': '2' } }), 'headers', /is given twice/],
      [
        connector({}, { headers: { 'X-A': 'line\nbreak' } }),
        'headers',
        /^The value of X-A may hold only printable characters/,
      ],
      [
        connector({}, { headers: { 'X-A': 'v'.repeat(5000) } }),
        'headers',
        /^The value of X-A must be at most \d+ characters/,
      ],
      [connector({}, { signatureSecret: 's'.repeat(300) }), 'secret', /^At most 256 characters\.$/],
      [connector({ displayName: 'n'.repeat(300) }), 'name', /^At most 256 characters\.$/],
      [connector({ labels: ['a=b'] }), 'labels', /^The label key “a=b” must not contain '='\.$/],
      [connector({ events: ['nope'] }), 'events', /^“nope” is not an event type\.$/],
      [connector({ deliveryConfig: { maxConcurrency: 65 } }), 'maxConcurrency', /1 and 64|1 to 64/],
      [connector({ deliveryConfig: { maxRate: 20_000 } }), 'maxRate', /10,?000/],
      [connector({ deliveryConfig: { labelFilters: { 'a=b': '' } } }), 'labelFilters', /^The label key “a=b” must not/],
      [
        connector({ deliveryConfig: { labelFilters: { a: 'v'.repeat(1100) } } }),
        'labelFilters',
        /^The value of the label “a” must be at most/,
      ],
      [
        connector({
          deliveryConfig: { labelFilters: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, ''])) },
        }),
        'labelFilters',
        /^At most 100 label filters\.$/,
      ],
    ];
    for (const [body, field, text] of cases) {
      const e = await explain('POST', url, body, CONNECTOR);
      assert.equal(e.field, field, `${e.api} → field`);
      assert.match(e.text, text, `${e.api} → words`);
      assert.doesNotMatch(
        e.text,
        /httpConfig|displayName|signatureSecret|deliveryConfig/,
        `${e.api}: no API field names`,
      );
    }
  });

  it('member, service account and invitation refusals go to their field, in words', async () => {
    const members = `/v2/projects/${t.projectId}/members`;
    await t.request('POST', members, { body: { email: 'there@example.com', roles: ['roles/project.user'] } });
    const cases: [string, string, unknown, FieldMap, string | null, RegExp, null?][] = [
      ['POST', members, { email: 'nope', roles: ['roles/project.user'] }, MEMBER, 'email', /^Enter an e-mail address/],
      [
        'POST',
        members,
        { email: 'x@p.serviceaccount.sensorcloud.local', roles: ['roles/project.user'] },
        MEMBER,
        'email',
        /^No service account has the e-mail/,
      ],
      [
        'POST',
        members,
        { email: 'there@example.com', roles: ['roles/project.user'] },
        MEMBER,
        'email',
        /^This account is already a member/,
      ],
      ['POST', members, { email: 'new@example.com', roles: [] }, MEMBER, 'role', /^Choose a role\.$/],
      [
        'POST',
        `/v2/projects/${t.projectId}/serviceaccounts`,
        { displayName: 'n'.repeat(300) },
        SERVICE_ACCOUNT,
        'name',
        /^At most 256 characters\.$/,
      ],
      [
        'POST',
        '/v2/invites:accept',
        { token: 'x', password: 'short' },
        INVITE,
        'password',
        /^The password must have at least 12 characters\.$/,
        null,
      ],
      [
        'POST',
        '/v2/invites:accept',
        { token: 'x', password: 'long enough password' },
        INVITE,
        null,
        /^This invitation link no longer works/,
        null,
      ],
      ['POST', '/v2/invites:lookup', { token: 'x' }, INVITE, null, /^This invitation link no longer works/, null],
    ];
    for (const [method, url, body, fields, field, text, auth] of cases) {
      const e = await explain(method, url, body, fields, auth);
      assert.equal(e.field, field, `${e.api} → field`);
      assert.match(e.text, text, `${e.api} → words`);
    }
  });

  it('a permission, the last organization administrator and a message no rule knows go to the top of the form', async () => {
    const viewer = await t.createServiceAccount({ roles: ['roles/project.user'] });
    const forbidden = await t.request('POST', `/v2/projects/${t.projectId}/serviceaccounts`, {
      body: { displayName: 'x' },
      auth: viewer.auth,
    });
    assert.deepEqual(explainError(apiError(forbidden.status, forbidden.body), SERVICE_ACCOUNT), {
      field: null,
      text: 'Your role does not allow this: it needs the permission serviceaccount.create.',
    });

    const admins = (await t.request('GET', `/v2/organizations/${t.organizationId}/members`)).body.members;
    const user = admins.find((m: any) => m.accountType === 'USER');
    assert.equal((await t.request('DELETE', `/v2/${user.name}`)).status, 200);
    const self = admins.find((m: any) => m.accountType === 'SERVICE_ACCOUNT');
    const last = await explain('DELETE', `/v2/${self.name}`, undefined, {});
    assert.deepEqual(
      { field: last.field, text: last.text },
      {
        field: null,
        text: "This is the organization's last administrator and cannot be removed: add another administrator first.",
      },
    );

    assert.deepEqual(
      explainError(
        apiError(400, { error: 'project still has 1 device(s) and 0 data connector(s); remove them first' }),
      ),
      { field: null, text: 'Project still has 1 device(s) and 0 data connector(s); remove them first.' },
    );
    assert.deepEqual(explainError(apiError(400, { error: 'displayName must be a string' })), {
      field: null,
      text: 'displayName must be a string.',
    });
    assert.equal(
      explainError(new TypeError('Failed to fetch')).text,
      'The service could not be reached. Check that it is running, then try again.',
    );
    assert.deepEqual(explainError(new Error('The two passwords differ.')), {
      field: null,
      text: 'The two passwords differ.',
    });
  });
});
