// Shared parts of the Store contract suite: how a part gets its store, ordered ids, and records with valid
// foreign keys (an organization before its projects, a project before its devices, service accounts and
// connectors, a connector before its queue rows and metrics, a rule before its alerts and conditions, an alert before
// its outbox rows). Written against the Store interface only.
import { after, before } from 'node:test';
import type {
  AlertRecord,
  ConditionRecord,
  ContactGroupRecord,
  ContactRecord,
  OutboxRecord,
  RuleRecord,
} from '../../../src/store/contract/alerting.ts';
import type { DataConnectorRecord, NewDelivery } from '../../../src/store/contract/connector-repos.ts';
import type {
  DeviceRecord,
  EventRecord,
  KeyRecord,
  MembershipRecord,
  OrganizationRecord,
  ProjectRecord,
  ServiceAccountRecord,
  UserRecord,
} from '../../../src/store/contract/records.ts';
import type { Store } from '../../../src/store/contract/store.ts';

/** Opens a new, empty store each time it is called (a fresh file, database or schema). */
export type OpenStore = () => Promise<Store> | Store;

/** One store for the tests of a describe block, opened before them and closed after. */
export function useStore(open: OpenStore): () => Store {
  let store: Store | null = null;
  before(async () => {
    store = await open();
  });
  after(() => store?.close());
  return () => {
    if (!store) throw new Error('the store is opened in before()');
    return store;
  };
}

