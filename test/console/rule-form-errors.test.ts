// The rule form's and the contacts page's field errors (console/src/screens/rule-draft.ts, console/src/form-errors.ts)
// against the API's own refusals, in Node: a rule body as the form sends it (or as another client could), refused by
// the service, is put next to the control of the form it concerns (the `name` of an escalation level's action, the
// limits, the schedule's time zone …), in words without the API's field paths. The rules match the server's messages
// by text, so a message reworded on the server fails here rather than falling back, unnoticed, to the API's wording.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { explainError, SMTP_TEXT, type FieldMap } from '../../console/src/form-errors.ts';
import {
  type Draft,
  emptyDraft,
  fieldsOf,
  newAction,
  newLevel,
  readDraft,
} from '../../console/src/screens/rule-draft.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

let t: TestContext;
before(async () => {
  t = await createTestContext();
});
after(() => t.close());

/** An error as the console's api() throws it (ApiError: the body's message and the status). */
function apiError(status: number, body: { error: string }): Error {
  return Object.assign(new Error(body.error), { status });
}

async function explain(method: string, url: string, body: unknown, fields: FieldMap) {
  const res = await t.request(method, url, { body });
  assert.ok(res.status >= 400, `${url} ${JSON.stringify(body)} was accepted`);
  return { ...explainError(apiError(res.status, res.body), fields), api: res.body.error as string };
}

/** A draft with one webhook action at `url` and a range of 2 to 8 (the form's defaults otherwise). */
function webhookDraft(url = 'https://hooks.example.org/alerts'): Draft {
  const d = emptyDraft();
  const action = { ...newAction('WEBHOOK'), url };
  return { ...d, lower: '2', upper: '8', levels: [{ ...newLevel([action]) }] };
}

/** The body the form sends for a draft (it must pass the form's own checks). */
function bodyOf(d: Draft): Record<string, any> {
  const read = readDraft(d, null);
  assert.ok('body' in read, `the form refuses the draft: ${JSON.stringify(read)}`);
  return read.body;
}

