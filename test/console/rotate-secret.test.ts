// Console: rotating a data connector's signature secret without a gap (extensions §X3) in Chromium against a real
// `serve` pushing to the loopback HTTPS receiver: the dialog with its overlap choice (24 h by default), the new
// secret shown once with a copy button and until when the previous one is accepted, the connector's page showing
// the overlap's end while it runs, the next push signed with both secrets; one's own secret with no overlap; Cancel
// changes nothing; a project user sees the overlap's end but is offered no rotation; the dialog and the page at 390 px.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
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
let projectId: string;
let deviceId: string;
let connectorPath: string;

const FIRST_SECRET = 'first-signing-secret';
const OWN_SECRET = 'my-own-signing-secret-42';

/** True when `jwt` (an X-Service-Signature value) is signed with `secret`: the HMAC over its first two parts. */
function signedWith(jwt: unknown, secret: string): boolean {
  if (typeof jwt !== 'string') return false;
  const [header, claims, signature] = jwt.split('.');
  return createHmac('sha256', secret).update(`${header}.${claims}`).digest('base64url') === signature;
}

const connector = () => server.api('GET', connectorPath);
const dialog = (p: Page) => p.getByRole('dialog');
/**
 * A screenshot of an open dialog: the view, not the full page, which would draw the backdrop (fixed, as high as the
 * view) over the top of the page only. Written where screenshot() writes (docs/console/ or test-artifacts/).
 */
async function dialogShot(p: Page, name: string): Promise<void> {
  const path = await screenshot(p, name);
  await p.screenshot({ path, animations: 'disabled' });
}
const openDialog = async (p: Page) => {
  await p.getByRole('button', { name: 'Rotate secret' }).click();
  await dialog(p).getByRole('heading', { name: 'Rotate the signature secret' }).waitFor();
};

before(async () => {
  [server, browser, receiver] = await Promise.all([startConsoleServer(), launchBrowser(), startReceiver()]);
  projectId = server.boot.project.split('/')[1];
  const device = await server.api('POST', `/projects/${projectId}/devices`, { type: 'touch' });
  deviceId = device.name.split('/')[3];
  const c = await server.api('POST', `/projects/${projectId}/dataconnectors`, {
    type: 'HTTP_PUSH',
    displayName: 'Warehouse hook',
    events: ['touch'],
    httpConfig: { url: receiver.url, signatureSecret: FIRST_SECRET },
  });
  connectorPath = `/${c.name}`;
  context = await newContext(browser);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  page = await context.newPage();
  await page.goto(`${server.url}${connectorPath}`);
  await signIn(page, server);
});
after(async () => {
  await context?.close();
  await receiver?.close();
});

