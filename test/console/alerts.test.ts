// Console: notification rules and alerts (extensions §X5) in Chromium against a real `serve` with a loopback SMTP
// relay and HTTPS receiver. A freezer alarm set up in the console from scratch: a contact group and a contact, then a
// rule in the form (temperature outside −25…−15 °C on the devices labelled `freezer`, e-mail to an address and the
// group plus a webhook, a second level); an out-of-range reading published through the API raises an alert that
// appears live (the navigation's badge and the alerts page, no reload), the e-mail and the webhook arrive, it is
// acknowledged, and an in-range reading resolves it, live. The device page lists it and marks the reading that
// triggered it. A refusal of the API is shown at its field; a project user sees no rule editing but acknowledges and
// resolves. Screenshots at 1280 and 390 px.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { startSmtpServer, type SmtpTestServer } from '../alerts/smtp-server.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { waitFor } from '../helpers/until.ts';
import {
  expectAccessible,
  launchBrowser,
  newContext,
  screenshot,
  signIn,
  startConsoleServer,
  type ConsoleServer,
} from '../helpers/console-browser.ts';

let server: ConsoleServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let receiver: Receiver;
let smtp: SmtpTestServer;
let projectId: string;
let deviceId: string;
let ruleId = '';
let alertId = '';

const RULE_NAME = 'Freezer 4 too warm';
const publish = (value: number) =>
  server.api('POST', `/projects/${projectId}/devices/${deviceId}:publish`, { temperature: { value } });
const alerts = async () => (await server.api('GET', `/projects/${projectId}/alerts`)).alerts as any[];
const transitions = () => receiver.requests.map((r) => r.headers['x-sensorcloud-alert-transition']);

/** Waits until the control is marked invalid and the text it is described by includes `text`. */
async function waitForFieldError(control: Locator, text: string): Promise<string> {
  let last = '';
  for (let i = 0; i < 100; i++) {
    const d = await control.evaluate((el) => ({
      text: (el.getAttribute('aria-describedby') ?? '')
        .split(' ')
        .filter(Boolean)
        .map((id) => document.getElementById(id)?.textContent ?? '')
        .join(' '),
      invalid: el.getAttribute('aria-invalid') === 'true',
    }));
    if (d.invalid && d.text.includes(text)) return d.text;
    last = JSON.stringify(d);
    await control.page().waitForTimeout(100);
  }
  assert.fail(`no field error "${text}" on the control: ${last}`);
}

/** The number on the navigation's Alerts entry ('' when it shows none). */
async function badge(p: Page): Promise<string> {
  // One read with a short wait: counting first and then reading raced with a re-render that removed the badge
  // in between, and the read then waited 20 s for it.
  try {
    return (await p.getByTestId('open-alerts').textContent({ timeout: 200 })) ?? '';
  } catch {
    return '';
  }
}

async function waitForBadge(p: Page, want: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await badge(p)) === want) return;
    await p.waitForTimeout(100);
  }
  assert.fail(`the Alerts badge shows "${await badge(p)}", not "${want}"`);
}

before(async () => {
  [browser, receiver, smtp] = await Promise.all([launchBrowser(), startReceiver(), startSmtpServer()]);
  server = await startConsoleServer({
    SENSORCLOUD_SMTP_URL: smtp.url(),
    SENSORCLOUD_SMTP_FROM: 'alerts@sensorcloud.example',
  });
  projectId = server.boot.project.split('/')[1];
  const device = await server.api('POST', `/projects/${projectId}/devices`, {
    type: 'temperature',
    labels: { name: 'Freezer 4', freezer: '', room: 'kitchen' },
  });
  deviceId = device.name.split('/')[3];
  await server.api('POST', `/projects/${projectId}/devices`, { type: 'temperature', labels: { name: 'Office' } });
  // Half an hour of readings, warming up, before any rule exists: the device's chart has a history.
  const now = Date.now();
  for (const [i, value] of [-19.2, -19, -18.6, -18.1, -17.5, -16.9, -16.2, -15.6].entries())
    await server.api('POST', `/projects/${projectId}/devices/${deviceId}:publish`, {
      temperature: { value, updateTime: new Date(now - (8 - i) * 4 * 60_000).toISOString() },
    });
  context = await newContext(browser);
  page = await context.newPage();
  await page.goto(`${server.url}/projects/${projectId}/contacts`);
  await signIn(page, server);
});
after(async () => {
  await context?.close();
  await receiver?.close();
  await smtp?.close();
});

