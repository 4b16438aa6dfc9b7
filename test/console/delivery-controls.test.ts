// Console: a data connector's delivery controls (extensions §X4) in Chromium against a real `serve` pushing to the
// loopback HTTPS receiver: the form's "Delivery controls" section on create (only the labelled device's events are
// pushed) and on edit (the whole deliveryConfig sent), the controls in one line on the connector's page, Pause asked
// for with its consequence and Resume sending the queued events in order, "Paused" on the page and in the list, the
// API's refusals shown at their field, a project user offered neither Pause nor Resume, and the page and the form
// section at 390 px.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { sleep, waitFor } from '../helpers/until.ts';
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
/** Carries site=oslo and floor: the filters below let its events through. */
let osloId: string;
/** site=bergen, no floor: filtered out. */
let bergenId: string;
let connectorId = '';

const connectorPath = () => `/projects/${projectId}/dataconnectors/${connectorId}`;
const connector = () => server.api('GET', connectorPath());
const publish = (deviceId: string, value: number) =>
  server.api('POST', `/projects/${projectId}/devices/${deviceId}:publish`, { temperature: { value } });
const pushedValues = () =>
  receiver.requests.map((r) => JSON.parse(r.body.toString('utf8')).event.data.temperature.value as number);

/** The form section, as one element (its screenshot is the docs' picture of it). */
const section = (p: Page) => p.getByRole('group', { name: 'Delivery controls' });

/**
 * A screenshot of one element with a margin around it, cut from the full page (so the sticky top bar does not cover
 * it), written where screenshot() writes (docs/console/ or test-artifacts/). Nothing has the focus in it.
 */
async function elementShot(target: Locator, name: string, margin = 16): Promise<void> {
  const p = target.page();
  await p.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  const path = await screenshot(p, name); // scrolls to the top: the box below is then in page coordinates
  const box = (await target.boundingBox())!;
  const width = await p.evaluate(() => document.documentElement.clientWidth);
  const x = Math.max(0, box.x - margin);
  const y = Math.max(0, box.y - margin);
  // Less below: the form's buttons start 14 px under the section.
  const clip = { x, y, width: Math.min(width, box.x + box.width + margin) - x, height: box.y + box.height + 6 - y };
  await p.screenshot({ path, fullPage: true, clip, animations: 'disabled' });
}

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

before(async () => {
  [server, browser, receiver] = await Promise.all([startConsoleServer(), launchBrowser(), startReceiver()]);
  projectId = server.boot.project.split('/')[1];
  const oslo = await server.api('POST', `/projects/${projectId}/devices`, {
    type: 'temperature',
    labels: { name: 'Oslo freezer', site: 'oslo', floor: '2' },
  });
  osloId = oslo.name.split('/')[3];
  const bergen = await server.api('POST', `/projects/${projectId}/devices`, {
    type: 'temperature',
    labels: { name: 'Bergen freezer', site: 'bergen' },
  });
  bergenId = bergen.name.split('/')[3];
  context = await newContext(browser);
  page = await context.newPage();
  await page.goto(`${server.url}/projects/${projectId}/dataconnectors`);
  await signIn(page, server);
});
after(async () => {
  await context?.close();
  await receiver?.close();
});

