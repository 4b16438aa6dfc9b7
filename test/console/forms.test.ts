// Console feedback in Chromium against a real `serve`: form errors in words next to the field they concern (the
// data connector, member, service account and invitation forms; checked before sending where obvious, the API's
// own refusals mapped to the field), messages that go when they stop applying (another project, the next action,
// an edit of the field in error), a role change that says it saved (or why not, putting the select back), the
// invitation page naming the e-mail, project and role (POST /v2/invites:lookup), the members and service-account
// tables inside a 390 px screen, and the API reference's request and response fields. Screenshots at 1280 and
// 390 px of every screen changed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
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
let projectId: string;
let otherProjectId: string;

before(async () => {
  [server, browser] = await Promise.all([startConsoleServer(), launchBrowser()]);
  projectId = server.boot.project.split('/')[1];
  const other = await server.api('POST', '/projects', {
    organization: server.boot.organization,
    displayName: 'Second site',
  });
  otherProjectId = other.name.split('/')[1];
  context = await newContext(browser);
  page = await context.newPage();
  await page.goto(`${server.url}/projects/${projectId}/members`);
  await signIn(page, server);
});
after(() => context?.close());

/** The text that describes a control (aria-describedby), and whether it is marked invalid. */
async function described(control: Locator): Promise<{ text: string; invalid: boolean }> {
  return control.evaluate((el) => ({
    text: (el.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .filter(Boolean)
      .map((id) => document.getElementById(id)?.textContent ?? '')
      .join(' '),
    invalid: el.getAttribute('aria-invalid') === 'true',
  }));
}

/** Waits until the control is marked invalid and its description includes `text`; returns the description. */
async function waitForFieldError(control: Locator, text: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const d = await described(control);
    if (d.invalid && d.text.includes(text)) return d.text;
    await control.page().waitForTimeout(100);
  }
  assert.fail(`no field error "${text}" on the control: ${JSON.stringify(await described(control))}`);
}

/** A screenshot of the viewport with `target` in view (beside the full-page one), for pages too long to look at whole. */
async function viewShot(target: Locator, name: string): Promise<void> {
  const path = await screenshot(target.page(), name);
  await target.scrollIntoViewIfNeeded();
  await target.evaluate((el) => window.scrollBy(0, el.getBoundingClientRect().top - 70));
  await target.page().screenshot({ path: path.replace(/\.png$/, '-view.png'), animations: 'disabled' });
}

async function memberByEmail(parent: string, email: string): Promise<any> {
  return (await server.api('GET', `/${parent}/members`)).members.find((m: any) => m.email === email);
}

