// The Store: one narrow, async interface over the database, grouped by resource. Both backends, SQLite (one process
// owns it) and PostgreSQL (several processes share it), implement it and pass the same contract suite
// (test/store/contract.ts). transaction(fn) gives fn the same repositories bound to one transaction: all or nothing.
// A new backend implements the primitives: transaction, ping, authVersion and close, a Cluster when it is shared,
// and every repository method except the few derived ones defaults.ts builds from the others (DeliveryRepo add,
// deleteMany, deleteCounted and claimMany; DataConnectorRepo getMany), which it overrides only to go faster.
// getForUpdate is a primitive: a plain get() where one process owns the store, a row lock where several share it.
import type {
  DeviceRecord,
  EventRecord,
  InviteRecord,
  KeyRecord,
  LatestEvent,
  MembershipRecord,
  OrganizationRecord,
  ProjectRecord,
  ProjectWithCounts,
  ScopeType,
  ServiceAccountRecord,
  UserRecord,
} from './records.ts';
import type { AlertRepo, ConditionRepo, ContactRepo, OutboxRepo, RuleRepo } from './alerting.ts';
import type { ConnectorMetricRepo, DataConnectorRepo, DeliveryRepo } from './connector-repos.ts';
import type { DeliveryLogRepo } from './delivery-log.ts';
import type { Range } from './range.ts';

export type { Range } from './range.ts';

export interface OrganizationRepo {
  create(org: OrganizationRecord): Promise<void>;
  get(id: string): Promise<OrganizationRecord | null>;
  /** Organizations with the given ids, in id order. */
  list(ids: string[], range: Range): Promise<OrganizationRecord[]>;
  count(): Promise<number>;
}

export interface ProjectListFilter {
  /** Projects visible through a direct membership. */
  projectIds: string[];
  /** Projects visible through organization admin rights (every project of these organizations). */
  organizationIds: string[];
  /** Restrict to one organization. */
  organizationId?: string;
  /** Case-insensitive substring of displayName. */
  query?: string;
}

export interface ProjectRepo {
  create(project: ProjectRecord): Promise<void>;
  get(id: string): Promise<ProjectRecord | null>;
  /**
   * get(), to write the project back in the same transaction (read-modify-write): a store several processes share
   * reads it from the database and locks the row until the commit, so a concurrent writer waits and reads what this
   * one wrote.
   */
  getForUpdate(id: string): Promise<ProjectRecord | null>;
  getWithCounts(id: string): Promise<ProjectWithCounts | null>;
  list(filter: ProjectListFilter, range: Range): Promise<ProjectWithCounts[]>;
  update(project: ProjectRecord): Promise<void>;
  /** Deletes the project, its service accounts with their keys and memberships, and its memberships. */
  delete(id: string): Promise<void>;
  /** Number of devices and data connectors still in the project. */
  countContents(id: string): Promise<{ devices: number; dataConnectors: number }>;
}

/** A user as created and updated: its token generation is the store's to keep (UserRepo.endSessions). */
export type UserWrite = Omit<UserRecord, 'tokenGeneration'>;

export interface UserRepo {
  /** A new user, token generation 0. */
  create(user: UserWrite): Promise<void>;
  get(id: string): Promise<UserRecord | null>;
  getByEmail(email: string): Promise<UserRecord | null>;
  /** Writes the display name, password hash, active flag and update time; leaves the token generation. */
  update(user: UserWrite): Promise<void>;
  /**
   * Ends every session of the user: its token generation moves on, so every access token minted before is refused.
   * One increment in the database, so an update() written from an older read never moves it back.
   */
  endSessions(id: string): Promise<void>;
}

export interface ServiceAccountRepo {
  create(sa: ServiceAccountRecord): Promise<void>;
  get(id: string): Promise<ServiceAccountRecord | null>;
  /** get(), to write the account back in the same transaction (as ProjectRepo.getForUpdate). */
  getForUpdate(id: string): Promise<ServiceAccountRecord | null>;
  getByEmail(email: string): Promise<ServiceAccountRecord | null>;
  listByProject(projectId: string, range: Range): Promise<ServiceAccountRecord[]>;
  update(sa: ServiceAccountRecord): Promise<void>;
  /** Deletes the account, its keys and its memberships everywhere. */
  delete(id: string): Promise<void>;
}

export interface KeyRepo {
  create(key: KeyRecord): Promise<void>;
  get(id: string): Promise<KeyRecord | null>;
  listByServiceAccount(serviceAccountId: string, range: Range): Promise<KeyRecord[]>;
  countByServiceAccount(serviceAccountId: string): Promise<number>;
  delete(id: string): Promise<void>;
}