describe('happy', () => {
  it('creates a connector with delivery controls; only the events of devices with the labels are pushed', async () => {
    await page.getByRole('link', { name: 'New data connector' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Oslo cold chain');
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    assert.equal(await page.getByLabel('Max concurrent pushes').inputValue(), '64', 'the default is shown');
    assert.equal(await page.getByLabel('Max rate per second').inputValue(), '', 'no limit by default');
    await page.getByLabel('Max concurrent pushes').fill('8');
    await page.getByLabel('Max rate per second').fill('5');
    await page.getByRole('button', { name: 'Add label filter' }).click();
    await page.getByLabel('Label filter 1 key').fill('site');
    await page.getByLabel('Label filter 1 value').fill('oslo');
    await page.getByRole('button', { name: 'Add label filter' }).click();
    await page.getByLabel('Label filter 2 key').fill('floor');
    assert.equal(await page.getByRole('switch', { name: 'Paused' }).isChecked(), false);
    await elementShot(section(page), 'connector-form-delivery');
    await expectAccessible(page, 'connector form with delivery controls');
    await page.getByRole('button', { name: 'Create connector' }).click();
    await page.waitForURL(/\/dataconnectors\/[0-9a-v]{20}$/);
    connectorId = page.url().split('/').pop()!;
    assert.deepEqual((await connector()).deliveryConfig, {
      maxConcurrency: 8,
      maxRate: 5,
      labelFilters: { site: 'oslo', floor: '' },
      paused: false,
    });

    await publish(bergenId, -5); // no floor label, another site: never queued for this connector
    await publish(osloId, -18);
    await receiver.waitFor(1, 20_000);
    await sleep(1000); // room for a wrong push of the Bergen event to arrive
    assert.deepEqual(pushedValues(), [-18]);

    const line = page.getByTestId('delivery-controls');
    assert.equal(
      await line.textContent(),
      'Up to 8 pushes at once · at most 5 per second · only devices with site=oslo, floor',
    );
    assert.equal(await page.getByTestId('paused').count(), 0);
    await expectAccessible(page, 'connector with delivery controls');
  });

  it('asks before pausing, saying what a pause does; Cancel keeps the connector pushing', async () => {
    await page.goto(`${server.url}${connectorPath()}`);
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    const confirm = page.getByRole('group', { name: /Pausing stops every push/ });
    assert.match(
      (await confirm.textContent()) ?? '',
      /events keep queueing and are sent in order when you resume, but an event queued for more than 12 hours expires without being sent\./,
    );
    const yes = confirm.getByRole('button', { name: 'Pause pushes' });
    assert.equal(await yes.evaluate((el) => el === document.activeElement), true, 'the confirmation has the focus');
    await screenshot(page, 'connector-pause-confirm');
    await expectAccessible(page, 'the pause confirmation');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    assert.equal(await confirm.count(), 0);
    await page.keyboard.press('Escape'); // nothing open: harmless
    assert.equal((await connector()).deliveryConfig.paused, false);
    // Escape says no too.
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.getByRole('button', { name: 'Pause pushes' }).waitFor();
    await page.keyboard.press('Escape');
    assert.equal(await page.getByRole('button', { name: 'Pause pushes' }).count(), 0);
    assert.equal((await connector()).deliveryConfig.paused, false);
    // And with the focus moved out of the question (a click on the page's text).
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.getByRole('button', { name: 'Pause pushes' }).waitFor();
    await page.locator('h1').first().click();
    await page.keyboard.press('Escape');
    assert.equal(await page.getByRole('button', { name: 'Pause pushes' }).count(), 0);
    assert.equal((await connector()).deliveryConfig.paused, false);
  });

  it('pauses: the page and the list say Paused, events queue and none is pushed', async () => {
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.getByRole('button', { name: 'Pause pushes' }).click();
    const notice = page.getByTestId('paused');
    await notice.waitFor();
    assert.match((await notice.textContent()) ?? '', /^Paused — events are queued, none is pushed\./);
    assert.equal(await page.locator('.page-sub .badge').first().textContent(), 'Paused', 'in place of "Active"');
    assert.equal(await page.getByText('Every matching event is pushed to the endpoint.').count(), 0);
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Pause', exact: true }).count(), 0);
    const c = await connector();
    assert.deepEqual([c.status, c.deliveryConfig.paused], ['ACTIVE', true], 'still ACTIVE: paused is not disabled');

    await publish(osloId, -17);
    await publish(osloId, -16);
    await waitFor('two queued deliveries', async () => {
      const { deliveries } = await server.api('GET', `${connectorPath()}/deliveries?state=PENDING`);
      return deliveries.length === 2 ? true : undefined;
    });
    await sleep(2000);
    assert.deepEqual(pushedValues(), [-18], 'nothing is pushed while paused');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByTestId('paused').waitFor();
    await page.locator('.chart canvas').waitFor();
    await screenshot(page, 'connector-paused');
    await expectAccessible(page, 'paused connector');

    await page.getByRole('link', { name: '← All connectors' }).click();
    const row = page.getByRole('row', { name: /Oslo cold chain/ });
    await row.waitFor();
    assert.match((await row.locator('td').nth(1).textContent()) ?? '', /^Paused/);
    assert.doesNotMatch((await row.textContent()) ?? '', /Active/);
    await screenshot(page, 'connectors-paused');
    await expectAccessible(page, 'connectors with a paused one');
  });

  it('resumes: the queued events are pushed, in order', async () => {
    await page.goto(`${server.url}${connectorPath()}`);
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByText('Resumed: the queued events are being pushed').waitFor();
    await page.getByRole('button', { name: 'Pause', exact: true }).waitFor();
    assert.equal(await page.getByTestId('paused').count(), 0);
    assert.equal(await page.locator('.page-sub .badge').first().textContent(), 'Active');
    assert.equal((await connector()).deliveryConfig.paused, false);
    await receiver.waitFor(3, 20_000);
    assert.deepEqual(pushedValues(), [-18, -17, -16]);
  });

  it('edits the controls: the form shows them, and the whole deliveryConfig is sent', async () => {
    await page.goto(`${server.url}${connectorPath()}/edit`);
    const concurrency = page.getByLabel('Max concurrent pushes');
    await concurrency.waitFor();
    assert.equal(await concurrency.inputValue(), '8');
    assert.equal(await page.getByLabel('Max rate per second').inputValue(), '5');
    assert.equal(await page.getByLabel('Label filter 1 key').inputValue(), 'site');
    assert.equal(await page.getByLabel('Label filter 1 value').inputValue(), 'oslo');
    assert.equal(await page.getByLabel('Label filter 2 key').inputValue(), 'floor');
    assert.equal(await page.getByLabel('Label filter 2 value').inputValue(), '');
    await concurrency.fill('1');
    await page.getByLabel('Max rate per second').fill('');
    await page.getByRole('button', { name: 'Remove label filter 2' }).click();
    await page.getByRole('switch', { name: 'Paused' }).check();
    const patch = page.waitForRequest((r) => r.method() === 'PATCH');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const sent = await patch;
    assert.match(new URL(sent.url()).searchParams.get('updateMask') ?? '', /(^|,)deliveryConfig(,|$)/);
    assert.deepEqual(sent.postDataJSON().deliveryConfig, {
      maxConcurrency: 1,
      maxRate: 0,
      labelFilters: { site: 'oslo' },
      paused: true,
    });
    await page.waitForURL(new RegExp(`/dataconnectors/${connectorId}$`));
    assert.deepEqual((await connector()).deliveryConfig, {
      maxConcurrency: 1,
      maxRate: 0,
      labelFilters: { site: 'oslo' },
      paused: true,
    });
    await page.getByTestId('paused').waitFor();
    assert.equal(
      await page.getByTestId('delivery-controls').textContent(),
      'One push at a time · no rate limit · only devices with site=oslo',
    );

    // Back to the controls of the docs' pictures: 8 at once, 5 a second, site=oslo and floor, paused.
    await page.goto(`${server.url}${connectorPath()}/edit`);
    await concurrency.fill('8');
    await page.getByLabel('Max rate per second').fill('5');
    await page.getByRole('button', { name: 'Add label filter' }).click();
    await page.getByLabel('Label filter 2 key').fill('floor');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(new RegExp(`/dataconnectors/${connectorId}$`));
    assert.deepEqual((await connector()).deliveryConfig, {
      maxConcurrency: 8,
      maxRate: 5,
      labelFilters: { site: 'oslo', floor: '' },
      paused: true,
    });
  });
});

describe('refusals at their field', () => {
  it("the API's 400 for a rate, a concurrency or a label key is shown next to that field, in words", async () => {
    await page.goto(`${server.url}${connectorPath()}/edit`);
    const rate = page.getByLabel('Max rate per second');
    await rate.fill('20000');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const text = await waitForFieldError(
      rate,
      'Enter a number of pushes per second above 0 and at most 10,000, or leave it empty for no limit.',
    );
    assert.doesNotMatch(text, /deliveryConfig/, 'in words, not the API field name');
    assert.equal(await rate.evaluate((el) => el === document.activeElement), true, 'the field in error has the focus');
    assert.equal(await page.getByRole('alert').count(), 0, 'no message at the top: it concerns the rate');
    await screenshot(page, 'connector-form-delivery-error');
    await expectAccessible(page, 'connector form with a delivery controls error');
    await rate.fill('5');
    assert.equal(await rate.getAttribute('aria-invalid'), null, 'the error went with the edit');

    const concurrency = page.getByLabel('Max concurrent pushes');
    await concurrency.fill('100');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await waitForFieldError(concurrency, 'Enter a whole number from 1 to 64.');
    await concurrency.fill('8');

    await page.getByLabel('Label filter 1 key').fill('site/name');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const filters = page.getByRole('group', { name: 'Only devices with these labels' });
    await filters.locator('.field-error').filter({ hasText: 'The label key “site/name” must not contain' }).waitFor();
    assert.equal(
      await page.getByLabel('Label filter 1 key').evaluate((el) => el === document.activeElement),
      true,
      'the first filter has the focus',
    );

    // Caught before sending: a value without a key.
    await page.getByLabel('Label filter 1 key').fill('');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await filters
      .locator('.field-error')
      .filter({ hasText: 'Label filter 1 needs a key (or remove the row).' })
      .waitFor();

    assert.deepEqual(
      (await connector()).deliveryConfig,
      { maxConcurrency: 8, maxRate: 5, labelFilters: { site: 'oslo', floor: '' }, paused: true },
      'nothing was changed',
    );
  });
});

describe('a project user', () => {
  it('sees the controls and that the connector is paused, and is offered neither Pause nor Resume', async () => {
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
      await v.goto(`${server.url}${connectorPath()}`);
      await signIn(v, server, email, password);
      await v.getByTestId('paused').waitFor();
      await v.getByText(/Your role does not include dataconnector\.update/).waitFor(); // permissions are loaded
      assert.equal(await v.getByRole('button', { name: 'Resume' }).count(), 0);
      assert.equal(await v.getByRole('button', { name: 'Pause', exact: true }).count(), 0);
      assert.equal(
        await v.getByTestId('delivery-controls').textContent(),
        'Up to 8 pushes at once · at most 5 per second · only devices with site=oslo, floor',
      );
    } finally {
      await viewer.close();
    }
  });
});

describe('narrow screens', () => {
  it('at 390 px the paused page and the form section stay on the screen', async () => {
    for (const dark of [false, true]) {
      const mobile = await newContext(browser, { mobile: true, dark });
      try {
        const m = await mobile.newPage();
        await m.goto(`${server.url}${connectorPath()}`);
        await signIn(m, server);
        const suffix = `-390${dark ? '-dark' : ''}`;
        const noSideways = async (what: string) => {
          const overflow = await m.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          );
          assert.ok(overflow <= 1, `${what} scrolls sideways by ${overflow} px`);
        };
        await m.getByTestId('paused').waitFor();
        await m.locator('.chart canvas').waitFor();
        await screenshot(m, `connector-paused${suffix}`);
        await noSideways('the paused connector');
        // Resumed and paused again: the confirmation on a phone.
        await m.getByRole('button', { name: 'Resume' }).click();
        await m.getByRole('button', { name: 'Pause', exact: true }).click();
        await m.getByRole('button', { name: 'Pause pushes' }).waitFor();
        await screenshot(m, `connector-pause-confirm${suffix}`);
        await noSideways('the pause confirmation');
        await m.getByRole('button', { name: 'Pause pushes' }).click();
        await m.getByRole('button', { name: 'Resume' }).waitFor();
        await m.goto(`${server.url}${connectorPath()}/edit`);
        await m.getByLabel('Label filter 2 key').waitFor();
        await elementShot(section(m), `connector-form-delivery${suffix}`);
        await noSideways('the form');
      } finally {
        await mobile.close();
      }
    }
  });
});