describe('happy', () => {
  it('adds a contact group and a contact on the Contacts page', async () => {
    await page.getByLabel('Group name').fill('Kitchen staff');
    await page.getByLabel('Description').fill('Whoever is on shift');
    await page.getByRole('button', { name: 'Add group' }).click();
    await page.getByRole('cell', { name: 'Kitchen staff', exact: true }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Kari Nordmann');
    await page.getByLabel('E-mail').fill('Kari@Example.org');
    await page.getByLabel('Phone (optional)').fill('+47 987 65 432');
    await page.getByLabel('Group', { exact: true }).selectOption({ label: 'Kitchen staff' });
    await page.getByRole('button', { name: 'Add contact' }).click();
    await page.getByRole('cell', { name: 'kari@example.org', exact: true }).waitFor();
    const [contact] = (await server.api('GET', `/projects/${projectId}/contacts`)).contacts;
    assert.equal(contact.displayName, 'Kari Nordmann');
    assert.equal(contact.phoneNumber, '+4798765432');
    assert.match(contact.contactGroup, /^organizations\/[^/]+\/contactGroups\/[^/]+$/);
    // The group's count follows.
    await page.getByRole('row', { name: /Kitchen staff.*Whoever is on shift.*1/ }).waitFor();
    await screenshot(page, 'contacts');
    await expectAccessible(page, 'contacts');
  });

  it('creates a freezer rule in the form: a range, labels, e-mail and webhook, a second level', async () => {
    await page.locator('nav.sidenav').getByRole('link', { name: 'Rules' }).click();
    await page.getByText('No rules yet.').waitFor();
    await page.getByText('Create one').waitFor();
    await page.getByRole('link', { name: 'New rule' }).first().click();
    await page.getByLabel('Name', { exact: true }).fill(RULE_NAME);
    assert.equal(await page.getByLabel('Watch').inputValue(), 'temperature');
    assert.equal(await page.getByLabel('Alert when the value is').inputValue(), 'OUTSIDE');
    await page.getByLabel('Lower limit (°C)').fill('-25');
    await page.getByLabel('Upper limit (°C)').fill('-15');
    await page.getByLabel('Devices with labels').check();
    await page.getByLabel('Label 1 key').fill('freezer');
    await page.getByLabel('Level 1 name').fill('Kitchen staff');
    await page.getByLabel('Recipients').fill('chef@example.org');
    await page.getByLabel('Kitchen staff (1)').check();
    await page.getByRole('button', { name: 'Add webhook' }).first().click();
    await page.getByLabel('Webhook URL').fill(`${receiver.url}?level=1`);
    await page.getByLabel('Webhook secret').fill('s3cret-alerts');
    await page.getByRole('button', { name: 'Add escalation level' }).click();
    await page.getByLabel('Level 2 name').fill('Facilities');
    await page.getByLabel('Webhook URL').nth(1).fill(`${receiver.url}?level=2`);
    assert.equal(await page.getByLabel('Escalate to level 2 after', { exact: true }).inputValue(), '1');
    assert.equal(
      await page.getByTestId('rule-preview').textContent(),
      'Alert on devices labelled freezer when temperature outside −25 to −15\u00a0°C.',
    );
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await screenshot(page, 'rule-form');
    await expectAccessible(page, 'rule form');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.waitForURL(/\/rules\/[0-9a-v]{20}$/);
    ruleId = page.url().split('/').pop()!;
    const rule = await server.api('GET', `/projects/${projectId}/rules/${ruleId}`);
    const group = (await server.api('GET', `/${server.boot.organization}/contactGroups`)).contactGroups[0];
    assert.equal(rule.displayName, RULE_NAME);
    assert.equal(rule.enabled, true);
    assert.deepEqual(rule.devices, []);
    assert.deepEqual(rule.deviceLabels, { freezer: '' });
    assert.deepEqual(rule.trigger.range, { lower: -25, upper: -15, type: 'OUTSIDE', filter: null });
    assert.equal(rule.trigger.field, 'temperature');
    assert.equal(rule.schedule, null);
    assert.equal(rule.triggerDelay, null);
    assert.equal(rule.resolvedNotifications, true);
    assert.equal(rule.escalationLevels.length, 2);
    const [first, second] = rule.escalationLevels;
    assert.equal(first.displayName, 'Kitchen staff');
    assert.equal(first.escalateAfter, '3600s');
    assert.deepEqual(
      first.actions.map((a: any) => a.type),
      ['EMAIL', 'WEBHOOK'],
    );
    assert.deepEqual(first.actions[0].email.recipients, ['chef@example.org']);
    assert.deepEqual(first.actions[0].email.contactGroups, [group.name]);
    assert.match(first.actions[0].email.subject, /\$rule/);
    assert.deepEqual(first.actions[1].webhook, {
      url: `${receiver.url}?level=1`,
      signatureSecret: 's3cret-alerts',
      headers: {},
    });
    assert.equal(second.displayName, 'Facilities');
    assert.equal(second.escalateAfter, null);
    assert.equal(second.actions[0].webhook.url, `${receiver.url}?level=2`);
    // The rule's page says it in words.
    assert.equal(await page.getByTestId('rule-trigger').textContent(), 'temperature outside −25 to −15\u00a0°C');
    await page.getByText('Escalates to level 2 after 1 h without an acknowledgement.').waitFor();
    await screenshot(page, 'rule');
    await expectAccessible(page, 'rule');
    // Two more rules, through the API, for the list: a door left open out of hours, and a failing data connector.
    const email = (to: string) => [{ actions: [{ type: 'EMAIL', email: { recipients: [to], subject: '$rule' } }] }];
    await server.api('POST', `/projects/${projectId}/rules`, {
      displayName: 'Cold room door left open',
      trigger: { field: 'contact', contact: 'OPEN' },
      triggerDelay: '600s',
      schedule: {
        timezone: 'Europe/Oslo',
        inverse: true,
        slots: [
          {
            days: ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday'],
            times: [{ start: { hour: 8, minute: 0 }, end: { hour: 17, minute: 0 } }],
          },
        ],
      },
      escalationLevels: email('facilities@example.org'),
    });
    await server.api('POST', `/projects/${projectId}/rules`, {
      displayName: 'Data connector failing',
      enabled: false,
      trigger: { field: 'dataConnector' },
      escalationLevels: email('ops@example.org'),
    });
    await page.getByRole('link', { name: '← Rules' }).click();
    const row = page.getByRole('row', { name: new RegExp(RULE_NAME) });
    await row.waitFor();
    assert.match(
      (await row.textContent()) ?? '',
      /temperature outside −25 to −15\u00a0°C.*devices labelled freezer.*e-mail, webhook · 2\u00a0levels/,
    );
    await screenshot(page, 'rules');
    await expectAccessible(page, 'rules');
  });

  it('an out-of-range reading raises an alert: the badge and the list show it live, e-mail and webhook arrive', async () => {
    await page.locator('nav.sidenav').getByRole('link', { name: 'Alerts' }).click();
    await page.getByText('No alerts yet').waitFor();
    assert.equal(await badge(page), '');
    await publish(-12.5);
    // No reload: the stream's alertChanged event brings it.
    await waitForBadge(page, '1');
    const row = page.locator('tr.alert-row');
    await row.getByRole('link', { name: 'Freezer 4', exact: true }).waitFor(); // the device by its name
    assert.match((await row.textContent()) ?? '', new RegExp(`Triggered.*${RULE_NAME}.*Freezer 4.*−12.5\u00a0°C`));
    assert.equal(await page.getByRole('link', { name: /^Alerts\W+1 open$/ }).count(), 1);
    [alertId] = (await alerts()).map((a) => a.name.split('/').pop());
    const [hook] = await receiver.waitFor(1, 20_000);
    assert.equal(hook!.path, '/hook?level=1');
    assert.equal(hook!.headers['x-sensorcloud-alert-transition'], 'TRIGGERED');
    assert.ok(hook!.headers['x-service-signature'], 'signed with the secret');
    assert.equal(JSON.parse(hook!.body.toString('utf8')).alert.lastValue, -12.5);
    const mail = await waitFor('the e-mail', () => smtp.messages[0], 20_000);
    assert.deepEqual([...mail.rcptTo].sort(), ['chef@example.org', 'kari@example.org']);
    assert.match(mail.subject, new RegExp(`TRIGGERED: ${RULE_NAME}, Freezer 4 at -12.5`));
    await screenshot(page, 'alerts');
    await expectAccessible(page, 'alerts');
  });

  it("the alert's page lists its notifications; Acknowledge, then an in-range reading resolves it live", async () => {
    await page.getByRole('link', { name: RULE_NAME }).click();
    await page.waitForURL(new RegExp(`/alerts/${alertId}$`));
    // Both notifications are sent; the page reads the alert again while one is still being sent.
    const table = page.locator('table.notifications');
    await table.waitFor();
    for (let i = 0; i < 100; i++) {
      if ((await table.getByText('Sent', { exact: true }).count()) === 2) break;
      await page.waitForTimeout(200);
    }
    assert.equal(await table.getByText('Sent', { exact: true }).count(), 2);
    assert.match((await table.textContent()) ?? '', /E-mail.*chef@example\.org, kari@example\.org/);
    assert.match((await table.textContent()) ?? '', /Webhook.*\/hook\?level=1/);
    await page.getByTestId('last-value').filter({ hasText: '°C' }).waitFor(); // with its unit once the rule is read
    assert.equal(await page.getByTestId('last-value').textContent(), '−12.5\u00a0°C');
    await screenshot(page, 'alert');
    await expectAccessible(page, 'alert');

    await page.getByRole('button', { name: 'Acknowledge' }).click();
    await page.getByText('Acknowledged: escalation stops.').waitFor();
    await page.getByText(`by ${server.boot.user.email}`).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Acknowledge' }).count(), 0);
    const acked = await server.api('GET', `/projects/${projectId}/alerts/${alertId}`);
    assert.equal(acked.state, 'ACKNOWLEDGED');
    assert.equal(acked.acknowledgedBy, server.boot.user.email);
    assert.equal(await badge(page), '1', 'an acknowledged alert is still open');

    await publish(-18);
    await page.getByTestId('alert-state').filter({ hasText: 'Resolved' }).waitFor();
    await waitForBadge(page, '');
    assert.equal(await page.getByRole('button', { name: 'Resolve' }).count(), 0);
    await waitFor('the resolved webhook', () => (transitions().includes('RESOLVED') ? true : undefined), 20_000);
    assert.equal((await server.api('GET', `/projects/${projectId}/alerts/${alertId}`)).state, 'RESOLVED');
    await screenshot(page, 'alert-resolved');
  });

  it("the device page lists the device's alerts and marks the reading that triggered one", async () => {
    await page.goto(`${server.url}/projects/${projectId}/devices/${deviceId}`);
    const card = page.getByRole('region', { name: 'Alerts' });
    await card.locator('tr.alert-row').filter({ hasText: RULE_NAME }).waitFor();
    assert.match((await card.textContent()) ?? '', new RegExp(`Resolved.*${RULE_NAME}.*−12.5\u00a0°C`));
    const mark = page.getByTestId('alert-mark');
    await mark.waitFor();
    assert.equal(await mark.textContent(), `⚠ triggered ${RULE_NAME}`);
    // The marked row is the reading of -12.5 °C.
    assert.match((await page.locator('tr.alert-event').textContent()) ?? '', /-12\.5 °C/);
    await page.locator('.chart canvas').first().waitFor();
    await page.getByText('alert triggered (1)').waitFor();
    await screenshot(page, 'device-alerts');
    await expectAccessible(page, 'device with alerts');
  });

  it('the enabled switch in the list turns a rule off and on', async () => {
    await page.goto(`${server.url}/projects/${projectId}/rules`);
    const toggle = page.getByRole('switch', { name: `${RULE_NAME} enabled` });
    await toggle.click();
    await waitFor('the rule disabled', async () =>
      (await server.api('GET', `/projects/${projectId}/rules/${ruleId}`)).enabled === false ? true : undefined,
    );
    await toggle.click();
    await waitFor('the rule enabled', async () =>
      (await server.api('GET', `/projects/${projectId}/rules/${ruleId}`)).enabled ? true : undefined,
    );
  });
});

describe('refusals', () => {
  it("the API's refusal of a webhook address is shown under the webhook's URL, in words", async () => {
    const before = (await server.api('GET', `/projects/${projectId}/rules`)).rules.length;
    await page.goto(`${server.url}/projects/${projectId}/rules/new`);
    await page.getByLabel('Lower limit (°C)').fill('2');
    await page.getByLabel('Upper limit (°C)').fill('8');
    await page.getByRole('button', { name: 'Remove action 1.1 (e-mail)' }).click();
    // Checked before sending: a level without actions.
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.getByText('Add an e-mail or a webhook to level 1').waitFor();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByLabel('Webhook URL').fill('https://10.1.2.3/hook');
    await page.getByRole('button', { name: 'Create rule' }).click();
    const text = await waitForFieldError(page.getByLabel('Webhook URL'), 'This address cannot receive notifications');
    assert.match(text, /10\.1\.2\.3 is a private address/);
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute('name')),
      'l0a0-url',
      'the field has the focus',
    );
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await screenshot(page, 'rule-form-error');
    // Editing the field clears its error; limits the wrong way round are caught before sending.
    await page.getByLabel('Webhook URL').fill('https://hooks.example.org/in');
    assert.equal(await page.getByLabel('Webhook URL').getAttribute('aria-invalid'), null);
    await page.getByLabel('Lower limit (°C)').fill('9');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await waitForFieldError(page.getByLabel('Lower limit (°C)'), 'The lower limit must not be above the upper limit.');
    assert.equal((await server.api('GET', `/projects/${projectId}/rules`)).rules.length, before);
  });
});

