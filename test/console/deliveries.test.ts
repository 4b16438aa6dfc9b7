// Console screens 6d and 6e in Chromium against a real `serve` (extensions §X1, §X2): a connector's delivery log
// (a receiver failing once then answering gives a retrying and a delivered row), the state chips, a delivery's
// attempt timeline with the answer's first KiB, a test push and its result at once, resend, a replay with its count
// shown before it starts, the connector page saying since when it fails and why, resend and replay refused for a
// disabled connector with the reason, and a project user offered none of the recovery actions.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
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
/** Answers 503 (with Retry-After: 25) once, then 200. */
let receiver: Receiver;
/** Always 503 with an HTML page longer than 1 KiB. */
let broken: Receiver;
let projectId: string;
let deviceId: string;
let hookId: string;
let brokenId: string;

const BROKEN_BODY = `upstream unavailable: maintenance until 06:00 UTC\n<html><body>${'<p>down</p>'.repeat(150)}</body></html>`;

const deliveries = async (dc: string, q = '') =>
  (await server.api('GET', `/projects/${projectId}/dataconnectors/${dc}/deliveries${q}`)).deliveries as any[];
const publish = (value: number) =>
  server.api('POST', `/projects/${projectId}/devices/${deviceId}:publish`, { temperature: { value } });