export interface MembershipRepo {
  get(scopeType: ScopeType, scopeId: string, memberId: string): Promise<MembershipRecord | null>;
  /** Memberships of one project or organization in creation order; `after` is [createTime, memberId]. */
  listByScope(scopeType: ScopeType, scopeId: string, range: Range<[number, string]>): Promise<MembershipRecord[]>;
  /** Every membership of one user or service account. */
  listByMember(memberId: string): Promise<MembershipRecord[]>;
  create(m: MembershipRecord): Promise<void>;
  updateRoles(scopeType: ScopeType, scopeId: string, memberId: string, roles: string[]): Promise<void>;
  delete(scopeType: ScopeType, scopeId: string, memberId: string): Promise<void>;
  /** Marks every PENDING membership of the member ACCEPTED. */
  acceptAll(memberId: string): Promise<void>;
  /** Marks one PENDING membership ACCEPTED; false when there is no such pending membership. */
  accept(scopeType: ScopeType, scopeId: string, memberId: string): Promise<boolean>;
  /** ACCEPTED organization admins of the organization. */
  countAcceptedOrganizationAdmins(organizationId: string): Promise<number>;
}

export interface InviteRepo {
  create(invite: InviteRecord): Promise<void>;
  get(tokenHash: string): Promise<InviteRecord | null>;
  /** Marks an unused invitation used; false when it was used already (of two accepting it at once, one wins). */
  markUsed(tokenHash: string, usedTime: number): Promise<boolean>;
  /**
   * Marks the user's unused invitations of one organization used (revoked), with those made before invitations
   * were scoped (organizationId null); another organization's stay. Returns how many.
   */
  revokeUnused(userId: string, organizationId: string, usedTime: number): Promise<number>;
}

/**
 * JWT-bearer assertions already exchanged, by key and `jti` (RFC 7523 §3 item 7): an assertion is taken once. Each is
 * remembered until it could no longer pass the expiry check anyway.
 */
export interface AssertionIdRepo {
  /**
   * Records the key's assertion `jti` (or a digest of it) as used until `expireTime` (micros). False when it is
   * recorded already and remembered past `now`: a replay. Of two callers recording the same one at once, in any
   * processes, exactly one gets true; one remembered only until `now` or earlier is taken as new.
   */
  use(keyId: string, jti: string, expireTime: number, now: number): Promise<boolean>;
  /** Forgets up to `limit` of those remembered until `now` or earlier; returns how many. */
  deleteExpired(now: number, limit: number): Promise<number>;
}

export interface DeviceRepo {
  create(device: DeviceRecord): Promise<void>;
  get(id: string): Promise<DeviceRecord | null>;
  listByProject(projectId: string, range: Range): Promise<DeviceRecord[]>;
  /**
   * Emulated devices of every project, in id order, without their labels and reported state (heartbeats walk them
   * page by page and read in full only the ones due).
   */
  listEmulated(range: Range): Promise<EmulatedDeviceSummary[]>;
  /** Writes what an event changed: `reported` and the latest event per type. */
  updateReported(
    id: string,
    reported: Record<string, unknown>,
    latestEvents: Record<string, LatestEvent>,
    updateTime: number,
  ): Promise<void>;
  updateLabels(id: string, labels: Record<string, string>, updateTime: number): Promise<void>;
  /**
   * Moves the device to another project; its history, read by device, goes with it. The history's rows are not
   * touched: their projectId stays the one they were stored in (EventRecord.projectId).
   */
  move(id: string, projectId: string, updateTime: number): Promise<void>;
  /** Deletes the device and what is left of its history (events.deleteByDevice deletes the rest beforehand). */
  delete(id: string): Promise<void>;
  /**
   * Filtered, sorted keyset page of devices (contract §4.6 list filters and order_by), with only the listed fields
   * and labels and `reported` as JSON text (the list serves them without parsing: see DeviceListingRow).
   */
  queryListing(q: DeviceQuery): Promise<DeviceListingRow[]>;
}

/** An emulated device as the heartbeat scan sees it. */
export type EmulatedDeviceSummary = Pick<DeviceRecord, 'id' | 'type' | 'latestEvents'>;

/** What a device list sorts on: the id alone, or a value (missing values sort last) then the id ascending. */
export type DeviceSort =
  | { kind: 'id' }
  | { kind: 'type' }
  | { kind: 'productNumber' }
  | { kind: 'label'; key: string }
  | { kind: 'reported'; eventType: string; fields: string[] };

export type DeviceSortValue = string | number | null;

