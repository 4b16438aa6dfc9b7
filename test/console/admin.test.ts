// Console screens 1, 2, 7, 8 and 9 in Chromium against a real `serve`: sign-in (wrong password, HttpOnly
// session, reload, expiry and return, sign-out), projects (create, rename, a refused delete with the API's
// reason), service accounts and a key whose secret is shown once, members (add by e-mail, change a role, an
// invitation accepted on the invite page), a project user who is offered no create or delete controls, the API
// reference and the error page; axe-core on every screen, and screenshots at 1280 px and at 390 px (dark).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createAccessTokenSigner } from '../../src/auth/access-tokens.ts';
import {
  expectAccessible,
  launchBrowser,
  newContext,
  screenshot,
  signIn,
  startConsoleServer,
  type ConsoleServer,
} from '../helpers/console-browser.ts';

const VIEWER = 'viewer@example.com';
const VIEWER_PASSWORD = 'correct horse battery';

let server: ConsoleServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let projectId: string;
let organizationId: string;

before(async () => {
  [server, browser] = await Promise.all([startConsoleServer(), launchBrowser()]);
  projectId = server.boot.project.split('/')[1];
  organizationId = server.boot.organization.split('/')[1];
  context = await newContext(browser);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  page = await context.newPage();
});
after(() => context?.close());

describe('sign-in and session', () => {
  it('a wrong password gives a clear message; the bootstrap admin signs in and lands where they were going', async () => {
    await page.goto(`${server.url}/projects/${projectId}/members`);
    await page.waitForURL(/\/signin\?next=%2Fprojects%2F/);
    await screenshot(page, 'signin');
    await expectAccessible(page, 'sign-in');
    // Keyboard only: Tab reaches the e-mail, the password and the button, in that order.
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      order.push(
        await page.evaluate(() => {
          const el = document.activeElement as HTMLElement;
          return el.id
            ? (document.querySelector(`label[for="${el.id}"]`)?.textContent ?? el.tagName)
            : (el.textContent ?? el.tagName);
        }),
      );
    }
    assert.deepEqual(order, ['E-mail', 'Password', 'Sign in']);
    await signIn(page, server, server.boot.user.email, 'not the password').catch(() => undefined);
    await page.getByRole('alert').filter({ hasText: 'Wrong e-mail or password.' }).waitFor();
    await signIn(page, server);
    assert.equal(new URL(page.url()).pathname, `/projects/${projectId}/members`);
  });

  it('the session cookie is HttpOnly and SameSite=Strict, and survives a reload', async () => {
    const cookies = await context.cookies(server.url);
    const session = cookies.find((c) => c.name === 'sensorcloud_session');
    assert.ok(session, 'session cookie set');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    assert.equal(
      await page.evaluate(() => document.cookie.includes('sensorcloud_session')),
      false,
      'not readable by scripts',
    );
    await page.reload();
    await page.getByRole('heading', { name: 'Members' }).waitFor();
  });

  it('an expired session sends the user to sign-in and back to the same page afterwards', async () => {
    // The admin's own token, issued 1 h 5 min ago: past its life and the 30 s grace, signed with the real key.
    const signer = createAccessTokenSigner(
      Buffer.from(readFileSync(join(server.dataDir, 'master.key'), 'utf8').trim(), 'hex'),
    );
    const members = await server.api('GET', `/organizations/${organizationId}/members`);
    const admin = members.members.find((m: any) => m.email === server.boot.user.email);
    const now = Math.floor(Date.now() / 1000);
    const expired = signer.sign({ sub: `user:${admin.name.split('/')[3]}`, kid: '', iat: now - 3900, exp: now - 300 });
    await context.addCookies([
      { name: 'sensorcloud_session', value: expired, url: server.url, httpOnly: true, sameSite: 'Strict' },
    ]);
    await page.goto(`${server.url}/projects/${projectId}/devices?type=touch`);
    await page.waitForURL(/\/signin\?next=/);
    await page.getByText('Your session has ended').waitFor();
    await signIn(page, server);
    assert.equal(
      new URL(page.url()).pathname + new URL(page.url()).search,
      `/projects/${projectId}/devices?type=touch`,
    );
  });
});