before(async () => {
  [server, browser, receiver, broken] = await Promise.all([
    startConsoleServer(),
    launchBrowser(),
    startReceiver(),
    startReceiver({ reply: { status: 503, body: BROKEN_BODY } }),
  ]);
  projectId = server.boot.project.split('/')[1];
  const device = await server.api('POST', `/projects/${projectId}/devices`, {
    type: 'temperature',
    labels: { name: 'Freezer 3' },
  });
  deviceId = device.name.split('/')[3];
  const hook = await server.api('POST', `/projects/${projectId}/dataconnectors`, {
    type: 'HTTP_PUSH',
    displayName: 'Warehouse hook',
    httpConfig: { url: receiver.url },
  });
  hookId = hook.name.split('/')[3];
  const bad = await server.api('POST', `/projects/${projectId}/dataconnectors`, {
    type: 'HTTP_PUSH',
    displayName: 'Broken hook',
    events: ['temperature'],
    httpConfig: { url: broken.url },
  });
  brokenId = bad.name.split('/')[3];

  // The first push to the hook fails (503 with a body), the second succeeds; the first is retried 25 s later
  // (Retry-After lengthens the 8 s of the schedule), so it reads RETRYING while the first tests run.
  receiver.replyOnce({ status: 503, retryAfter: '25', body: 'database is down\nretry later' });
  await publish(-18.5);
  await receiver.waitFor(1, 20_000);
  await publish(-18);
  await receiver.waitFor(2, 20_000);
  await waitFor(
    'a retrying and a delivered delivery of the hook',
    async () => {
      const states = (await deliveries(hookId)).map((d) => d.state);
      return states.length === 2 && states.includes('RETRYING') && states.includes('DELIVERED') ? true : undefined;
    },
    20_000,
  );
  await waitFor('two failed deliveries of the broken hook', async () =>
    (await deliveries(brokenId, '?state=RETRYING')).length === 2 ? true : undefined,
  );

  context = await newContext(browser);
  page = await context.newPage();
  await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${hookId}`);
  await signIn(page, server);
});
after(async () => {
  await context?.close();
  await receiver?.close();
  await broken?.close();
});

/** The table's rows as "state | trigger | event id" lines. */
async function rowsOf(p: Page): Promise<string[]> {
  return p.locator('table.deliveries tbody tr').evaluateAll((trs) =>
    trs.map((tr) =>
      [...tr.querySelectorAll('td')]
        .slice(0, 3)
        .map((td) => td.querySelector('a, .badge')?.textContent ?? td.textContent)
        .join(' | '),
    ),
  );
}

describe('the delivery log', () => {
  let retryingId: string;

  it("opens from the connector's page: newest first, state chips filter, filters are in the URL", async () => {
    const [newest, oldest] = await deliveries(hookId);
    assert.equal(newest.state, 'DELIVERED');
    retryingId = oldest.name.split('/').pop();
    await page.getByRole('link', { name: 'Deliveries' }).click();
    await page.waitForURL(new RegExp(`/dataconnectors/${hookId}/deliveries$`));
    await page.locator('table.deliveries tbody tr').nth(1).waitFor();
    assert.deepEqual(await rowsOf(page), [
      `Delivered | Event (published) | ${newest.eventId}`,
      `Retrying | Event (published) | ${oldest.eventId}`,
    ]);
    assert.match(
      (await page.locator('table.deliveries tbody tr').nth(1).textContent()) ?? '',
      /Freezer 3.*1.*in \d+ s|Freezer 3.*1.*due now/,
    );
    await screenshot(page, 'deliveries');
    await expectAccessible(page, 'deliveries');

    await page.getByRole('button', { name: 'Retrying' }).click();
    await page.waitForURL(/\?state=RETRYING$/);
    await page.locator('table.deliveries tbody tr').first().waitFor();
    await waitFor('one row', async () => ((await rowsOf(page)).length === 1 ? true : undefined));
    assert.deepEqual(await rowsOf(page), [`Retrying | Event (published) | ${oldest.eventId}`]);
    assert.equal(await page.getByRole('button', { name: 'Retrying' }).getAttribute('aria-pressed'), 'true');
    await page.getByRole('button', { name: 'Expired' }).click();
    await page.waitForURL(/\?state=RETRYING&state=EXPIRED$/);
    await page.getByRole('button', { name: 'All states' }).click();
    await page.waitForURL(/\/deliveries$/);

    // The event id filter: "where is this event?"
    await page.getByLabel('Event id').fill(newest.eventId);
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL(new RegExp(`eventId=${newest.eventId}`));
    await waitFor('the filtered row', async () => ((await rowsOf(page)).length === 1 ? true : undefined));
    assert.deepEqual(await rowsOf(page), [`Delivered | Event (published) | ${newest.eventId}`]);
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.waitForURL(/\/deliveries$/);
  });

  it("a delivery shows its attempts: the 503 with the answer, then the retry's success", async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${hookId}/deliveries?state=RETRYING`);
    await page.locator('table.deliveries tbody tr').first().click();
    await page.waitForURL(new RegExp(`/deliveries/${retryingId}$`));
    const first = page.locator('.timeline > li').first();
    await first.waitFor();
    const text = (await first.textContent()) ?? '';
    assert.match(text, /#1/);
    assert.match(text, /HTTP error/);
    assert.match(text, /HTTP 503/);
    assert.equal(await first.locator('pre').textContent(), 'database is down\nretry later');
    // Either the retry is still due (its time shown) or it is in flight or done already.
    const state = (await page.locator('.page-sub .badge').textContent()) ?? '';
    if (state === 'Retrying') await page.locator('.timeline > li.next').getByText(/due /).waitFor();

    // The retry comes 25 s after the first attempt; Refresh shows it.
    await receiver.waitFor(3, 30_000);
    await waitFor(
      'the second attempt on the page',
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        return (await page.locator('.timeline > li').count()) === 2 &&
          (await page.locator('.page-sub .badge').textContent()) === 'Delivered'
          ? true
          : undefined;
      },
      { timeoutMs: 20_000, everyMs: 500 },
    );
    const second = (await page.locator('.timeline > li').nth(1).textContent()) ?? '';
    assert.match(second, /#2.*Success.*HTTP 200/);
    assert.equal(await page.locator('.timeline > li.next').count(), 0, 'no attempt due after the success');
    await screenshot(page, 'delivery');
    await expectAccessible(page, 'delivery');
  });

  it('a test push shows its result at once: delivered to the hook, failed with the 503 and its answer', async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${hookId}/deliveries`);
    await page.getByRole('button', { name: 'Send test push' }).click();
    const form = page.locator('form#test-push');
    await form.getByLabel('Event type').selectOption('touch');
    const before = receiver.requests.length;
    await form.getByRole('button', { name: 'Send test push' }).click();
    await form.locator('.test-result').waitFor();
    assert.match((await form.locator('.test-result').textContent()) ?? '', /Delivered.*accepted.*Success.*HTTP 200/);
    const push = receiver.requests[before]!;
    assert.equal(push.headers['x-sensorcloud-delivery-trigger'], 'TEST');
    assert.equal(JSON.parse(push.body.toString('utf8')).event.eventType, 'touch');
    // Listed with the trigger "Test push" once the list is read again.
    await page.locator('table.deliveries tbody tr').filter({ hasText: 'Test push' }).waitFor();
    assert.equal((await deliveries(hookId, '?trigger=TEST')).length, 1);

    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${brokenId}/deliveries`);
    await page.getByRole('button', { name: 'Send test push' }).click();
    await page.locator('form#test-push').getByRole('button', { name: 'Send test push' }).click();
    const result = page.locator('form#test-push .test-result');
    await result.waitFor();
    assert.match((await result.textContent()) ?? '', /Failed.*did not accept.*HTTP error.*HTTP 503/);
    assert.match((await result.locator('figcaption').textContent()) ?? '', /truncated/);
    assert.match(
      (await result.locator('pre').textContent()) ?? '',
      /^upstream unavailable: maintenance until 06:00 UTC/,
    );
    await screenshot(page, 'deliveries-test-push');
    await expectAccessible(page, 'test push result');
  });

  it("the failing connector's page says since when and why, instead of “every matching event is pushed”", async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${brokenId}`);
    const failing = page.getByTestId('failing');
    await failing.waitFor();
    const text = (await failing.textContent()) ?? '';
    assert.match(text, /^Failing since /);
    assert.match(text, /Last failure: .*, HTTP error, HTTP 503: upstream unavailable: maintenance until 06:00 UTC$/);
    assert.equal(await page.getByText('Every matching event is pushed to the endpoint.').count(), 0);
    await screenshot(page, 'connector-failing');
    await expectAccessible(page, 'failing connector');
    // The healthy hook says what it always said.
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${hookId}`);
    await page.getByText('Every matching event is pushed to the endpoint.').waitFor();
    assert.equal(await page.getByTestId('failing').count(), 0);
  });

  it('resend queues the same event again as a new delivery', async () => {
    const [delivered] = await deliveries(hookId, '?state=DELIVERED&trigger=EVENT');
    await page.goto(`${server.url}/${delivered.name}`);
    const before = receiver.requests.length;
    await page.getByRole('button', { name: 'Resend' }).click();
    await page.getByText('Resent: the event was queued again as a new delivery.').waitFor();
    const [push] = (await receiver.waitFor(before + 1, 20_000)).slice(before);
    assert.equal(JSON.parse(push!.body.toString('utf8')).event.eventId, delivered.eventId);
    assert.equal(push!.headers['x-sensorcloud-delivery-trigger'], 'RESEND');
    await page.getByRole('link', { name: 'Open the new delivery' }).click();
    await page.waitForURL((u) => !u.pathname.endsWith(delivered.name.split('/').pop()));
    await page.locator('.props').getByText('Resend').waitFor();
  });

  it('replay shows the window and its count before it starts, then the number queued', async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${hookId}/deliveries`);
    await page.getByRole('button', { name: 'Replay a time window…' }).click();
    const form = page.locator('form#replay');
    // Every event of the last hour not delivered yet: the two temperatures are delivered already.
    await form.getByRole('button', { name: 'Review the replay' }).click();
    await form.getByTestId('replay-count').waitFor();
    assert.equal(await form.getByTestId('replay-count').textContent(), 'No event');
    assert.match(
      (await form.locator('.replay-review').textContent()) ?? '',
      /only those not delivered to it yet\..*2 events in this window .*, 2 of them delivered to this connector already/,
    );
    assert.equal(await form.getByRole('button', { name: 'Replay 0 events' }).isDisabled(), true);

    // All of them: a changed form asks for a new review first.
    await form.getByLabel(/Only events not delivered/).uncheck();
    assert.equal(await form.getByRole('button', { name: 'Review the replay' }).count(), 1);
    await form.getByRole('button', { name: 'Review the replay' }).click();
    await form.getByTestId('replay-count').waitFor();
    assert.equal(await form.getByTestId('replay-count').textContent(), '2 events');
    await screenshot(page, 'deliveries-replay');
    await expectAccessible(page, 'replay review');
    const before = receiver.requests.length;
    await form.getByRole('button', { name: 'Replay 2 events' }).click();
    await form.getByText('Replayed: 2 events queued').waitFor();
    const pushes = (await receiver.waitFor(before + 2, 20_000)).slice(before);
    assert.deepEqual(
      pushes.map((p) => p.headers['x-sensorcloud-delivery-trigger']),
      ['REPLAY', 'REPLAY'],
    );
    assert.equal((await deliveries(hookId, '?trigger=REPLAY')).length, 2);

    // Only the undelivered ones of the broken hook: both of its events.
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${brokenId}/deliveries`);
    await page.getByRole('button', { name: 'Replay a time window…' }).click();
    await form.getByRole('button', { name: 'Review the replay' }).click();
    await form.getByTestId('replay-count').waitFor();
    assert.match(
      (await form.locator('.replay-review').textContent()) ?? '',
      /2 events to push again: 2 events in this window .*, 0 of them delivered/,
    );
    await form.getByRole('button', { name: 'Replay 2 events' }).click();
    await form.getByText('Replayed: 2 events queued').waitFor();
    assert.equal((await deliveries(brokenId, '?trigger=REPLAY')).length, 2);

    // A window with the end before the start is refused next to the field, before anything is sent.
    await form.getByRole('button', { name: 'Review the replay' }).click(); // the count again
    await form.getByRole('button', { name: 'Change the window' }).click();
    await form.getByLabel('End (your local time)').fill('2020-01-01T00:00');
    await form.getByRole('button', { name: 'Review the replay' }).click();
    await form.locator('.field-error').filter({ hasText: 'The end must be after the start.' }).waitFor();
  });

  it("the API's refusal is shown in words: a replay of a disabled connector; Resend and Replay say why they are off", async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${hookId}/deliveries`);
    await page.getByRole('button', { name: 'Replay a time window…' }).click();
    await page
      .locator('form#replay')
      .getByLabel(/Only events not delivered/)
      .uncheck();
    await page.locator('form#replay').getByRole('button', { name: 'Review the replay' }).click();
    await page.locator('form#replay').getByTestId('replay-count').waitFor();
    // Disabled behind the page's back: the API refuses, and the page shows its answer.
    await server.api('PATCH', `/projects/${projectId}/dataconnectors/${hookId}?updateMask=status`, {
      status: 'USER_DISABLED',
    });
    await page
      .locator('form#replay')
      .getByRole('button', { name: /^Replay/ })
      .click();
    await page
      .locator('form#replay .error')
      .filter({ hasText: /ACTIVE.*\(HTTP 400\)/ })
      .waitFor();

    await page.reload();
    const replay = page.getByRole('button', { name: 'Replay a time window…' });
    await replay.waitFor();
    assert.equal(await replay.isDisabled(), true);
    await page.getByText('Resend and replay need an active connector; this one is disabled.').waitFor();
    assert.equal(
      await page.getByRole('button', { name: 'Send test push' }).isDisabled(),
      false,
      'tests work in any status',
    );
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${hookId}/deliveries?state=DELIVERED`);
    await page.locator('table.deliveries tbody tr').first().click();
    const resend = page.getByRole('button', { name: 'Resend' });
    await resend.waitFor();
    assert.equal(await resend.isDisabled(), true);
    assert.match((await resend.getAttribute('title')) ?? '', /need an active connector/);
  });
});