export interface DeviceQuery {
  projectIds: string[];
  /** Each list: empty = any; values ORed. */
  deviceIds: string[];
  deviceTypes: string[];
  productNumbers: string[];
  /** All must hold; value null = the key is present with any value. */
  labelFilters: Array<{ key: string; value: string | null }>;
  /** Lower-case substring of the id, the type, or any label key or value; null = none. */
  query: string | null;
  sort: DeviceSort;
  descending: boolean;
  /** Rows strictly after this sort position (value is ignored for the id sort). */
  after: { value: DeviceSortValue; id: string } | null;
  limit: number;
  /** Stop early once the rows' labelsJson and reportedJson add up past this, with at least two rows
   *  (domain/paging.ts readWithinPageBytes). */
  maxBytes: number;
}

/**
 * A row of DeviceRepo.queryListing: what a device list serves, labels and `reported` as JSON text. A store may keep
 * that text or make it again from what it keeps (a jsonb column, say): the promise is the text, not how it is kept.
 */
export interface DeviceListingRow {
  id: string;
  projectId: string;
  type: string;
  productNumber: string;
  /** JSON.stringify of the labels object, keys in the order they were set: served verbatim. */
  labelsJson: string;
  /** JSON text of the `reported` object, any key order (presentReported puts it in the served shape). */
  reportedJson: string;
  sortValue: DeviceSortValue;
}

export interface EventHistoryQuery {
  deviceId: string;
  /** Empty = every type. */
  eventTypes: string[];
  /** Inclusive bounds, micros. */
  startTime: number;
  endTime: number;
  /** Newest first: rows strictly before [timestamp, id]. */
  before?: [number, string] | null;
  limit: number;
  /** Stop early once the rows' bodies add up past this, with at least two rows (readWithinPageBytes). */
  maxBytes?: number;
}

export interface EventRepo {
  insert(event: EventRecord): Promise<void>;
  /** History of one device, newest first (timestamp, then id, both descending). */
  listByDevice(query: EventHistoryQuery): Promise<EventRecord[]>;
  /**
   * Deletes up to `limit` events stored before `createTime`; returns how many were deleted. Event ids come from
   * the service's id generator, whose seconds prefix is never earlier than the event's storage time, so a store
   * may find them through the id (no index on the storage time).
   */
  deleteStoredBefore(createTime: number, limit: number): Promise<number>;
  /** Removes up to `limit` of the device's events; returns how many (a history is deleted a piece at a time). */
  deleteByDevice(deviceId: string, limit: number): Promise<number>;
  /**
   * For each device currently in the project and each of `eventTypes`, its latest stored event (by timestamp,
   * then id), ordered by device id, then event time. The latest events are the ones the devices' `latestEvents`
   * name (kept by the pipeline through updateReported); when retention has deleted one, the latest event of
   * that type still stored, if any. With `devices`, only the devices after `devices.after` (an id), at most
   * `devices.limit` of them: a caller walks a large project page by page.
   */
  latestPerType(projectId: string, eventTypes: readonly string[], devices?: Range): Promise<EventRecord[]>;
}

/**
 * A value sealed under the master key: a key's secret, a connector's signature secret (`connector`) or the previous
 * one of a rotation's overlap (`previousSecret`, extensions §X3; the id is the connector's), the signature secret of a
 * rule's webhook action (`ruleWebhook`, extensions §X5, kept in the rule's spec; the id is
 * `<ruleId>/<level>/<action>`, indexes into its escalation levels and their actions) or of a queued webhook
 * notification (`outboxWebhook`, kept in the outbox row's payload; the id is the row's), or a value the processes of a
 * shared store agree on (the master key check). `admin rotate-master-key` reads them all and writes each back sealed
 * under the new key, in one transaction.
 */
export interface SealedValue {
  kind: 'key' | 'connector' | 'previousSecret' | 'ruleWebhook' | 'outboxWebhook' | 'setting';
  id: string;
  sealed: string;
}

export interface SealedRepo {
  /**
   * Every sealed value; a connector without a signature secret has none, one without a previous secret none of
   * that kind. A previous secret is listed as long as it is stored, its overlap over or not: it stays sealed. A rule
   * has one per webhook action with a signature secret ('' is none), an outbox row one when it is a WEBHOOK
   * notification with one; a spec or payload that is not JSON has none.
   */
  list(): Promise<SealedValue[]>;
  /**
   * Replaces one (the same kind and id); false when it is gone (for `ruleWebhook` and `outboxWebhook`, also when that
   * action or row has no secret now). Nothing else about its owner changes: a secret inside a rule's spec or an outbox
   * row's payload is rewritten alone in the JSON as stored when replaced, read and written under the row's lock, so
   * that a write of the rest made meanwhile is kept.
   */
  replace(value: SealedValue): Promise<boolean>;
}