describe('projects', () => {
  it('creates, renames, and shows the API refusal to delete a project that has devices', async () => {
    await page.goto(`${server.url}/`);
    await page.getByLabel('New project name').fill('Lab');
    await page.getByRole('button', { name: 'Create project' }).click();
    const row = page.getByRole('row', { name: /Lab/ });
    await row.waitFor();
    const lab = (await server.api('GET', '/projects')).projects.find((p: any) => p.displayName === 'Lab');
    const labId = lab.name.split('/')[1];
    await row.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('New name of Lab').fill('Lab 2');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('link', { name: 'Lab 2' }).waitFor();
    assert.equal((await server.api('GET', `/projects/${labId}`)).displayName, 'Lab 2');

    const device = await server.api('POST', `/projects/${labId}/devices`, { type: 'touch' });
    await page.reload();
    const lab2 = page.getByRole('row', { name: /Lab 2/ });
    assert.match((await lab2.textContent()) ?? '', /Lab 2.*1/, 'sensor count shown');
    await lab2.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Delete Lab 2?' }).click();
    await lab2.getByRole('alert').filter({ hasText: '(HTTP 400)' }).waitFor();
    assert.match((await lab2.getByRole('alert').textContent()) ?? '', /device/);
    await screenshot(page, 'projects');
    await expectAccessible(page, 'projects');

    await server.api('DELETE', `/projects/${labId}/devices/${device.name.split('/')[3]}`);
    await lab2.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Delete Lab 2?' }).click();
    await lab2.waitFor({ state: 'detached' });
    assert.equal((await server.api('GET', '/projects')).projects.length, 1);
  });
});