describe('a project user', () => {
  it('reads rules without editing them, and acknowledges and resolves alerts', async () => {
    const email = 'cook@example.com';
    const password = 'cook-password-123';
    const member = await server.api('POST', `/projects/${projectId}/members`, {
      email,
      roles: ['roles/project.user'],
    });
    const { inviteUrl } = await server.api('GET', `/${member.name}:getInviteUrl`);
    const res = await fetch(`${server.url}/v2/invites:accept`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: inviteUrl.split('/').pop(), password }),
    });
    assert.equal(res.status, 200, await res.text());
    const viewer = await newContext(browser);
    try {
      const v = await viewer.newPage();
      await v.goto(`${server.url}/projects/${projectId}/rules`);
      await signIn(v, server, email, password);
      await v.getByText(/Your role does not include device\.update/).waitFor();
      await v.getByRole('row', { name: new RegExp(RULE_NAME) }).waitFor();
      assert.equal(await v.getByRole('link', { name: 'New rule' }).count(), 0);
      assert.equal(await v.getByRole('switch').count(), 0);
      await v.getByRole('link', { name: RULE_NAME }).click();
      await v.getByTestId('rule-trigger').waitFor();
      await v.getByText(/Editing and deleting rules is not offered/).waitFor();
      assert.equal(await v.getByRole('link', { name: 'Edit' }).count(), 0);
      assert.equal(await v.getByRole('button', { name: 'Delete' }).count(), 0);
      await v.goto(`${server.url}/projects/${projectId}/rules/new`);
      await v.getByText(/Creating and changing rules is not offered/).waitFor();
      assert.equal(await v.getByRole('button', { name: 'Create rule' }).count(), 0);

      // A new alert: the user acknowledges it, then resolves it.
      await v.goto(`${server.url}/projects/${projectId}/alerts?state=TRIGGERED`);
      await v.getByText('No alert matches these filters.').waitFor();
      await publish(-9);
      await waitForBadge(v, '1');
      await v.locator('tr.alert-row').first().locator('td.stack-title a').click();
      await v.getByRole('button', { name: 'Acknowledge' }).click();
      await v.getByText(`by ${email}`).waitFor();
      await v.getByRole('button', { name: 'Resolve' }).click();
      await v.getByTestId('alert-state').filter({ hasText: 'Resolved' }).waitFor();
      await waitForBadge(v, '');
      const newest = (await alerts())[0];
      assert.equal(newest.state, 'RESOLVED');
      assert.equal(newest.acknowledgedBy, email);
    } finally {
      await viewer.close();
    }
  });
});