describe('a project user', () => {
  it('reads the log and the attempts, and is offered no resend, replay or test push', async () => {
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
      await v.goto(`${server.url}/projects/${projectId}/dataconnectors/${hookId}/deliveries?state=DELIVERED`);
      await signIn(v, server, email, password);
      await v.locator('table.deliveries tbody tr').first().waitFor();
      await v.getByText('Resend, replay and test pushes are not offered.').waitFor();
      assert.equal(await v.getByRole('button', { name: 'Send test push' }).count(), 0);
      assert.equal(await v.getByRole('button', { name: /Replay/ }).count(), 0);
      await screenshot(v, 'deliveries-project-user');
      await v.locator('table.deliveries tbody tr').first().click();
      await v.locator('.timeline > li').first().waitFor();
      assert.equal(await v.getByRole('button', { name: 'Resend' }).count(), 0);
      await v.getByText('Resend is not offered.').waitFor();
    } finally {
      await viewer.close();
    }
  });
});

describe('narrow screens', () => {
  it('at 390 px the log, a delivery and the failing connector stay on the screen', async () => {
    for (const dark of [false, true]) {
      const mobile = await newContext(browser, { mobile: true, dark });
      try {
        const m = await mobile.newPage();
        await m.goto(`${server.url}/signin`);
        await signIn(m, server);
        const [failed] = await deliveries(brokenId, '?state=RETRYING');
        const screens = [
          ['deliveries', `/projects/${projectId}/dataconnectors/${hookId}/deliveries`, 'table.deliveries tbody tr'],
          ['delivery', `/${failed.name}`, '.timeline > li'],
          ['connector-failing', `/projects/${projectId}/dataconnectors/${brokenId}`, '.alert'],
        ] as const;
        for (const [name, path, ready] of screens) {
          await m.goto(`${server.url}${path}`);
          await m.locator(ready).first().waitFor();
          await screenshot(m, `${name}-390${dark ? '-dark' : ''}`);
          const overflow = await m.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          );
          assert.ok(overflow <= 1, `${name} scrolls sideways by ${overflow} px`);
        }
      } finally {
        await mobile.close();
      }
    }
  });
});