describe('service accounts and keys', () => {
  let saEmail: string;

  it('creates a service account with Basic Auth and a key; the secret is shown once and works', async () => {
    await page.goto(`${server.url}/projects/${projectId}/serviceaccounts`);
    await page.getByLabel('Name of the new service account').fill('ci-bot');
    await page.getByLabel(/Allow Basic Auth/).check();
    await page.getByRole('button', { name: 'Create service account' }).click();
    await page.getByRole('link', { name: 'ci-bot' }).click();
    await page.getByRole('heading', { name: 'ci-bot' }).waitFor();
    await expectAccessible(page, 'service account');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secretText = await page.getByTestId('key-secret').textContent();
    assert.match(secretText ?? '', /^[0-9a-f]{32}$/);
    await page.getByRole('button', { name: 'Copy secret' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secretText);
    await screenshot(page, 'service-account-key');
    await expectAccessible(page, 'new key');

    const sa = (await server.api('GET', `/projects/${projectId}/serviceaccounts`)).serviceAccounts.find(
      (s: any) => s.displayName === 'ci-bot',
    );
    saEmail = sa.email;
    assert.equal(sa.enableBasicAuth, true);
    const keys = (await server.api('GET', `${'/' + sa.name}/keys`)).keys;
    assert.equal(keys.length, 1);
    const res = await fetch(`${server.url}/v2/projects`, {
      headers: { authorization: `Basic ${Buffer.from(`${keys[0].id}:${secretText}`).toString('base64')}` },
    });
    assert.equal(res.status, 200, 'the shown secret authenticates');

    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.reload();
    await page.getByRole('cell', { name: keys[0].id }).waitFor();
    assert.equal(await page.getByText(secretText!).count(), 0, 'the secret is not shown again');
  });

  it('lists, renames and deletes service accounts', async () => {
    await page.goto(`${server.url}/projects/${projectId}/serviceaccounts`);
    const temp = await server.api('POST', `/projects/${projectId}/serviceaccounts`, { displayName: 'temp' });
    await page.reload();
    const row = page.getByRole('row', { name: /temp/ });
    await row.getByRole('button', { name: 'Rename' }).click();
    await row.getByLabel('New name').fill('temp-2');
    await row.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('link', { name: 'temp-2' }).waitFor();
    await screenshot(page, 'service-accounts');
    await expectAccessible(page, 'service accounts');
    const row2 = page.getByRole('row', { name: /temp-2/ });
    await row2.getByRole('button', { name: 'Delete' }).click();
    await row2.getByRole('button', { name: /Delete it/ }).click();
    await row2.waitFor({ state: 'detached' });
    const left = (await server.api('GET', `/projects/${projectId}/serviceaccounts`)).serviceAccounts.map(
      (s: any) => s.name,
    );
    assert.ok(!left.includes(temp.name));
  });

  it('members: adds the service account by e-mail as developer', async () => {
    await page.goto(`${server.url}/projects/${projectId}/members`);
    await page.getByLabel('E-mail of a user or service account').fill(saEmail);
    await page.getByLabel('Role', { exact: true }).selectOption('roles/project.developer');
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByText(`${saEmail} was added.`).waitFor();
    const members = (await server.api('GET', `/projects/${projectId}/members`)).members;
    assert.deepEqual(members.find((m: any) => m.email === saEmail).roles, ['roles/project.developer']);
  });
});

describe('members, roles and invitations', () => {
  let inviteUrl: string;

  it('invites a new user as project user, changes the role, and hands out the invite link', async () => {
    await page.goto(`${server.url}/projects/${projectId}/members`);
    await page.getByLabel('E-mail of a user or service account').fill(VIEWER);
    await page.getByLabel('Role', { exact: true }).selectOption('roles/project.user');
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByText(`${VIEWER} was invited`).waitFor();
    const row = page.getByRole('row', { name: new RegExp(VIEWER) });
    assert.match((await row.textContent()) ?? '', /pending/);

    await row.getByLabel(`Role of ${VIEWER}`).selectOption('roles/project.developer');
    const roleOf = async () =>
      (await server.api('GET', `/projects/${projectId}/members`)).members.find((m: any) => m.email === VIEWER).roles;
    for (let i = 0; i < 20 && (await roleOf())[0] !== 'roles/project.developer'; i++) await page.waitForTimeout(250);
    assert.deepEqual(await roleOf(), ['roles/project.developer']);
    await row.getByLabel(`Role of ${VIEWER}`).selectOption('roles/project.user');
    for (let i = 0; i < 20 && (await roleOf())[0] !== 'roles/project.user'; i++) await page.waitForTimeout(250);
    assert.deepEqual(await roleOf(), ['roles/project.user']);

    await row.getByRole('button', { name: 'Invite link' }).click();
    inviteUrl = (await row.locator('.invite-link code').textContent())!;
    assert.match(inviteUrl, /^http:\/\/127\.0\.0\.1:\d+\/invite\//);
    await page.getByText('Roles and what they allow').waitFor();
    await page.locator('summary', { hasText: 'Project developer' }).click();
    await screenshot(page, 'members');
    await expectAccessible(page, 'members');
  });

  it('the invitation page sets a password; the new user signs in and is offered no create or delete controls', async () => {
    const viewer = await newContext(browser);
    try {
      const v = await viewer.newPage();
      // The link names the service's public URL; the test's server listens on its own port.
      await v.goto(`${server.url}${new URL(inviteUrl).pathname}`);
      await v.getByRole('heading', { name: 'Accept your invitation' }).waitFor();
      await expectAccessible(v, 'invitation');
      await screenshot(v, 'invite');
      await v.getByLabel('Your name (optional)').fill('Vera Viewer');
      await v.getByLabel('Password', { exact: true }).fill('short');
      await v.getByLabel('Repeat the password').fill('short');
      await v.getByRole('button', { name: 'Accept invitation' }).click();
      // The browser's own check (minlength) or the API's 400 stops it; the account stays pending.
      assert.equal(
        (await server.api('GET', `/projects/${projectId}/members`)).members.find((m: any) => m.email === VIEWER).status,
        'PENDING',
      );
      await v.getByLabel('Password', { exact: true }).fill(VIEWER_PASSWORD);
      await v.getByLabel('Repeat the password').fill(VIEWER_PASSWORD);
      await v.getByRole('button', { name: 'Accept invitation' }).click();
      await v.getByText('Invitation accepted').waitFor();
      assert.equal(
        (await server.api('GET', `/projects/${projectId}/members`)).members.find((m: any) => m.email === VIEWER).status,
        'ACCEPTED',
      );

      await v.getByRole('link', { name: 'Sign in' }).click();
      await signIn(v, server, VIEWER, VIEWER_PASSWORD);
      await v.getByRole('heading', { name: 'Projects' }).waitFor();
      await v.getByRole('link', { name: 'Default project' }).waitFor();
      assert.equal(await v.getByRole('button', { name: 'Create project' }).count(), 0);
      assert.equal(await v.getByRole('button', { name: 'Delete' }).isDisabled(), true);

      const device = await server.api('POST', `/projects/${projectId}/devices`, {
        type: 'temperature',
        labels: { name: 'Read-only room' },
      });
      await v.goto(`${server.url}/projects/${projectId}/devices`);
      await v.getByRole('link', { name: 'Read-only room' }).waitFor();
      assert.equal(await v.getByRole('link', { name: 'Create emulated devices' }).count(), 0);
      await v.goto(`${server.url}/projects/${projectId}/devices/${device.name.split('/')[3]}`);
      await v.getByRole('heading', { name: 'Read-only room' }).waitFor();
      assert.equal(await v.getByRole('button', { name: 'Add label' }).count(), 0);
      assert.equal(await v.getByRole('button', { name: 'Remove' }).count(), 0);
      assert.equal(await v.getByRole('button', { name: 'Delete device' }).isDisabled(), true);
      assert.match(
        (await v.getByRole('button', { name: 'Delete device' }).getAttribute('title')) ?? '',
        /emulator\.delete/,
      );
      await v.goto(`${server.url}/projects/${projectId}/emulator`);
      await v.getByText('Creating devices is not offered.').waitFor();
      assert.equal(await v.getByRole('button', { name: 'Create device' }).count(), 0);
      await v.goto(`${server.url}/projects/${projectId}/dataconnectors`);
      await v.getByText('Creating connectors is not offered.').waitFor();
      assert.equal(await v.getByRole('link', { name: 'New data connector' }).count(), 0);
      await v.goto(`${server.url}/projects/${projectId}/serviceaccounts`);
      await v.getByText('Service accounts are managed by project administrators.').waitFor();
      await v.goto(`${server.url}/projects/${projectId}/members`);
      await v.getByText('Adding members is not offered.').waitFor();
      await v.getByRole('row', { name: new RegExp(VIEWER) }).waitFor();
      assert.equal(await v.getByRole('button', { name: 'Remove' }).count(), 0);
      assert.equal(await v.getByRole('combobox', { name: /Role of/ }).count(), 0);
      await screenshot(v, 'project-user-members');
      await expectAccessible(v, 'members as project user');
    } finally {
      await viewer.close();
    }
  });

  it('organization members are listed with their role', async () => {
    await page.goto(`${server.url}/organizations/${organizationId}/members`);
    await page.getByRole('row', { name: new RegExp(server.boot.user.email) }).waitFor();
    assert.match(
      (await page.getByRole('row', { name: new RegExp(server.boot.user.email) }).textContent()) ?? '',
      /Organization administrator/,
    );
    await expectAccessible(page, 'organization members');
  });
});

describe("the server's own pages", () => {
  it('the API reference lists operations from openapi.json by tag, with their operationId', async () => {
    await page.goto(`${server.url}/docs/api`);
    await page.getByRole('heading', { name: 'Data connectors' }).waitFor();
    await page.getByText('getDataConnectorMetricsHistory').waitFor();
    await screenshot(page, 'api-reference');
    await page.getByLabel('Find an operation').fill('publish');
    await page.getByText('publishDeviceEvent').waitFor();
    await expectAccessible(page, 'API reference');
  });

  it("an error body's help link opens the explanation of its status", async () => {
    const res = await fetch(`${server.url}/v2/projects/nope`, { headers: { authorization: 'Bearer x' } });
    const { help } = await res.json();
    assert.match(help, /\/docs\/errors#401$/);
    await page.goto(`${server.url}${new URL(help).pathname}${new URL(help).hash}`);
    await page.getByRole('heading', { name: '401 Unauthenticated' }).waitFor();
    for (const code of [400, 401, 403, 404, 409, 429, 500, 503])
      assert.equal(await page.locator(`[id="${code}"]`).count(), 1, `#${code}`);
    await screenshot(page, 'errors-page');
    await expectAccessible(page, 'errors page');
  });

  it('signs out: the cookie is gone and the console asks to sign in', async () => {
    await page.goto(`${server.url}/`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/signin$/);
    assert.equal(
      (await context.cookies(server.url)).some((c) => c.name === 'sensorcloud_session'),
      false,
    );
    await page.goto(`${server.url}/projects/${projectId}/devices`);
    await page.waitForURL(/\/signin\?next=/);
  });
});

describe('narrow screens and dark theme', () => {
  it('every screen renders at 390 px in the dark theme without horizontal scrolling (screenshots)', {
    timeout: 180_000,
  }, async () => {
    const mobile = await newContext(browser, { mobile: true, dark: true });
    try {
      const m = await mobile.newPage();
      await m.goto(`${server.url}/signin`);
      await signIn(m, server);
      const device = (await server.api('GET', `/projects/${projectId}/devices`)).devices[0].name.split('/')[3];
      const sa = (await server.api('GET', `/projects/${projectId}/serviceaccounts`)).serviceAccounts[0].name.split(
        '/',
      )[3];
      const screens: [string, string][] = [
        ['projects', '/'],
        ['devices', `/projects/${projectId}/devices`],
        ['device', `/projects/${projectId}/devices/${device}`],
        ['emulator', `/projects/${projectId}/emulator?device=${device}`],
        ['live-events', `/projects/${projectId}/live`],
        ['connectors', `/projects/${projectId}/dataconnectors`],
        ['connector-form', `/projects/${projectId}/dataconnectors/new`],
        ['service-accounts', `/projects/${projectId}/serviceaccounts`],
        ['service-account', `/projects/${projectId}/serviceaccounts/${sa}`],
        ['members', `/projects/${projectId}/members`],
        ['api-reference', '/docs/api'],
        ['errors-page', '/docs/errors'],
      ];
      for (const [name, path] of screens) {
        await m.goto(`${server.url}${path}`);
        await m.locator('h1').first().waitFor();
        await m.waitForLoadState('networkidle', { timeout: 3000 }).catch(() => undefined); // the live page never idles
        await screenshot(m, `${name}-390-dark`);
        const overflow = await m.evaluate(
          () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
        );
        assert.ok(overflow <= 1, `${name} scrolls sideways by ${overflow} px at 390 px`);
      }
      await expectAccessible(m, 'devices, dark, 390 px');
    } finally {
      await mobile.close();
    }
  });
});