describe('narrow screens', () => {
  it('at 390 px the rules, the form, the alerts and an alert stay on the screen', async () => {
    for (const dark of [false, true]) {
      const mobile = await newContext(browser, { mobile: true, dark });
      try {
        const m = await mobile.newPage();
        await m.goto(`${server.url}/projects/${projectId}/alerts`);
        await signIn(m, server);
        const suffix = `-390${dark ? '-dark' : ''}`;
        const noSideways = async (what: string) => {
          const overflow = await m.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          );
          assert.ok(overflow <= 1, `${what} scrolls sideways by ${overflow} px`);
        };
        await m.locator('tr.alert-row').first().waitFor();
        await screenshot(m, `alerts${suffix}`);
        await noSideways('the alerts');
        await m.goto(`${server.url}/projects/${projectId}/alerts/${alertId}`);
        await m.locator('table.notifications').waitFor();
        await screenshot(m, `alert${suffix}`);
        await noSideways('an alert');
        await m.goto(`${server.url}/projects/${projectId}/rules`);
        await m.getByRole('row', { name: new RegExp(RULE_NAME) }).waitFor();
        await screenshot(m, `rules${suffix}`);
        await noSideways('the rules');
        await m.goto(`${server.url}/projects/${projectId}/rules/${ruleId}/edit`);
        await m.getByLabel('Upper limit (°C)').waitFor();
        await screenshot(m, `rule-form${suffix}`);
        await noSideways('the rule form');
        await m.goto(`${server.url}/projects/${projectId}/contacts`);
        await m.getByRole('cell', { name: 'kari@example.org', exact: true }).waitFor();
        await screenshot(m, `contacts${suffix}`);
        await noSideways('the contacts');
      } finally {
        await mobile.close();
      }
    }
  });
});

