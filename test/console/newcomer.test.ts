// What a newcomer met in the console (one issue): the projects page counts devices and data connectors; the
// device page's chart starts on the range that holds the device's data, and keeps a range once one is picked;
// live events name devices by their `name` label and put label changes in words (so does the device page); an
// emulated device's virtual-sensor label is not offered for removal; at 390 px the devices, projects and live
// lists fit the screen, actions included. Screenshots of each at 1280 and 390 px.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
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
/** An emulated temperature sensor named "Room 4" with readings from the last few minutes only. */
let roomId: string;
/** Unix seconds of Room 4's first and last reading. */
let firstReading: number;
let lastReading: number;

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

before(async () => {
  [server, browser] = await Promise.all([startConsoleServer(), launchBrowser()]);
  projectId = server.boot.project.split('/')[1];
  const room = await server.api('POST', `/projects/${projectId}/devices`, {
    type: 'temperature',
    labels: { name: 'Room 4', floor: '2' },
  });
  roomId = room.name.split('/')[3];
  // A fresh install: three readings over the last 4 minutes, nothing older.
  const times = [minutesAgo(4), minutesAgo(2), minutesAgo(0.1)];
  for (const [i, t] of times.entries()) {
    await server.api('POST', `/projects/${projectId}/devices/${roomId}:publish`, {
      temperature: { value: 21 + i, updateTime: t.toISOString() },
    });
  }
  firstReading = Math.floor(times[0]!.getTime() / 1000);
  lastReading = Math.floor(times[2]!.getTime() / 1000);
  await server.api('POST', `/projects/${projectId}/devices`, { type: 'touch', labels: { name: 'Desk button' } });
  await server.api('POST', `/projects/${projectId}/devices`, { type: 'ccon', labels: { name: 'Gateway' } });
  // Two data connectors (disabled: nothing is pushed); the project has no Cloud Connector data connectors at all.
  for (const displayName of ['Warehouse hook', 'Archive hook']) {
    await server.api('POST', `/projects/${projectId}/dataconnectors`, {
      type: 'HTTP_PUSH',
      displayName,
      status: 'USER_DISABLED',
      httpConfig: { url: 'https://127.0.0.1:9/hook', signatureSecret: '' },
    });
  }
  context = await newContext(browser);
  page = await context.newPage();
  await page.goto(`${server.url}/`);
  await signIn(page, server);
});
after(() => context?.close());

/** Elements matching `selector` (visible ones) that reach outside the viewport's width, described. */
async function outsideViewport(p: Page, selector: string): Promise<string[]> {
  return p.evaluate((sel) => {
    const width = document.documentElement.clientWidth;
    const out: string[] = [];
    for (const el of document.querySelectorAll<HTMLElement>(sel)) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue; // not shown in this layout
      if (r.left < -0.5 || r.right > width + 0.5)
        out.push(
          `${el.tagName.toLowerCase()}.${el.className} "${(el.textContent ?? '').trim().slice(0, 30)}" ${Math.round(r.left)}–${Math.round(r.right)} px`,
        );
    }
    return out;
  }, selector);
}

/** Horizontal scrolling inside any table wrapper (a table wider than its box hides columns). */
async function hiddenColumns(p: Page): Promise<number> {
  return p.evaluate(() =>
    Math.max(0, ...[...document.querySelectorAll('.table-wrap')].map((w) => w.scrollWidth - w.clientWidth)),
  );
}