/** Runs fn on a store of its own, for promises about every row of the store (counts, service-wide passes). */
export async function withFreshStore<T>(open: OpenStore, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await open();
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

let seq = 0;
/**
 * Distinct 20-character ids, each greater than every id made before it (base32hex characters). They start with
 * a letter, so as event ids they sort after every id the service's generator makes today: retention, which
 * finds events through their time-ordered ids, never takes them (the retention tests make their own).
 */
export const id = (prefix: string): string => `${prefix}${String(++seq).padStart(20 - prefix.length, '0')}`;

/** A fixed fake time (micros): 2025-06-01T12:00:00Z. */
export const T0 = 1_748_779_200_000_000;
export const SECOND = 1_000_000;
export const MINUTE = 60 * SECOND;

const location = { latitude: null, longitude: null, timeLocation: '' };

export const organization = (over: Partial<OrganizationRecord> = {}): OrganizationRecord => ({
  id: id('o'),
  displayName: 'Org',
  createTime: T0,
  ...over,
});

export const project = (organizationId: string, over: Partial<ProjectRecord> = {}): ProjectRecord => ({
  id: id('p'),
  organizationId,
  displayName: 'P',
  location,
  labels: {},
  createTime: T0,
  updateTime: T0,
  ...over,
});

export const user = (over: Partial<UserRecord> = {}): UserRecord => {
  const userId = id('u');
  return {
    id: userId,
    email: `${userId}@example.com`,
    displayName: 'U',
    passwordHash: null,
    active: true,
    createTime: T0,
    updateTime: T0,
    tokenGeneration: 0,
    ...over,
  };
};

export const serviceAccount = (projectId: string, over: Partial<ServiceAccountRecord> = {}): ServiceAccountRecord => {
  const saId = id('s');
  return {
    id: saId,
    projectId,
    email: `${saId}@${projectId}.example.com`,
    displayName: 'SA',
    enableBasicAuth: true,
    createTime: T0,
    updateTime: T0,
    ...over,
  };
};

export const key = (serviceAccountId: string, over: Partial<KeyRecord> = {}): KeyRecord => ({
  id: id('k'),
  serviceAccountId,
  secretEnc: 'sealed',
  createTime: T0,
  ...over,
});

export const membership = (
  scopeType: MembershipRecord['scopeType'],
  scopeId: string,
  memberId: string,
  over: Partial<MembershipRecord> = {},
): MembershipRecord => ({
  scopeType,
  scopeId,
  memberId,
  accountType: 'USER',
  roles: ['roles/project.user'],
  status: 'ACCEPTED',
  createTime: T0,
  ...over,
});

export const device = (projectId: string, over: Partial<DeviceRecord> = {}): DeviceRecord => ({
  id: id('d'),
  projectId,
  type: 'temperature',
  productNumber: '102058',
  labels: { a: '1' },
  reported: {},
  latestEvents: {},
  emulated: false,
  createTime: T0,
  updateTime: T0,
  ...over,
});

export const event = (
  d: Pick<DeviceRecord, 'id' | 'projectId'>,
  timestamp: number,
  eventType = 'touch',
  over: Partial<EventRecord> = {},
): EventRecord => ({
  id: id('e'),
  projectId: d.projectId,
  deviceId: d.id,
  eventType,
  timestamp,
  createTime: timestamp,
  body: `{"t":${timestamp}}`,
  ...over,
});

export const connector = (projectId: string, over: Partial<DataConnectorRecord> = {}): DataConnectorRecord => ({
  id: id('c'),
  projectId,
  displayName: 'C',
  status: 'ACTIVE',
  events: [],
  labels: [],
  url: 'https://receiver.example.com/push',
  headers: {},
  signatureSecretSealed: '',
  // As a store answers a connector without one (extensions §X3).
  previousSignatureSecretSealed: '',
  previousSignatureSecretExpireTime: null,
  // As a store answers a connector without delivery controls (extensions §X4).
  deliveryConfig: { maxConcurrency: 64, maxRate: 0, labelFilters: {}, paused: false },
  failingSince: null,
  createTime: T0,
  updateTime: T0,
  ...over,
});

/** A queue row of the connector, enqueued (and due) at `enqueueTime`. */
export const row = (connectorId: string, enqueueTime: number, over: Partial<NewDelivery> = {}): NewDelivery => ({
  connectorId,
  eventId: id('e'),
  body: Buffer.from(`{"enqueued":${enqueueTime}}`),
  enqueueTime,
  dueTime: enqueueTime,
  ...over,
});

export const rule = (projectId: string, over: Partial<RuleRecord> = {}): RuleRecord => ({
  id: id('r'),
  projectId,
  displayName: 'Fridge',
  enabled: true,
  spec: '{"trigger":{"field":"temperature","range":{"lower":2,"upper":8,"type":"OUTSIDE"}}}',
  createTime: T0,
  updateTime: T0,
  ...over,
});

export const contactGroup = (organizationId: string, over: Partial<ContactGroupRecord> = {}): ContactGroupRecord => ({
  id: id('g'),
  organizationId,
  displayName: 'On call',
  description: '',
  createTime: T0,
  updateTime: T0,
  ...over,
});

export const contact = (projectId: string, over: Partial<ContactRecord> = {}): ContactRecord => {
  const contactId = id('n');
  return {
    id: contactId,
    projectId,
    contactGroupId: '',
    displayName: 'N',
    email: `${contactId}@example.com`,
    phoneNumber: '',
    createTime: T0,
    updateTime: T0,
    ...over,
  };
};

/** A TRIGGERED alert of the rule for a device target, no notifications, no timer. */
export const alert = (
  r: Pick<RuleRecord, 'id' | 'projectId'>,
  targetId: string,
  over: Partial<AlertRecord> = {},
): AlertRecord => ({
  id: id('a'),
  projectId: r.projectId,
  ruleId: r.id,
  targetId,
  targetName: `projects/${r.projectId}/devices/${targetId}`,
  state: 'TRIGGERED',
  escalationLevel: 0,
  triggerTime: T0,
  acknowledgeTime: null,
  acknowledgedBy: '',
  resolveTime: null,
  lastValue: '',
  notifications: [],
  timerDue: null,
  createTime: T0,
  updateTime: T0,
  ...over,
});

export const condition = (
  r: Pick<RuleRecord, 'id' | 'projectId'>,
  targetId: string,
  over: Partial<ConditionRecord> = {},
): ConditionRecord => ({
  ruleId: r.id,
  targetId,
  projectId: r.projectId,
  since: T0,
  count: 1,
  due: null,
  lastValue: '{"value":9}',
  ...over,
});

/** An outbox row of the alert, queued (and due) at `enqueueTime`. */
export const notification = (
  alertId: string,
  enqueueTime: number,
  over: Partial<Omit<OutboxRecord, 'id' | 'attempts' | 'leaseUntil'>> = {},
): Omit<OutboxRecord, 'id' | 'attempts' | 'leaseUntil'> => ({
  alertId,
  entry: 0,
  type: 'EMAIL',
  payload: '{"to":["ops@example.com"],"subject":"s","text":"t"}',
  enqueueTime,
  dueTime: enqueueTime,
  ...over,
});

/** An organization with one project, stored. */
export async function seedProject(store: Store, over: Partial<ProjectRecord> = {}): Promise<ProjectRecord> {
  const org = organization();
  await store.organizations.create(org);
  const p = project(org.id, over);
  await store.projects.create(p);
  return p;
}

/** A stored connector in a project of its own (or the given one). */
export async function seedConnector(
  store: Store,
  over: Partial<DataConnectorRecord> = {},
): Promise<DataConnectorRecord> {
  const projectId = over.projectId ?? (await seedProject(store)).id;
  const c = connector(projectId, over);
  await store.dataConnectors.create(c);
  return c;
}

/** A stored rule in a project of its own (or the given one). */
export async function seedRule(store: Store, over: Partial<RuleRecord> = {}): Promise<RuleRecord> {
  const projectId = over.projectId ?? (await seedProject(store)).id;
  const r = rule(projectId, over);
  await store.rules.create(r);
  return r;
}

/** A stored alert of a stored rule (of a project of its own), with the target given or a new id. */
export async function seedAlert(
  store: Store,
  over: Partial<AlertRecord> = {},
): Promise<{ rule: RuleRecord; alert: AlertRecord }> {
  const r = await seedRule(store);
  const a = alert(r, over.targetId ?? id('d'), over);
  if (!(await store.alerts.createIfNone(a))) throw new Error('the alert was not written');
  return { rule: r, alert: a };
}

/** Ascending copy, for results whose order the interface leaves open. */
export const sorted = <T extends string | number>(values: readonly T[]): T[] =>
  [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