describe('happy', () => {
  it('rule refusals go to the control of the form they concern, in words', async () => {
    const url = `/v2/projects/${t.projectId}/rules`;
    const base = webhookDraft();
    const fields = fieldsOf(base);
    const ok = bodyOf(base);
    const withWebhook = (webhook: Record<string, unknown>) => ({
      ...ok,
      escalationLevels: [
        {
          displayName: '',
          actions: [{ type: 'WEBHOOK', webhook: { url: 'https://hooks.example.org/a', ...webhook } }],
        },
      ],
    });
    const cases: [string, unknown, FieldMap, string, RegExp][] = [
      [
        "the form's default e-mail action on a service without SMTP",
        bodyOf({
          ...emptyDraft(),
          lower: '2',
          upper: '8',
          levels: [newLevel([{ ...newAction('EMAIL'), recipients: 'a@example.org' }])],
        }),
        fieldsOf(emptyDraft()),
        'l0a0-recipients',
        new RegExp(`^${SMTP_TEXT.replace(/[.()]/g, '\\$&')}$`),
      ],
      [
        'a webhook at a private address',
        bodyOf(webhookDraft('https://10.1.2.3/hook')),
        fields,
        'l0a0-url',
        /^This address cannot receive notifications \(10\.1\.2\.3 is a private address\)/,
      ],
      [
        'a plain-http webhook',
        withWebhook({ url: 'http://hooks.example.org/a' }),
        fields,
        'l0a0-url',
        /^The URL must start with https:\/\//,
      ],
      [
        'a header the service sets',
        withWebhook({ headers: { 'X-Sensorcloud-Alert-Transition': 'x' } }),
        fields,
        'l0a0-headers',
        /^X-Sensorcloud-Alert-Transition is set by the service itself/,
      ],
      [
        'a long secret',
        withWebhook({ signatureSecret: 's'.repeat(300) }),
        fields,
        'l0a0-secret',
        /^At most 256 characters\.$/,
      ],
      [
        'escalate after 0 s',
        { ...ok, escalationLevels: [{ ...ok.escalationLevels[0], escalateAfter: '0s' }] },
        fields,
        'l0-after',
        /^Enter a time from 1 second to 30 days\.$/,
      ],
      [
        'a trigger delay of over 30 days',
        { ...ok, triggerDelay: '2592001s' },
        fields,
        'triggerDelay',
        /^Enter a time of at most 30 days\.$/,
      ],
      [
        'an acknowledgement of over 30 days',
        { ...ok, unacknowledgesAfter: '9999999s' },
        fields,
        'unacknowledgesAfter',
        /^Enter a time of at most 30 days\.$/,
      ],
      [
        'limits the wrong way round',
        { ...ok, trigger: { field: 'temperature', range: { lower: 9, upper: 2, type: 'OUTSIDE' } } },
        fields,
        'lower',
        /^The lower limit must not be above the upper limit\.$/,
      ],
      [
        'no limit',
        { ...ok, trigger: { field: 'temperature', range: { type: 'OUTSIDE' } } },
        fields,
        'lower',
        /^Enter a lower limit, an upper limit or both\.$/,
      ],
      [
        'events in a row',
        { ...ok, trigger: { ...ok.trigger, triggerCount: 101 } },
        fields,
        'triggerCount',
        /^Enter a whole number from 1 to 100\.$/,
      ],
      [
        'a device that is not there',
        { ...ok, devices: ['nosuchdevice'] },
        fields,
        'devices',
        /^There is no device projects\/.*\/devices\/nosuchdevice in this project any more\.$/,
      ],
      [
        'an unknown time zone',
        { ...ok, schedule: { timezone: 'Mars/Olympus', slots: [] } },
        fields,
        'timezone',
        /^This time zone is not known to the service/,
      ],
      ['a long name', { ...ok, displayName: 'n'.repeat(300) }, fields, 'name', /^At most 256 characters\.$/],
      ['a bad label key', { ...ok, deviceLabels: { 'a=b': '' } }, fields, 'labels', /a=b/],
    ];
    for (const [what, body, map, field, text] of cases) {
      const e = await explain('POST', url, body, map);
      assert.equal(e.field, field, `${what}: ${e.api} → field`);
      assert.match(e.text, text, `${what}: ${e.api} → words`);
      assert.doesNotMatch(
        e.text,
        /escalationLevels|trigger\.\w|webhook\.\w|triggerDelay|unacknowledgesAfter/,
        `${what}: no API field names`,
      );
    }
  });

  it('contact and contact group refusals go to their field, in words', async () => {
    const contacts = `/v2/projects/${t.projectId}/contacts`;
    const groups = `/v2/organizations/${t.organizationId}/contactGroups`;
    const CONTACT = { displayName: 'displayName', email: 'email', phoneNumber: 'phoneNumber', contactGroup: 'group' };
    const GROUP = { displayName: 'groupName', description: 'description' };
    const cases: [string, unknown, FieldMap, string, RegExp][] = [
      [contacts, { email: 'nope' }, CONTACT, 'email', /^Enter an e-mail address, such as ada@example\.com\.$/],
      [
        contacts,
        { email: 'a@example.org', phoneNumber: '12 34' },
        CONTACT,
        'phoneNumber',
        /^Enter the number in international form/,
      ],
      [
        contacts,
        { email: 'a@example.org', contactGroup: `organizations/${t.organizationId}/contactGroups/nope` },
        CONTACT,
        'group',
        /nope/,
      ],
      [groups, { displayName: 'g'.repeat(300) }, GROUP, 'groupName', /^At most 256 characters\.$/],
      [
        groups,
        { displayName: 'g', description: 'd'.repeat(2000) },
        GROUP,
        'description',
        /^At most 1024 characters\.$/,
      ],
    ];
    for (const [url, body, map, field, text] of cases) {
      const e = await explain('POST', url, body, map);
      assert.equal(e.field, field, `${e.api} → field`);
      assert.match(e.text, text, `${e.api} → words`);
    }
  });
});