describe('happy', () => {
  it('projects: each project shows its number of devices and of data connectors, not the ccon count or "Inventory: no"', async () => {
    await page.goto(`${server.url}/`);
    const row = page.getByRole('row', { name: /Default project/ });
    const connectors = row.getByRole('link', { name: '2 data connectors' });
    await connectors.waitFor();
    assert.equal(await connectors.textContent(), '2');
    assert.equal(await connectors.getAttribute('href'), `/projects/${projectId}/dataconnectors`);
    const devices = row.getByRole('link', { name: '3 devices' });
    assert.equal(await devices.textContent(), '3');
    assert.match((await row.textContent()) ?? '', /incl\. 1 Cloud Connector \(gateway\)/);
    const headers = await page.locator('thead th').allTextContents();
    assert.deepEqual(headers.slice(0, 3), ['Project', 'Devices', 'Data connectors']);
    assert.equal(await page.getByText('Inventory').count(), 0);
    assert.equal(await page.getByText('Cloud connectors', { exact: true }).count(), 0);
    await screenshot(page, 'newcomer-projects-1280');
    await expectAccessible(page, 'projects');
  });

  it('device page: with no range chosen the chart fits the few minutes of data; a picked range is kept', async () => {
    await page.goto(`${server.url}/projects/${projectId}/devices/${roomId}`);
    await page.getByRole('heading', { name: 'Room 4' }).waitFor();
    const chart = page.locator('figure.chart').first();
    await chart.locator('canvas').first().waitFor();
    assert.equal(await page.getByLabel('Range', { exact: true }).inputValue(), 'auto');
    const from = Number(await chart.getAttribute('data-x-from'));
    const to = Number(await chart.getAttribute('data-x-to'));
    assert.ok(
      from <= firstReading && to >= lastReading,
      `the x range ${from}–${to} holds the readings ${firstReading}–${lastReading}`,
    );
    const share = (lastReading - firstReading) / (to - from);
    assert.ok(share >= 0.5, `the readings span ${Math.round(share * 100)} % of the chart's width, not a sliver`);
    assert.match(
      (await page.locator('.card', { has: page.getByRole('heading', { name: 'History' }) }).textContent()) ?? '',
      /3 events from .* fitted to the device's recent events/,
    );
    await screenshot(page, 'newcomer-device-1280');
    await expectAccessible(page, 'device');

    // The user's choice is kept: in the URL, across Refresh and a reload.
    await page.getByLabel('Range', { exact: true }).selectOption('1h');
    await page.waitForURL(/range=1h/);
    const span = async () => {
      await page.waitForFunction(() => {
        const f = document.querySelector('figure.chart');
        return f && Number(f.getAttribute('data-x-to')) - Number(f.getAttribute('data-x-from')) > 3000;
      });
      const f = page.locator('figure.chart').first();
      return Math.round(Number(await f.getAttribute('data-x-to')) - Number(await f.getAttribute('data-x-from')));
    };
    assert.equal(await span(), 3600);
    await page.getByRole('button', { name: 'Refresh' }).click();
    assert.equal(await span(), 3600);
    await page.reload();
    await page.locator('figure.chart canvas').first().waitFor();
    assert.equal(await page.getByLabel('Range', { exact: true }).inputValue(), '1h');
    assert.equal(await span(), 3600);
  });

  it('device page: the virtual-sensor label of an emulated device has no Remove or Edit, and says why', async () => {
    await page.goto(`${server.url}/projects/${projectId}/devices/${roomId}`);
    const virtual = page.getByRole('row', { name: /^virtual-sensor/ });
    await virtual.waitFor();
    assert.equal(await virtual.getByRole('button').count(), 0, 'no Remove or Edit button on virtual-sensor');
    assert.match(
      (await virtual.textContent()) ?? '',
      /Kept: it marks an emulated device, and the Emulator lists devices by it\./,
    );
    // Other labels still can be removed.
    await page
      .getByRole('row', { name: /^floor/ })
      .getByRole('button', { name: 'Remove' })
      .waitFor();
    // The batch edit on the devices page refuses it too.
    await page.goto(`${server.url}/projects/${projectId}/devices`);
    await page.getByLabel('Select Room 4').check();
    await page.getByLabel('Change').selectOption('remove');
    await page.getByLabel('Label key').fill('virtual-sensor');
    await page.getByRole('button', { name: 'Apply to selected' }).click();
    await page.getByRole('alert').filter({ hasText: 'virtual-sensor is kept' }).waitFor();
    assert.equal((await server.api('GET', `/projects/${projectId}/devices/${roomId}`)).labels['virtual-sensor'], '');
  });

  it('live events: rows name the device (its id beside it) and put label changes in words; so does the device page', async () => {
    const live = await context.newPage();
    try {
      await live.goto(`${server.url}/projects/${projectId}/live`);
      await live.getByText('Connected').waitFor();
      await server.api('POST', `/projects/${projectId}/devices/${roomId}:publish`, { temperature: { value: 22.5 } });
      const reading = live.locator('.live-row', { hasText: '22.5 °C' });
      await reading.locator('.live-name', { hasText: 'Room 4' }).waitFor();
      assert.equal(await reading.locator('.live-id').textContent(), roomId);
      assert.equal(
        await reading.getByRole('link', { name: 'Room 4' }).getAttribute('href'),
        `/projects/${projectId}/devices/${roomId}`,
      );

      await server.api('POST', `/projects/${projectId}/devices/${roomId}/labels`, { key: 'zone', value: 'north' });
      await server.api('DELETE', `/projects/${projectId}/devices/${roomId}/labels/floor`);
      await server.api('PATCH', `/projects/${projectId}/devices/${roomId}/labels/name`, { value: 'Room 5' });
      await live.locator('.live-row', { hasText: 'added zone=north' }).waitFor();
      await live.locator('.live-row', { hasText: 'removed floor' }).waitFor();
      const renamed = live.locator('.live-row', { hasText: 'changed name=Room 5' });
      await renamed.waitFor();
      // The new name is shown from the change on, without asking the API again.
      await renamed.locator('.live-name', { hasText: 'Room 5' }).waitFor();
      assert.equal(await live.locator('.live-row', { hasText: '{' }).count(), 0, 'no raw JSON in the list');
      await screenshot(live, 'newcomer-live-events-1280');
      await expectAccessible(live, 'live events');
    } finally {
      await live.close();
    }
    await page.goto(`${server.url}/projects/${projectId}/devices/${roomId}`);
    const table = page.locator('table.events');
    await table.getByRole('cell', { name: 'added zone=north' }).waitFor();
    await table.getByRole('cell', { name: 'changed name=Room 5' }).waitFor();
    assert.equal(await table.getByText('{').count(), 0, 'no raw JSON in the history table');
  });
});