describe('form errors, in words, next to the field', () => {
  it('data connector: an http:// URL is refused next to the URL field before anything is sent; the error goes when the URL is edited', async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/new`);
    await page.getByLabel('Name').fill('Plain hook');
    const url = page.getByLabel('Endpoint URL');
    await url.fill('http://example.org/hook');
    await page.getByRole('button', { name: 'Create connector' }).click();
    const text = await waitForFieldError(url, 'The URL must start with https://');
    assert.doesNotMatch(text, /httpConfig/, 'in words, not the API field name');
    assert.equal(await url.evaluate((el) => el === document.activeElement), true, 'the field in error has the focus');
    // Next to the field: the message sits in the URL field's own box, right under it.
    const [field, error] = [await url.boundingBox(), await page.locator('.field-error').first().boundingBox()];
    assert.ok(
      field && error && error.y >= field.y + field.height && error.y - (field.y + field.height) < 60,
      'under the URL field',
    );
    assert.equal(
      (await server.api('GET', `/projects/${projectId}/dataconnectors`)).dataConnectors.length,
      0,
      'nothing was created',
    );
    await screenshot(page, 'connector-form-error');
    await expectAccessible(page, 'connector form with an error');

    await url.pressSequentially('s', { delay: 10 }); // any edit of the field
    for (let i = 0; i < 50 && (await described(url)).invalid; i++) await page.waitForTimeout(100);
    assert.deepEqual(
      await described(url),
      { text: 'An https:// address that answers 2xx within 10 s.', invalid: false },
      'the error went with the edit',
    );
    assert.equal(await page.locator('.field-error').count(), 0);
  });

  it('data connector: the API refusing the address is shown next to the URL field, a reserved header next to the headers', async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/new`);
    const url = page.getByLabel('Endpoint URL');
    await url.fill('https://10.1.2.3/hook'); // a private address: only the API knows it is refused (127.0.0.0/8 is allowed here)
    await page.getByRole('button', { name: 'Create connector' }).click();
    const text = await waitForFieldError(url, 'This address cannot receive pushes');
    assert.match(text, /10\.1\.2\.3 is a private address/);
    assert.equal(await page.getByRole('alert').count(), 0, 'no message at the top: it concerns the URL');

    await url.fill('https://hooks.example.org/in');
    await page.getByRole('button', { name: 'Add header' }).click();
    await page.getByLabel('Header 1 name').fill('Content-Type');
    await page.getByLabel('Header 1 value').fill('text/plain');
    await page.getByRole('button', { name: 'Create connector' }).click();
    // The headers' group carries the description; its first input has the focus.
    const headers = page.getByRole('group', { name: 'Custom headers' });
    await headers
      .locator('.field-error')
      .filter({ hasText: 'Content-Type is set by the service itself and cannot be a custom header.' })
      .waitFor();
    assert.match((await described(headers)).text, /Content-Type is set by the service itself/);
    assert.equal(await page.getByLabel('Header 1 name').evaluate((el) => el === document.activeElement), true);
    await screenshot(page, 'connector-form-header-error');
    assert.equal(await url.getAttribute('aria-invalid'), null, 'the URL is fine now');
    assert.equal((await server.api('GET', `/projects/${projectId}/dataconnectors`)).dataConnectors.length, 0);
  });

  it('members: a malformed e-mail and an existing member are explained next to the e-mail field', async () => {
    await page.goto(`${server.url}/projects/${projectId}/members`);
    const email = page.getByLabel('E-mail of a user or service account');
    await email.fill('not-an-address');
    await page.getByRole('button', { name: 'Add member' }).click();
    await waitForFieldError(email, 'Enter an e-mail address, such as ada@example.com.');
    await server.api('POST', `/projects/${projectId}/members`, {
      email: 'member@example.com',
      roles: ['roles/project.user'],
    });
    await email.fill('member@example.com'); // already a member
    assert.equal((await described(email)).invalid, false, 'editing the e-mail cleared its error');
    await page.getByRole('button', { name: 'Add member' }).click();
    await waitForFieldError(email, 'This account is already a member');
    await screenshot(page, 'members-add-error');
  });

  it('service accounts: a missing name is asked for next to the name field', async () => {
    await page.goto(`${server.url}/projects/${projectId}/serviceaccounts`);
    await page.getByRole('button', { name: 'Create service account' }).click();
    await waitForFieldError(page.getByLabel('Name of the new service account'), 'Give the service account a name.');
  });
});