export interface Repos {
  organizations: OrganizationRepo;
  projects: ProjectRepo;
  users: UserRepo;
  serviceAccounts: ServiceAccountRepo;
  keys: KeyRepo;
  memberships: MembershipRepo;
  invites: InviteRepo;
  assertionIds: AssertionIdRepo;
  devices: DeviceRepo;
  events: EventRepo;
  dataConnectors: DataConnectorRepo;
  deliveries: DeliveryRepo;
  deliveryLog: DeliveryLogRepo;
  connectorMetrics: ConnectorMetricRepo;
  sealed: SealedRepo;
  rules: RuleRepo;
  contacts: ContactRepo;
  alerts: AlertRepo;
  conditions: ConditionRepo;
  outbox: OutboxRepo;
}

export interface TransactionOptions {
  /**
   * A promise of the caller, not a request: fn may be called again from the start after a call whose writes were
   * undone, and leaves nothing outside the store to undo (or undoes it itself when called again, as the event
   * pipeline does). A store may use it as it can, or ignore it: run fn more cheaply (SQLite: without the savepoint
   * of a shared commit), or retry it after a failure that undid it (a lost connection, a serialization failure).
   */
  rerunnable?: boolean;
  /**
   * The devices fn reads, when the caller knows them: a store may read them ahead, together with those of the
   * transactions sharing its commit (PostgreSQL's group commit reads a batch's devices in one statement).
   */
  devices?: readonly string[];
  /**
   * No request waits for this transaction (the delivery engine's outcomes): a store may hold it a few milliseconds,
   * so that more transactions share its commit (PostgreSQL does, with `rerunnable` ones).
   */
  background?: boolean;
}

/**
 * What the processes sharing a store (PostgreSQL) need besides the data: locks, a leader per periodic job, and
 * messages. Null on a store one process owns (SQLite): there every job runs here and every message stays here.
 */
export interface Cluster {
  /** Runs fn while holding the named cluster-wide lock (waiting for it), e.g. the first start's bootstrap. */
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Whether this process leads the named periodic job now: one process of the cluster does, until it stops or its
   * connection to the database is lost (it died); then the next process to ask takes over.
   */
  tryLead(job: string): Promise<boolean>;
  /**
   * Sends messages to every process listening on the channel (this one too), in order, after any open transaction;
   * all of them in one round trip and one transaction of the database's. A channel is a lowercase word.
   */
  publish(channel: string, payloads: readonly string[]): Promise<void>;
  /** Hears the channel's messages; returns the function that stops. Messages sent while disconnected are lost. */
  subscribe(channel: string, fn: (payload: string) => void): Promise<() => void>;
  /** Connections that serve processes hold to the database now (an admin command's own are not counted). */
  serviceSessions(): Promise<number>;
  /** A value the cluster shares, set by the first process that asks (first writer wins); returns the stored one. */
  settle(name: string, value: string): Promise<string>;
  /** Password logins of every process, counted per key (the login throttle: auth/login-throttle.ts). */
  readonly loginFailures: LoginFailures;
}

/** A count of the login throttle: the attempts under `key`, of which at most `limit` fall in the window. */
export interface LoginCount {
  key: string;
  limit: number;
}

/**
 * Password logins counted per key, before their password is checked, so that attempts racing cannot all pass
 * (auth/login-throttle.ts); times in milliseconds. A process alone keeps them in memory (auth/login-failures-memory.ts),
 * the processes of a cluster share them in the database.
 */
export interface LoginFailures {
  /**
   * Counts an attempt at `at` under every key, or under none: only when each key has fewer than its limit of
   * attempts after `since` (those at or before `since` are forgotten). Atomic: of attempts racing, in this process
   * or any other, no key gets more than its limit. Null when counted; else the first key that is full and the time
   * it has room again (when the attempt that filled it leaves the window, whose length is `at - since`).
   */
  reserve(counts: readonly LoginCount[], at: number, since: number): Promise<{ key: string; retryAt: number } | null>;
  /** Takes back one attempt counted under the key at `at` (a login that succeeded was no failure). */
  forgive(key: string, at: number): Promise<void>;
  /** Forgets every attempt counted under the key. */
  clear(key: string): Promise<void>;
}

export interface Store extends Repos {
  /**
   * One process owns this store (SQLite: the data dir is locked to it). Then, when it starts, no attempt of an
   * earlier process can still be in flight, and every delivery lease is left over from a crash. A store shared by
   * several processes says false: a lease ends only when its time is up.
   */
  readonly exclusive: boolean;
  /** The other processes sharing this store; null when exclusive. */
  readonly cluster: Cluster | null;
  /** Runs fn in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Repos) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  /**
   * A counter that changes with every write to users, service accounts, keys or memberships (project deletes
   * included), so the authenticator can cache principals (src/auth/auth-cache.ts). A store shared by several
   * processes counts the writes of all of them, and answers asynchronously: a process sees the new value only
   * once the write it announces is visible to it.
   */
  authVersion(): number | Promise<number>;
  close(): Promise<void>;
}