describe('narrow screens', () => {
  it('at 390 px the projects, devices and live lists fit the screen: every column and action is reachable', {
    timeout: 120_000,
  }, async () => {
    const mobile = await newContext(browser, { mobile: true });
    try {
      const m = await mobile.newPage();
      await m.goto(`${server.url}/signin`);
      await signIn(m, server);

      await m.goto(`${server.url}/`);
      await m.getByRole('link', { name: '2 data connectors' }).waitFor();
      assert.deepEqual(await outsideViewport(m, 'table th, table td, table td a, table td button'), []);
      assert.equal(await hiddenColumns(m), 0, 'no column is hidden in a scrolled table');
      for (const name of ['Rename', 'Delete']) {
        const box = (await m.getByRole('button', { name, exact: true }).boundingBox())!;
        assert.ok(box.x >= 0 && box.x + box.width <= 390, `${name} is on screen (${box.x}–${box.x + box.width})`);
      }
      await screenshot(m, 'newcomer-projects-390');
      await expectAccessible(m, 'projects, 390 px');

      await m.goto(`${server.url}/projects/${projectId}/devices`);
      await m.getByRole('link', { name: 'Desk button' }).waitFor();
      assert.deepEqual(await outsideViewport(m, 'table th, table td, table td *'), []);
      assert.equal(await hiddenColumns(m), 0, 'no column is hidden in a scrolled table');
      // Each value is labelled with its column, and the select-all box is still there.
      const row = m.getByRole('row', { name: /Room 5/ });
      assert.match(
        await row
          .locator('td[data-label="Latest readings"]')
          .evaluate((td) => getComputedStyle(td, '::before').content),
        /Latest readings/,
      );
      assert.ok(await m.getByLabel('Select all devices on this page').isVisible());
      await screenshot(m, 'newcomer-devices-390');
      await expectAccessible(m, 'devices, 390 px');

      await m.goto(`${server.url}/projects/${projectId}/devices/${roomId}`);
      await m.locator('figure.chart canvas').first().waitFor();
      await screenshot(m, 'newcomer-device-390');

      await m.goto(`${server.url}/projects/${projectId}/live`);
      await m.getByText('Connected').waitFor();
      await server.api('POST', `/projects/${projectId}/devices/${roomId}:publish`, { temperature: { value: 19.75 } });
      const liveRow = m.locator('.live-row', { hasText: '19.75 °C' });
      await liveRow.waitFor();
      await liveRow.locator('.live-name', { hasText: 'Room 5' }).waitFor();
      assert.deepEqual(await outsideViewport(m, '.live-row, .live-row > *, .live-name'), []);
      for (const part of ['.live-time', '.live-type', '.live-text', '.live-name']) {
        const box = (await liveRow.locator(part).boundingBox())!;
        assert.ok(box.width > 20 && box.x + box.width <= 390, `${part} is shown on screen`);
      }
      await screenshot(m, 'newcomer-live-events-390');
      await expectAccessible(m, 'live events, 390 px');
      const overflow = await m.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow} px`);
    } finally {
      await mobile.close();
    }
  });

  it('screenshots at 1280 px of the devices list', async () => {
    await page.goto(`${server.url}/projects/${projectId}/devices`);
    await page.getByRole('link', { name: 'Desk button' }).waitFor();
    await screenshot(page, 'newcomer-devices-1280');
  });
});