describe('messages that stop applying', () => {
  it('"added" goes when another project is chosen, and when the next action (a role change) succeeds', async () => {
    await page.goto(`${server.url}/projects/${projectId}/members`);
    await page.getByLabel('E-mail of a user or service account').fill('first@example.com');
    await page.getByRole('button', { name: 'Add member' }).click();
    const added = page.getByRole('status').filter({ hasText: 'first@example.com was invited' });
    await added.waitFor();

    // Another project's members: same screen, other data; the message was about the first project.
    await page.locator('.picker select').selectOption(otherProjectId);
    await page.waitForURL(new RegExp(`/projects/${otherProjectId}/members$`));
    await page.getByRole('heading', { name: 'Members' }).waitFor();
    await page.getByText('People and service accounts with a role in Second site').waitFor();
    assert.equal(await page.getByText('first@example.com was invited').count(), 0, 'gone on another project');

    await page.goBack();
    await page.waitForURL(new RegExp(`/projects/${projectId}/members$`));
    await page.getByRole('row', { name: /first@example\.com/ }).waitFor();
    assert.equal(await page.getByText('first@example.com was invited').count(), 0, 'not back either');

    await page.getByLabel('E-mail of a user or service account').fill('second@example.com');
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByText('second@example.com was invited').waitFor();
    await page
      .getByRole('row', { name: /first@example\.com/ })
      .getByLabel('Role of first@example.com')
      .selectOption('roles/project.admin');
    await page
      .getByRole('row', { name: /first@example\.com/ })
      .getByText('Saved: Project administrator.')
      .waitFor();
    assert.equal(await page.getByText('second@example.com was invited').count(), 0, 'the next action replaced it');
  });

  it('a connector notice goes when leaving the page and coming back', async () => {
    const c = await server.api('POST', `/projects/${projectId}/dataconnectors`, {
      type: 'HTTP_PUSH',
      displayName: 'Notice hook',
      httpConfig: { url: 'https://hooks.example.org/n' },
    });
    const id = c.name.split('/')[3];
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${id}`);
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('Disabled: its queue was dropped').waitFor();
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit data connector' }).waitFor();
    await page.goBack();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    assert.equal(await page.getByText('Disabled: its queue was dropped').count(), 0);
    await server.api('DELETE', `/projects/${projectId}/dataconnectors/${id}`);
  });
});

describe('role changes', () => {
  it('say they saved, and keep the table as the API has it', async () => {
    const email = 'role-change@example.com';
    await server.api('POST', `/projects/${projectId}/members`, { email, roles: ['roles/project.user'] });
    await page.goto(`${server.url}/projects/${projectId}/members`);
    const row = page.getByRole('row', { name: new RegExp(email) });
    const select = row.getByLabel(`Role of ${email}`);
    await select.selectOption('roles/project.developer');
    await row.getByRole('status').filter({ hasText: 'Saved: Project developer.' }).waitFor();
    assert.match(
      (await row.getByRole('status').textContent()) ?? '',
      /Earlier invite links stopped working/,
      'a pending member: its old links were revoked',
    );
    assert.deepEqual((await memberByEmail(`projects/${projectId}`, email)).roles, ['roles/project.developer']);
    assert.equal(await select.inputValue(), 'roles/project.developer');
    await screenshot(page, 'members-role-saved');

    // A change the API refuses (the member was removed meanwhile): the reason, and the select shows the saved role.
    const member = await memberByEmail(`projects/${projectId}`, email);
    await server.api('DELETE', `/${member.name}`);
    await select.selectOption('roles/project.admin');
    await row.getByRole('alert').filter({ hasText: 'Member not found' }).waitFor();
    assert.equal(await select.inputValue(), 'roles/project.developer', 'back to the role it had');
    assert.equal(await row.getByText('Saved:').count(), 0);
  });
});

describe('invitation page', () => {
  it('names the e-mail, the project and the role; a used link says it no longer works', async () => {
    const email = 'new.colleague@example.com';
    const m = await server.api('POST', `/projects/${projectId}/members`, { email, roles: ['roles/project.developer'] });
    const link = (await server.api('GET', `/${m.name}:getInviteUrl`)).inviteUrl as string;
    const project = await server.api('GET', `/projects/${projectId}`);
    for (const mobile of [true, false]) {
      const guest = await newContext(browser, { mobile });
      try {
        const g = await guest.newPage();
        await g.goto(`${server.url}${new URL(link).pathname}`);
        await g.getByRole('heading', { name: 'Accept your invitation' }).waitFor();
        await g.getByTestId('invite-email').waitFor();
        assert.equal(await g.getByTestId('invite-email').textContent(), email);
        const what = await g.locator('.invite-what').textContent();
        assert.match(what ?? '', new RegExp(`${project.displayName}\\s*as\\s*Project developer`));
        assert.match(what ?? '', /works once, until/);
        await screenshot(g, mobile ? 'invite-details-390' : 'invite-details');
        if (mobile) continue;
        await expectAccessible(g, 'invitation with its details');
        await g.getByLabel('Password', { exact: true }).fill('short');
        await g.getByRole('button', { name: 'Accept invitation' }).click();
        await waitForFieldError(g.getByLabel('Password', { exact: true }), 'at least 12 characters');
        await g.getByLabel('Password', { exact: true }).fill('a long enough password');
        await g.getByLabel('Repeat the password').fill('a different password');
        await g.getByRole('button', { name: 'Accept invitation' }).click();
        await waitForFieldError(g.getByLabel('Repeat the password'), 'The two passwords differ');
        await g.getByLabel('Repeat the password').fill('a long enough password');
        await g.getByRole('button', { name: 'Accept invitation' }).click();
        await g.getByText('Invitation accepted').waitFor();
        assert.match(
          (await g.locator('.card').textContent()) ?? '',
          new RegExp(`Sign in with ${email.replace(/\./g, '\\.')}`),
        );
        await g.goto(`${server.url}${new URL(link).pathname}`);
        await g.getByRole('alert').filter({ hasText: 'This invitation link no longer works' }).waitFor();
        assert.equal(await g.getByLabel('Password', { exact: true }).count(), 0, 'no form for a used link');
        await screenshot(g, 'invite-used');
      } finally {
        await guest.close();
      }
    }
  });
});

describe('narrow screens', () => {
  it('at 390 px the members, service-account and key tables, their controls and buttons stay on the screen', async () => {
    const sa = await server.api('POST', `/projects/${projectId}/serviceaccounts`, {
      displayName: 'a service account with a rather long name',
    });
    await server.api('POST', `/${sa.name}/keys`);
    await server.api('POST', `/projects/${projectId}/members`, {
      email: 'someone.with.a.long.address@example.com',
      roles: ['roles/project.user'],
    });
    for (const dark of [false, true]) {
      const mobile = await newContext(browser, { mobile: true, dark });
      try {
        const m = await mobile.newPage();
        await m.goto(`${server.url}/signin`);
        await signIn(m, server);
        const screens = [
          ['members', `/projects/${projectId}/members`],
          ['service-accounts', `/projects/${projectId}/serviceaccounts`],
          ['service-account-keys', `/${sa.name}`],
        ] as const;
        for (const [name, path] of screens) {
          await m.goto(`${server.url}${path}`);
          await m.locator('table tbody tr').first().waitFor();
          await screenshot(m, `${name}-table-390${dark ? '-dark' : ''}`);
          const controls = m.locator('table button, table select, table a');
          assert.ok((await controls.count()) >= 1, `${name}: controls in the table`);
          for (const box of await controls.evaluateAll((els) =>
            els.map((el) => {
              const r = el.getBoundingClientRect();
              return { what: `${el.tagName} ${el.textContent?.trim().slice(0, 30)}`, left: r.left, right: r.right };
            }),
          )) {
            assert.ok(
              box.left >= 0 && box.right <= 390,
              `${name}: ${box.what} spans ${box.left}–${box.right} px of 390`,
            );
          }
          const overflow = await m.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          );
          assert.ok(overflow <= 1, `${name} scrolls sideways by ${overflow} px`);
          const wrap = await m
            .locator('.table-wrap')
            .first()
            .evaluate((el) => el.scrollWidth - el.clientWidth);
          assert.ok(wrap <= 1, `${name}: the table scrolls inside its box by ${wrap} px`);
        }
        if (!dark) {
          // The invite link of a pending member fits too.
          await m.goto(`${server.url}/projects/${projectId}/members`);
          const row = m.getByRole('row', { name: /someone\.with\.a\.long\.address/ });
          await row.getByRole('button', { name: 'Invite link' }).click();
          await row.locator('.invite-link code').waitFor();
          const overflow = await m.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          );
          assert.ok(overflow <= 1, `members with an invite link scrolls sideways by ${overflow} px`);
          await screenshot(m, 'members-390-invite-link');
          await row
            .getByLabel('Role of someone.with.a.long.address@example.com')
            .selectOption('roles/project.developer');
          await row.getByText('Saved: Project developer.').waitFor();
          await screenshot(m, 'members-390-role-saved');
          await expectAccessible(m, 'members at 390 px');
          // Errors next to their fields fit too.
          await m.getByLabel('E-mail of a user or service account').fill('someone.with.a.long.address@example.com');
          await m.getByRole('button', { name: 'Add member' }).click();
          await waitForFieldError(
            m.getByLabel('E-mail of a user or service account'),
            'This account is already a member',
          );
          await screenshot(m, 'members-390-add-error');
          await m.goto(`${server.url}/projects/${projectId}/dataconnectors/new`);
          await m.getByLabel('Endpoint URL').fill('http://example.org/hook');
          await m.getByRole('button', { name: 'Create connector' }).click();
          await waitForFieldError(m.getByLabel('Endpoint URL'), 'The URL must start with https://');
          await screenshot(m, 'connector-form-error-390');
          const overflow2 = await m.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          );
          assert.ok(overflow2 <= 1, `the connector form with an error scrolls sideways by ${overflow2} px`);
        }
      } finally {
        await mobile.close();
      }
    }
  });
});

describe('API reference', () => {
  it('shows the request and response fields of an operation, folded until opened', async () => {
    await page.goto(`${server.url}/docs/api`);
    const op = page.locator('[data-operation="createDataConnector"]');
    await op.waitFor();
    const shapes = op.locator('details');
    assert.equal(await shapes.getAttribute('open'), null, 'folded by default');
    assert.equal(await op.getByText('httpConfig', { exact: true }).first().isVisible(), false);
    await screenshot(page, 'api-reference-folded');
    await shapes.locator('summary').click();
    const body = op.locator('.shape').first();
    await body.getByText('httpConfig', { exact: true }).waitFor();
    const text = await body.textContent();
    assert.match(text ?? '', /httpConfig\s*object/);
    // url is nested under httpConfig (in its own list), with its description.
    const nested = body.locator('.schema .schema').first();
    assert.match((await nested.textContent()) ?? '', /url\s*string.*https:\/\/ endpoint/);
    assert.match(text ?? '', /events\s*list of string/);
    const response = op.locator('.shape').nth(1);
    assert.match((await response.textContent()) ?? '', /createTime\s*string/);

    // Required marks: addProjectMember needs email and roles.
    const add = page.locator('[data-operation="addProjectMember"]');
    await add.locator('summary').click();
    assert.match((await add.locator('.shape').first().textContent()) ?? '', /email\s*string\s*required/);
    await viewShot(op, 'api-reference-fields');
    await expectAccessible(page, 'API reference with fields open');

    const mobile = await newContext(browser, { mobile: true });
    try {
      const m = await mobile.newPage();
      await m.goto(`${server.url}/signin`);
      await signIn(m, server);
      await m.goto(`${server.url}/docs/api`);
      const mop = m.locator('[data-operation="createDataConnector"]');
      await mop.locator('summary').click();
      await mop.locator('.shape').first().getByText('httpConfig', { exact: true }).waitFor();
      const overflow = await m.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      assert.ok(overflow <= 1, `the API reference scrolls sideways by ${overflow} px`);
      await viewShot(mop, 'api-reference-fields-390');
    } finally {
      await mobile.close();
    }
  });
});