describe('editing', () => {
  it('edits the rule: the form reads it back as written, and a save keeps what it did not change', async () => {
    await page.goto(`${server.url}/projects/${projectId}/rules/${ruleId}/edit`);
    await page.getByLabel('Upper limit (°C)').waitFor();
    assert.equal(await page.getByLabel('Lower limit (°C)').inputValue(), '-25');
    assert.equal(await page.getByLabel('Webhook secret').first().inputValue(), 's3cret-alerts');
    await page.getByLabel('Upper limit (°C)').fill('-16');
    await page.getByLabel('For at least', { exact: true }).fill('5');
    // Meanwhile someone else renames the rule: the save sends only what the form changed, so the new name stays.
    await server.api('PATCH', `/projects/${projectId}/rules/${ruleId}?update_mask=displayName`, {
      displayName: 'Freezer too warm (renamed)',
    });
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(new RegExp(`/rules/${ruleId}$`));
    const rule = await server.api('GET', `/projects/${projectId}/rules/${ruleId}`);
    assert.equal(rule.displayName, 'Freezer too warm (renamed)');
    assert.deepEqual(rule.trigger.range, { lower: -25, upper: -16, type: 'OUTSIDE', filter: null });
    assert.equal(rule.triggerDelay, '300s');
    assert.equal(rule.escalationLevels[0].actions[1].webhook.signatureSecret, 's3cret-alerts');
    assert.deepEqual(rule.deviceLabels, { freezer: '' });
    assert.deepEqual(rule.escalationLevels[0].actions[0].email.contactGroups.length, 1);
  });

  it('chosen devices and a weekly schedule; a rule on a state', async () => {
    await page.goto(`${server.url}/projects/${projectId}/rules/${ruleId}/edit`);
    await page.getByLabel('Chosen devices').check();
    await page.getByRole('checkbox', { name: /Freezer 4/ }).check();
    // The labels chosen before stay, shown as "And with these labels".
    assert.equal(await page.getByLabel('Label 1 key').inputValue(), 'freezer');
    await page.getByText('Schedule', { exact: true }).click();
    await page.getByRole('switch', { name: 'Only evaluate events at these times' }).check();
    await page.getByLabel('Time zone').selectOption('Europe/Oslo');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(new RegExp(`/rules/${ruleId}$`));
    let rule = await server.api('GET', `/projects/${projectId}/rules/${ruleId}`);
    assert.deepEqual(rule.devices, [`projects/${projectId}/devices/${deviceId}`]);
    assert.deepEqual(rule.deviceLabels, { freezer: '' });
    assert.deepEqual(rule.schedule, {
      timezone: 'Europe/Oslo',
      inverse: false,
      slots: [
        {
          days: ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday'],
          times: [{ start: { hour: 8, minute: 0 }, end: { hour: 17, minute: 0 } }],
        },
      ],
    });
    await page.getByText('Mon–Fri 08:00–17:00 (Europe/Oslo)').waitFor();

    // Another rule: a door left open, on every device, from the state choice.
    await page.goto(`${server.url}/projects/${projectId}/rules/new`);
    await page.getByLabel('Watch').selectOption('contact');
    assert.equal(await page.getByLabel('Alert on').inputValue(), 'OPEN');
    await page.getByRole('button', { name: 'Remove action 1.1 (e-mail)' }).click();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByLabel('Webhook URL').fill(receiver.url);
    assert.equal(await page.getByTestId('rule-preview').textContent(), 'Alert on every device when door open.');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.waitForURL(/\/rules\/[0-9a-v]{20}$/);
    rule = await server.api('GET', `/projects/${projectId}/rules/${page.url().split('/').pop()}`);
    assert.equal(rule.trigger.field, 'contact');
    assert.equal(rule.trigger.contact, 'OPEN');
    assert.equal(rule.trigger.range, null);
  });
});
