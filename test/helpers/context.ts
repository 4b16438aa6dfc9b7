// The in-process test service: the test store (helpers/store.ts: SQLite in a temp dir unless SENSORCLOUD_TEST_STORE
// says otherwise, or the store given), a fake clock, the real app driven by inject().
// Seed helpers write through the store so a test of one resource does not depend on another's routes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject, type DispatchFunc } from 'light-my-request';
import { createApp, type App } from '../../src/api/app.ts';
import { loadConfig } from '../../src/config.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { buildDeps, type BuiltDeps } from '../../src/main.ts';
import { serviceAccountEmail } from '../../src/domain/names.ts';
import { FakeClock } from '../../src/runtime/clock.ts';
import { createSilentLogger } from '../../src/runtime/logger.ts';
import { newSecret } from '../../src/runtime/random.ts';
import { bootstrapIfEmpty, type BootstrapFile } from '../../src/services/bootstrap.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import type { Store } from '../../src/store/contract/store.ts';
import { createTestStore } from './store.ts';

export type Auth = { basic: [string, string] } | { bearer: string } | { raw: string } | null;

export interface TestResponse<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface RequestOptions {
  auth?: Auth;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send this string as the raw body (for malformed-JSON tests). */
  rawBody?: string;
  /** The client's IP address, as the server sees it (default 127.0.0.1). */
  remoteAddress?: string;
}

export interface Account {
  id: string;
  email: string;
  keyId: string;
  secret: string;
  auth: Auth;
}

export interface TestContext {
  app: App;
  deps: BuiltDeps;
  clock: FakeClock;
  dataDir: string;
  boot: BootstrapFile;
  /** Basic credentials of the bootstrap service account (organization admin). */
  admin: Auth;
  organizationId: string;
  projectId: string;
  request<T = any>(method: string, url: string, options?: RequestOptions): Promise<TestResponse<T>>;
  createProject(displayName?: string): Promise<string>;
  /** A service account owned by `projectId` with one key; with `roles`, a member of `memberOf` (default projectId). */
  createServiceAccount(options?: {
    projectId?: string;
    roles?: string[];
    memberOf?: string;
    enableBasicAuth?: boolean;
  }): Promise<Account>;
  createDevice(options?: Partial<DeviceRecord>): Promise<DeviceRecord>;
  close(): Promise<void>;
}

export interface ContextOptions {
  env?: Record<string, string>;
  clock?: FakeClock;
  /** Opens the service's store for its data dir (default: createTestStore, the backend SENSORCLOUD_TEST_STORE names). */
  store?: (dataDir: string) => Promise<Store> | Store;
}

export async function createTestContext(options: ContextOptions = {}): Promise<TestContext> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-test-'));
  const config = loadConfig({
    SENSORCLOUD_RATE_LIMIT: 'off',
    SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
    ...options.env,
    SENSORCLOUD_DATA_DIR: dataDir,
  });
  const clock = options.clock ?? new FakeClock();
  const store = await Promise.resolve()
    .then(() => (options.store ?? createTestStore)(dataDir))
    .catch((error: unknown) => {
      rmSync(dataDir, { recursive: true, force: true });
      throw error;
    });
  const deps = buildDeps(config, { clock, logger: createSilentLogger(), store });
  const boot = (await bootstrapIfEmpty(deps))!.contents;
  const app = await createApp(deps);
  await app.ready();
  const listener = app.server.listeners('request')[0] as DispatchFunc;
  const organizationId = boot.organization.split('/')[1]!;
  const projectId = boot.project.split('/')[1]!;
  const admin: Auth = { basic: [boot.serviceAccount.keyId, boot.serviceAccount.secret] };

  const ctx: TestContext = {
    app,
    deps,
    clock,
    dataDir,
    boot,
    admin,
    organizationId,
    projectId,
    async request(method, url, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      const auth = opts.auth === undefined ? admin : opts.auth;
      if (auth && 'basic' in auth)
        headers.authorization = `Basic ${Buffer.from(`${auth.basic[0]}:${auth.basic[1]}`).toString('base64')}`;
      if (auth && 'bearer' in auth) headers.authorization = `Bearer ${auth.bearer}`;
      if (auth && 'raw' in auth) headers.authorization = auth.raw;
      let payload: string | undefined;
      if (opts.rawBody !== undefined) payload = opts.rawBody;
      else if (opts.body !== undefined) {
        payload = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      // Through the server's request listener, as a real request goes: the lean :publish path first, then fastify.
      const res = await inject(listener, {
        method: method as 'GET',
        url,
        headers,
        payload,
        remoteAddress: opts.remoteAddress,
      });
      let body: unknown;
      try {
        body = res.body === '' ? undefined : JSON.parse(res.body);
      } catch {
        body = undefined;
      }
      return {
        status: res.statusCode,
        body: body as any,
        headers: res.headers as Record<string, string>,
        text: res.body,
      };
    },
    async createProject(displayName = 'Test project') {
      const id = deps.ids.next();
      const now = nowMicros(deps);
      await deps.store.projects.create({
        id,
        organizationId,
        displayName,
        location: { latitude: null, longitude: null, timeLocation: '' },
        labels: {},
        createTime: now,
        updateTime: now,
      });
      return id;
    },
    async createServiceAccount(o = {}) {
      const owner = o.projectId ?? projectId;
      const id = deps.ids.next();
      const keyId = deps.ids.next();
      const secret = newSecret(deps.random);
      const now = nowMicros(deps);
      const email = serviceAccountEmail(id, owner, config.emailDomain);
      await deps.store.serviceAccounts.create({
        id,
        projectId: owner,
        email,
        displayName: 'test',
        enableBasicAuth: o.enableBasicAuth ?? true,
        createTime: now,
        updateTime: now,
      });
      await deps.store.keys.create({
        id: keyId,
        serviceAccountId: id,
        secretEnc: deps.secretBox.seal(secret),
        createTime: now,
      });
      if (o.roles && o.roles.length > 0) {
        const isOrg = o.roles.includes('roles/organization.admin');
        await deps.store.memberships.create({
          scopeType: isOrg ? 'organization' : 'project',
          scopeId: isOrg ? organizationId : (o.memberOf ?? owner),
          memberId: id,
          accountType: 'SERVICE_ACCOUNT',
          roles: o.roles,
          status: 'ACCEPTED',
          createTime: now,
        });
      }
      return { id, email, keyId, secret, auth: { basic: [keyId, secret] } };
    },
    async createDevice(o = {}) {
      const now = nowMicros(deps);
      const device: DeviceRecord = {
        id: `emu${deps.ids.next()}`,
        projectId,
        type: 'temperature',
        productNumber: '102058',
        labels: { 'virtual-sensor': '' },
        reported: {},
        latestEvents: {},
        emulated: true,
        createTime: now,
        updateTime: now,
        ...o,
      };
      await deps.store.devices.create(device);
      return device;
    },
    async close() {
      await app.close();
      await deps.store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return ctx;
}