describe('happy', () => {
  let secret = '';

  it('rotates with the default overlap of 24 h: the new secret once, with a copy button, and until when the previous one is accepted', async () => {
    await openDialog(page);
    assert.equal(await dialog(page).getByLabel('24 hours').isChecked(), true, '24 h is the default');
    assert.equal(await page.getByTestId('rotation').count(), 0, 'no overlap runs yet');
    await dialogShot(page, 'connector-rotate-secret');
    await expectAccessible(page, 'rotate secret dialog');

    await dialog(page).getByRole('button', { name: 'Rotate secret' }).click();
    await dialog(page).getByRole('heading', { name: 'Store the new secret now' }).waitFor();
    secret = (await page.getByTestId('new-secret').textContent()) ?? '';
    assert.match(secret, /^[0-9a-f]{32}$/);
    const c = await connector();
    assert.equal(c.httpConfig.signatureSecret, secret);
    const until = c.httpConfig.previousSignatureSecretExpireTime;
    assert.ok(Math.abs(Date.parse(until) - Date.now() - 86_400_000) < 60_000, until);
    await dialog(page).getByText('This is the only time it is shown.').waitFor();
    assert.match(
      (await page.getByTestId('rotated-overlap').textContent()) ?? '',
      /^The previous secret is accepted until .+ \(in 2[34] h( \d+ min)?\): until then every push also carries X-Service-Signature-Previous/,
    );

    await dialogShot(page, 'connector-rotated-secret');
    await expectAccessible(page, 'the new secret');
    await dialog(page).getByRole('button', { name: 'Copy secret' }).click();
    await dialog(page).getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);

    // Escape would lose a secret shown once: only "I have stored it" closes the dialog.
    await page.keyboard.press('Escape');
    assert.equal(await dialog(page).isVisible(), true, 'Escape leaves the secret on screen');
    await dialog(page).getByRole('button', { name: 'I have stored it' }).click();
    // A closed <dialog> leaves the role locator at once; its element (the secret in it) goes when the page handles
    // the dialog's close event, a moment later.
    await dialog(page).waitFor({ state: 'detached' });
    await page.waitForFunction((s) => !document.documentElement.outerHTML.includes(s), secret, { timeout: 5_000 });
    assert.ok(!(await page.content()).includes(secret), 'the secret is gone from the page');
  });

  it('the page shows the end of the overlap while it runs, and the next push is signed with both secrets', async () => {
    await page.reload();
    const notice = page.getByTestId('rotation');
    await notice.waitFor();
    assert.match(
      (await notice.textContent()) ?? '',
      /^Signature secret rotation under way\. The previous secret is accepted until .+ \(in 2[34] h( \d+ min)?\): until then every push also carries X-Service-Signature-Previous, signed with it/,
    );
    await page.getByText(/The previous secret signs too \(X-Service-Signature-Previous\) until/).waitFor();
    assert.ok(!(await page.content()).includes(secret), 'the secret is not shown again');
    await screenshot(page, 'connector-rotation');
    await expectAccessible(page, 'connector during a rotation');

    await server.api('POST', `/projects/${projectId}/devices/${deviceId}:publish`, { touch: {} });
    const [push] = await receiver.waitFor(1, 20_000);
    assert.ok(signedWith(push!.headers['x-service-signature'], secret), 'X-Service-Signature: the new secret');
    assert.ok(
      signedWith(push!.headers['x-service-signature-previous'], FIRST_SECRET),
      'X-Service-Signature-Previous: the previous secret',
    );
  });

  it('the edit form says that a new secret there ends the rotation', async () => {
    await page.goto(`${server.url}${connectorPath}/edit`);
    await page.getByText(/ends the rotation under way/).waitFor();
  });

  it('Cancel changes nothing', async () => {
    await page.goto(`${server.url}${connectorPath}`);
    const before = await connector();
    await openDialog(page);
    assert.ok(
      (await dialog(page).textContent())?.includes(
        'A rotation is under way: the secret in use now becomes the previous one',
      ),
      'rotating during an overlap says what it drops',
    );
    await dialog(page).getByRole('button', { name: 'Cancel' }).click();
    await dialog(page).waitFor({ state: 'detached' });
    assert.equal((await connector()).updateTime, before.updateTime);
  });

  it('one’s own secret with no overlap: not shown back, and the page shows no rotation any more', async () => {
    await openDialog(page);
    await dialog(page).getByLabel('None: switch at once').check();
    await dialog(page).getByLabel('Your own secret (optional)').fill(OWN_SECRET);
    await dialog(page).getByRole('button', { name: 'Rotate secret' }).click();
    await dialog(page).getByRole('heading', { name: 'The secret was rotated' }).waitFor();
    assert.equal(await page.getByTestId('new-secret').count(), 0);
    assert.match(
      (await page.getByTestId('rotated-overlap').textContent()) ?? '',
      /^No overlap: every push from now on/,
    );
    assert.ok(!(await page.content()).includes(OWN_SECRET));
    const c = await connector();
    assert.deepEqual([c.httpConfig.signatureSecret, c.httpConfig.previousSignatureSecretExpireTime], [OWN_SECRET, '']);
    await page.keyboard.press('Escape'); // nothing to lose here: Escape closes
    await dialog(page).waitFor({ state: 'detached' });
    await page.getByTestId('rotation').waitFor({ state: 'detached' });
  });
});

describe('a project user', () => {
  it('sees the end of a rotation under way, and is offered no Rotate secret', async () => {
    await server.api('POST', `${connectorPath}:rotateSecret`, { overlap: '3600s' });
    const email = 'viewer@example.com';
    const password = 'viewer-password-123';
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
      await v.goto(`${server.url}${connectorPath}`);
      await signIn(v, server, email, password);
      await v.getByRole('button', { name: 'Refresh' }).waitFor();
      await v.getByText(/Your role does not include dataconnector\.update/).waitFor(); // permissions are loaded
      assert.equal(await v.getByRole('button', { name: 'Rotate secret' }).count(), 0);
      assert.match((await v.getByTestId('rotation-end').textContent()) ?? '', /\(in (59 min|1 h)\)$/);
    } finally {
      await viewer.close();
    }
  });
});

describe('narrow screens', () => {
  it('at 390 px the dialog, the new secret and the page during a rotation stay on the screen', async () => {
    for (const dark of [false, true]) {
      const mobile = await newContext(browser, { mobile: true, dark });
      try {
        const m = await mobile.newPage();
        await m.goto(`${server.url}${connectorPath}`);
        await signIn(m, server);
        const suffix = `-390${dark ? '-dark' : ''}`;
        const noSideways = async (what: string) => {
          const overflow = await m.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          );
          assert.ok(overflow <= 1, `${what} scrolls sideways by ${overflow} px`);
          const box = (await dialog(m).count()) > 0 ? await dialog(m).boundingBox() : null;
          if (box) assert.ok(box.x >= 0 && box.x + box.width <= 390, `${what}: the dialog is off the screen`);
        };
        await openDialog(m);
        await dialogShot(m, `connector-rotate-secret${suffix}`);
        await noSideways('the dialog');
        await dialog(m).getByRole('button', { name: 'Rotate secret' }).click();
        await m.getByTestId('new-secret').waitFor();
        await dialogShot(m, `connector-rotated-secret${suffix}`);
        await noSideways('the new secret');
        await dialog(m).getByRole('button', { name: 'I have stored it' }).click();
        await m.getByTestId('rotation').waitFor();
        await screenshot(m, `connector-rotation${suffix}`);
        await noSideways('the page during a rotation');
      } finally {
        await mobile.close();
      }
    }
  });
});
