// Console screen 6 in Chromium against a real `serve`: create a data connector to the loopback HTTPS receiver
// (test CA) with a secret, headers, label keys and an event filter; publish; see the push arrive and the success
// count and chart rise; disable, enable, Sync, edit (the secret stays write-only), delete.
import assert from 'node:assert/strict';
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

before(async () => {
  [server, browser, receiver] = await Promise.all([startConsoleServer(), launchBrowser(), startReceiver()]);
  projectId = server.boot.project.split('/')[1];
  const device = await server.api('POST', `/projects/${projectId}/devices`, {
    type: 'temperature',
    labels: { name: 'Freezer', room: 'cold' },
  });
  deviceId = device.name.split('/')[3];
  context = await newContext(browser);
  page = await context.newPage();
  await page.goto(`${server.url}/projects/${projectId}/dataconnectors`);
  await signIn(page, server);
});
after(async () => {
  await context?.close();
  await receiver?.close();
});

const publish = (value: number) =>
  server.api('POST', `/projects/${projectId}/devices/${deviceId}:publish`, { temperature: { value } });

describe('happy', () => {
  let connectorId: string;

  it('creates a connector to an HTTPS endpoint; a published event is pushed and the success count rises', async () => {
    await page.getByRole('link', { name: 'New data connector' }).click();
    await page.getByLabel('Name').fill('Warehouse hook');
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByLabel('Signature secret').fill('s3cret-signing');
    await page.getByRole('button', { name: 'Add header' }).click();
    await page.getByLabel('Header 1 name').fill('X-Team');
    await page.getByLabel('Header 1 value').fill('cold-chain');
    await page.getByLabel('Label keys to include').fill('name, room');
    await page.getByLabel('Only these types:').check();
    await page.getByLabel('temperature', { exact: true }).check();
    await screenshot(page, 'connector-form');
    await expectAccessible(page, 'connector form');
    await page.getByRole('button', { name: 'Create connector' }).click();
    await page.waitForURL(/\/dataconnectors\/[0-9a-v]{20}$/);
    connectorId = page.url().split('/').pop()!;
    const c = await server.api('GET', `/projects/${projectId}/dataconnectors/${connectorId}`);
    assert.deepEqual(
      { ...c, name: undefined, createTime: undefined, updateTime: undefined },
      {
        name: undefined,
        displayName: 'Warehouse hook',
        type: 'HTTP_PUSH',
        status: 'ACTIVE',
        events: ['temperature'],
        labels: ['name', 'room'],
        httpConfig: {
          url: receiver.url,
          signatureSecret: 's3cret-signing',
          headers: { 'X-Team': 'cold-chain' },
          previousSignatureSecretExpireTime: '',
        },
        deliveryConfig: { maxConcurrency: 64, maxRate: 0, labelFilters: {}, paused: false },
        createTime: undefined,
        updateTime: undefined,
      },
    );

    await publish(-18.5);
    const [push] = await receiver.waitFor(1, 20_000);
    const body = JSON.parse(push!.body.toString('utf8'));
    assert.equal(body.event.data.temperature.value, -18.5);
    assert.deepEqual(body.labels, { name: 'Freezer', room: 'cold' });
    assert.equal(push!.headers['x-team'], 'cold-chain');
    assert.ok(push!.headers['x-service-signature']);

    // The success count on the page rises once the attempt is recorded.
    for (let i = 0; i < 20; i++) {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.getByTestId('success-count').waitFor();
      if ((await page.getByTestId('success-count').textContent()) === '1') break;
      await page.waitForTimeout(500);
    }
    assert.equal(await page.getByTestId('success-count').textContent(), '1');
    await page.locator('.chart canvas').waitFor();
    await screenshot(page, 'connector');
    await expectAccessible(page, 'connector');
  });

  it('the list shows status, counts and p99', async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors`);
    const row = page.getByRole('row', { name: /Warehouse hook/ });
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /Active.*1.*0.*\d\.\d{3}s/);
    await screenshot(page, 'connectors');
    await expectAccessible(page, 'connectors');
  });

  it('disables, enables and syncs; Sync on a disabled connector is not offered', async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${connectorId}`);
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('Disabled: its queue was dropped').waitFor();
    await page.getByRole('button', { name: 'Enable' }).waitFor(); // the page has read the new status
    assert.equal(
      (await server.api('GET', `/projects/${projectId}/dataconnectors/${connectorId}`)).status,
      'USER_DISABLED',
    );
    assert.equal(await page.getByRole('button', { name: 'Sync' }).isDisabled(), true);
    await publish(-17); // not pushed: the connector is disabled
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByText('Enabled: new events are pushed').waitFor();
    await page.getByRole('button', { name: 'Disable' }).waitFor();
    assert.equal((await server.api('GET', `/projects/${projectId}/dataconnectors/${connectorId}`)).status, 'ACTIVE');
    await page.getByRole('button', { name: 'Sync' }).click();
    await page.getByText('Sync queued').waitFor();
    // Sync pushes the device's latest temperature event (-17, published while disabled) again.
    const pushes = await receiver.waitFor(2, 20_000);
    assert.equal(JSON.parse(pushes[1]!.body.toString('utf8')).event.data.temperature.value, -17);
  });

  it('edits: the secret is write-only (kept when left empty), headers and filter change', async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${connectorId}/edit`);
    const secret = page.getByLabel('Signature secret');
    await secret.waitFor();
    assert.equal(await secret.inputValue(), '', 'the secret is never shown back');
    await page.getByLabel('Name', { exact: true }).fill('Warehouse hook v2');
    await page.getByRole('button', { name: 'Remove header 1' }).click();
    await page.getByLabel('All events').check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(new RegExp(`/dataconnectors/${connectorId}$`));
    const c = await server.api('GET', `/projects/${projectId}/dataconnectors/${connectorId}`);
    assert.equal(c.displayName, 'Warehouse hook v2');
    assert.equal(c.httpConfig.signatureSecret, 's3cret-signing');
    assert.deepEqual(c.httpConfig.headers, {});
    assert.deepEqual(c.events, []);
  });

  it('refuses a plain-http URL next to the URL field, in words (more in forms.test.ts)', async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/new`);
    await page.getByLabel('Endpoint URL').fill('http://example.org/hook');
    await page.getByRole('button', { name: 'Create connector' }).click();
    await page.locator('.field-error').filter({ hasText: 'The URL must start with https://' }).waitFor();
    assert.equal(await page.getByLabel('Endpoint URL').getAttribute('aria-invalid'), 'true');
  });

  it('deletes the connector', async () => {
    await page.goto(`${server.url}/projects/${projectId}/dataconnectors/${connectorId}`);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Delete this connector and its queue?' }).click();
    await page.waitForURL(new RegExp(`/projects/${projectId}/dataconnectors$`));
    assert.equal((await server.api('GET', `/projects/${projectId}/dataconnectors`)).dataConnectors.length, 0);
  });
});
