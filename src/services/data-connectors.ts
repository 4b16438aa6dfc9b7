// Data connectors (contract §3.9, §4.9, §6.6, §6.7, §6.8): CRUD with validation, the status machine with its
// queue effects, :sync and :metrics. Only callers holding dataconnector.update see the signature secret and
// header values (§7 #1); the end of a rotation's overlap (extensions §X3, secret-rotation.ts) is no secret.
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { applyStatusWrite, initialState } from '../domain/connector-status.ts';
import { EVENT_TYPES } from '../domain/device-types.ts';
import { labelKeyProblem, labelMapOf } from '../domain/labels.ts';
import type { ProjectPermission } from '../domain/roles.ts';
import { HTTP_TOKEN, NOT_SENDABLE_IN_HEADER_VALUE, RESERVED_PUSH_HEADERS } from '../domain/push-headers.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { camelPath } from '../domain/update-mask.ts';
import { dataConnectorName } from '../domain/names.ts';
import { pageRequest, toPage } from '../domain/paging.ts';
import { NO_PREVIOUS_SECRET, overlapRuns } from '../domain/secret-rotation.ts';
import { formatTimestamp } from '../domain/time.ts';
import { readConnectorMetrics, readConnectorMetricsHistory } from '../delivery/metrics.ts';
import { dropQueue, dropRest } from '../delivery/claim.ts';
import { deleteConnectorLog, dropLogTime } from '../delivery/delivery-log.ts';
import { enqueueSync } from '../delivery/sync.ts';
import { checkUrlForWrite } from '../delivery/ssrf.ts';
import { deliveryConfigOf, type DataConnectorRecord, type DeliveryConfig } from '../store/contract/connector-repos.ts';
import type { Repos } from '../store/contract/store.ts';
import {
  MAX_DISPLAY_NAME_LENGTH,
  type ConnectorMetrics,
  type DataConnector,
  type DataConnectorInput,
  type DataConnectorList,
  type DeliveryConfigInput,
  type HttpConfigInput,
  type MetricsHistoryBucket,
} from '../wire/data-connectors.ts';
import type { PageQuery } from '../wire/paging.ts';
import { requireProject } from './access.ts';
import type { Principal } from '../auth/principal.ts';

export const MAX_CONNECTORS_PER_PROJECT = 100;
export const MAX_LABELS = 100;
export const MAX_HEADERS = 50;
export const MAX_HEADER_NAME_LENGTH = 256;
export const MAX_HEADER_VALUE_LENGTH = 4096;
export const MAX_SECRET_LENGTH = 256;
export const CONNECTOR_TYPE = 'HTTP_PUSH';
/** deliveryConfig bounds (extensions §X4): 64 is the engine's own cap per connector. */
export const MAX_CONCURRENCY = 64;
export const MAX_RATE = 10_000;

const KNOWN_EVENT_TYPES = new Set<string>(EVENT_TYPES);

// ---- validation (each names the field) ----

function checkType(input: DataConnectorInput): void {
  if (input.type !== undefined && input.type !== CONNECTOR_TYPE) throw badRequest(`type must be ${CONNECTOR_TYPE}`);
  for (const [key, value] of Object.entries(input)) {
    if (key !== 'httpConfig' && key !== 'deliveryConfig' && /Config$/.test(key) && value !== undefined) {
      throw badRequest(`${key} must be null: only ${CONNECTOR_TYPE} connectors (httpConfig) are supported`);
    }
  }
}

function checkDisplayName(v: unknown): string {
  if (typeof v !== 'string') throw badRequest('displayName must be a string');
  if ([...v].length > MAX_DISPLAY_NAME_LENGTH)
    throw badRequest(`displayName must be at most ${MAX_DISPLAY_NAME_LENGTH} characters`);
  return v;
}

function checkEvents(v: unknown): string[] {
  if (!Array.isArray(v)) throw badRequest('events must be an array of event types');
  const out: string[] = [];
  for (const t of v) {
    if (typeof t !== 'string' || !KNOWN_EVENT_TYPES.has(t))
      throw badRequest(`events: unknown event type ${JSON.stringify(t)}`);
    if (!out.includes(t)) out.push(t);
  }
  return out;
}

function checkLabels(v: unknown): string[] {
  if (!Array.isArray(v)) throw badRequest('labels must be an array of label keys');
  const out: string[] = [];
  for (const k of v) {
    const problem = labelKeyProblem(k);
    if (problem) throw badRequest(`labels: ${problem} (${JSON.stringify(k)})`);
    if (!out.includes(k as string)) out.push(k as string);
  }
  if (out.length > MAX_LABELS) throw badRequest(`labels: at most ${MAX_LABELS} label keys`);
  return out;
}

/** Custom push headers as given, named `field` in a 400 (a notification rule's webhook takes the same rules). */
export function checkHeaders(v: unknown, field = 'httpConfig.headers'): Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw badRequest(`${field} must be an object of strings`);
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_HEADERS) throw badRequest(`${field}: at most ${MAX_HEADERS} headers`);
  const seen = new Set<string>();
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (name.length > MAX_HEADER_NAME_LENGTH || !HTTP_TOKEN.test(name)) {
      throw badRequest(
        `${field}: ${JSON.stringify(name.slice(0, 64))} is not a valid header name (an HTTP token of at most ${MAX_HEADER_NAME_LENGTH} characters)`,
      );
    }
    const lower = name.toLowerCase();
    if (RESERVED_PUSH_HEADERS.has(lower)) throw badRequest(`${field}: ${name} is reserved and set by the service`);
    // An ordinary object cannot hold this key (it would be dropped silently): refused like a reserved name.
    if (name === '__proto__') throw badRequest(`${field}: __proto__ is not accepted as a header name`);
    if (seen.has(lower)) throw badRequest(`${field}: ${name} is given twice`);
    seen.add(lower);
    if (typeof value !== 'string') throw badRequest(`${field}.${name} must be a string`);
    // Checked exactly as the HTTP client will: a value it refuses would fail every attempt for 12 hours.
    if (NOT_SENDABLE_IN_HEADER_VALUE.test(value)) {
      throw badRequest(
        `${field}.${name} must hold only tab, space, visible ASCII and Latin-1 characters (no CR, LF, NUL, other control characters or characters beyond U+00FF)`,
      );
    }
    if (value.length > MAX_HEADER_VALUE_LENGTH)
      throw badRequest(`${field}.${name} must be at most ${MAX_HEADER_VALUE_LENGTH} characters`);
    out[name] = value;
  }
  return out;
}

/** A signature secret as given ('' = unsigned), named `field` in a 400. */
export function checkSecret(v: unknown, field = 'httpConfig.signatureSecret'): string {
  if (typeof v !== 'string') throw badRequest(`${field} must be a string`);
  if (v.length > MAX_SECRET_LENGTH) throw badRequest(`${field} must be at most ${MAX_SECRET_LENGTH} characters`);
  return v;
}

function checkHttpConfig(v: unknown): HttpConfigInput {
  if (v === undefined) return {};
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw badRequest('httpConfig must be an object');
  return v as HttpConfigInput;
}

function checkDeliveryConfigObject(v: unknown): DeliveryConfigInput {
  if (v === undefined) return {};
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw badRequest('deliveryConfig must be an object');
  return v as DeliveryConfigInput;
}

function checkMaxConcurrency(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_CONCURRENCY)
    throw badRequest(`deliveryConfig.maxConcurrency must be a whole number from 1 to ${MAX_CONCURRENCY}`);
  return v;
}

function checkMaxRate(v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_RATE)
    throw badRequest(
      `deliveryConfig.maxRate must be a number of attempts per second above 0 and at most ${MAX_RATE}, or 0 for no limit`,
    );
  return v;
}

function checkLabelFilters(v: unknown): Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw badRequest('deliveryConfig.labelFilters must be an object of label key to value ("" = the key is present)');
  return labelMapOf(Object.entries(v as Record<string, unknown>), 'deliveryConfig.labelFilters', MAX_LABELS);
}

function checkPaused(v: unknown): boolean {
  if (typeof v !== 'boolean') throw badRequest('deliveryConfig.paused must be true or false');
  return v;
}

// ---- presentation ----

export function presentDataConnector(
  deps: Pick<Deps, 'secretBox' | 'clock'>,
  c: DataConnectorRecord,
  reveal: boolean,
): DataConnector {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.headers)) headers[k] = reveal ? v : '';
  const secret = reveal && c.signatureSecretSealed !== '' ? deps.secretBox.open(c.signatureSecretSealed) : '';
  // An overlap that has ended shows as none, though the store keeps the sealed secret until the next change of it.
  const previousUntil = overlapRuns(c, nowMicros(deps)) ? formatTimestamp(c.previousSignatureSecretExpireTime!) : '';
  return {
    name: dataConnectorName(c.projectId, c.id),
    displayName: c.displayName,
    type: CONNECTOR_TYPE,
    status: c.status,
    events: c.events,
    labels: c.labels,
    httpConfig: { url: c.url, signatureSecret: secret, headers, previousSignatureSecretExpireTime: previousUntil },
    deliveryConfig: presentDeliveryConfig(deliveryConfigOf(c)),
    createTime: formatTimestamp(c.createTime),
    updateTime: formatTimestamp(c.updateTime),
  };
}

/** A copy: the record's filters are never handed out to be changed. */
const presentDeliveryConfig = (d: DeliveryConfig): DeliveryConfig => ({ ...d, labelFilters: { ...d.labelFilters } });

const canSeeSecrets = (permissions: ReadonlySet<string>) => permissions.has('dataconnector.update');

/** The connector of the project with the caller's permission checked; `reveal`: whether the caller sees its secrets. */
export async function requireConnector(
  deps: Deps,
  principal: Principal,
  projectId: string,
  connectorId: string,
  permission: ProjectPermission,
) {
  const { permissions } = await requireProject(deps, principal, projectId, permission);
  const connector = await deps.store.dataConnectors.get(connectorId);
  if (!connector || connector.projectId !== projectId) throw notFound('data connector not found');
  return { connector, reveal: canSeeSecrets(permissions) };
}

/** Reloads inside a transaction (the connector may have been deleted since the permission check). */
export async function reload(tx: Repos, projectId: string, connectorId: string): Promise<DataConnectorRecord> {
  const c = await tx.dataConnectors.getForUpdate(connectorId);
  if (!c || c.projectId !== projectId) throw notFound('data connector not found');
  return c;
}

/**
 * After the commit that disabled or deleted the connector: its queue, a piece per transaction, so that a long one
 * never holds the writer. Null when the database failed meanwhile: the rest goes when it comes due (the engine's
 * claim drops it) or when the connector is enabled again, and never reaches the endpoint.
 */
async function dropQueueAfter(deps: Deps, projectId: string, connectorId: string): Promise<number | null> {
  deps.delivery.queueDropped(connectorId);
  try {
    return await dropQueue(deps.store, connectorId, dropLogTime(deps));
  } catch (err) {
    deps.logger.warn(
      { err, connector: dataConnectorName(projectId, connectorId) },
      'data connector: dropping its queue failed; the rest is dropped as it comes due',
    );
    return null;
  }
}

function logTransition(
  deps: Deps,
  c: DataConnectorRecord,
  from: string,
  principal: Principal,
  dropped: number | null,
): void {
  deps.logger.info(
    {
      connector: dataConnectorName(c.projectId, c.id),
      from,
      to: c.status,
      by: `${principal.kind}:${principal.id}`,
      droppedDeliveries: dropped,
    },
    c.status === 'ACTIVE' ? 'data connector enabled' : 'data connector disabled',
  );
}

// ---- use cases ----

export async function listDataConnectors(
  deps: Deps,
  principal: Principal,
  projectId: string,
  query: PageQuery,
): Promise<DataConnectorList> {
  const { permissions } = await requireProject(deps, principal, projectId, 'dataconnector.read');
  const filters = `dataconnectors:${projectId}`;
  const page = pageRequest(query, filters);
  const rows = await deps.store.dataConnectors.listByProject(projectId, {
    after: (page.after?.[0] as string) ?? null,
    limit: page.pageSize + 1,
  });
  const { items, nextPageToken } = toPage(rows, page, (c) => [c.id], filters);
  const reveal = canSeeSecrets(permissions);
  return { dataConnectors: items.map((c) => presentDataConnector(deps, c, reveal)), nextPageToken };
}

export async function createDataConnector(
  deps: Deps,
  principal: Principal,
  projectId: string,
  input: DataConnectorInput,
): Promise<DataConnector> {
  await requireProject(deps, principal, projectId, 'dataconnector.create');
  if (input.type === undefined) throw badRequest(`type is required: ${CONNECTOR_TYPE}`);
  checkType(input);
  const http = checkHttpConfig(input.httpConfig);
  checkUrlForWrite(http.url, deps.config.allowPrivateEndpoints);
  const url = http.url as string;
  const state = initialState(input.status);
  const displayName = input.displayName === undefined ? '' : checkDisplayName(input.displayName);
  const events = input.events === undefined ? [] : checkEvents(input.events);
  const labels = input.labels === undefined ? [] : checkLabels(input.labels);
  const headers = http.headers === undefined ? {} : checkHeaders(http.headers);
  const secret = http.signatureSecret === undefined ? '' : checkSecret(http.signatureSecret);
  const deliveryConfig = mergeDeliveryConfig(
    deliveryConfigOf({}),
    checkDeliveryConfigObject(input.deliveryConfig),
    null,
  );

  const now = nowMicros(deps);
  const connector: DataConnectorRecord = {
    id: deps.ids.next(),
    projectId,
    displayName,
    status: state.status,
    events,
    labels,
    url,
    headers,
    signatureSecretSealed: secret === '' ? '' : deps.secretBox.seal(secret),
    deliveryConfig,
    failingSince: null,
    createTime: now,
    updateTime: now,
  };
  // The answer is built before the commit: if building it failed, nothing would be left behind.
  const view = await deps.store.transaction(async (tx) => {
    if (!(await tx.projects.get(projectId))) throw notFound('project not found');
    if ((await tx.dataConnectors.countByProject(projectId)) >= MAX_CONNECTORS_PER_PROJECT) {
      throw badRequest(`a project has at most ${MAX_CONNECTORS_PER_PROJECT} data connectors; delete one first`);
    }
    await tx.dataConnectors.create(connector);
    return presentDataConnector(deps, connector, true);
  });
  deps.logger.info(
    {
      connector: dataConnectorName(projectId, connector.id),
      status: connector.status,
      by: `${principal.kind}:${principal.id}`,
    },
    'data connector created',
  );
  return view;
}

export async function getDataConnector(
  deps: Deps,
  principal: Principal,
  projectId: string,
  connectorId: string,
): Promise<DataConnector> {
  const { connector, reveal } = await requireConnector(deps, principal, projectId, connectorId, 'dataconnector.read');
  return presentDataConnector(deps, connector, reveal);
}

/** Paths update_mask may name (camelCase or snake_case). Read-only ones are accepted and ignored (§1.2). */
const MASK_PATHS = new Set([
  'displayName',
  'status',
  'events',
  'labels',
  'httpConfig',
  'httpConfig.url',
  'httpConfig.headers',
  'httpConfig.signatureSecret',
  'deliveryConfig',
  'deliveryConfig.maxConcurrency',
  'deliveryConfig.maxRate',
  'deliveryConfig.labelFilters',
  'deliveryConfig.paused',
]);
const READ_ONLY_PATHS = new Set([
  'name',
  'type',
  'createTime',
  'updateTime',
  // Set by :rotateSecret only (extensions §X3); a mask made from every field of a read names it.
  'httpConfig.previousSignatureSecretExpireTime',
]);

function parseMask(mask: Set<string> | null): Set<string> | null {
  if (mask === null) return null;
  const out = new Set<string>();
  for (const raw of mask) {
    const path = camelPath(raw);
    if (MASK_PATHS.has(path)) out.add(path);
    else if (!READ_ONLY_PATHS.has(path) && !/Config$/.test(path)) {
      throw badRequest(`update_mask: unknown field "${raw}" (allowed: ${[...MASK_PATHS].join(', ')})`);
    }
  }
  return out;
}

/**
 * The delivery controls after a write (extensions §X4): `base` with the keys `input` gives (and, with a mask, the
 * mask names) checked and put in, key by key; labelFilters given replaces the filters whole. Throws a 400 naming the
 * field before anything is written.
 */
function mergeDeliveryConfig(
  base: DeliveryConfig,
  input: DeliveryConfigInput,
  mask: Set<string> | null,
): DeliveryConfig {
  const wants = (key: string, value: unknown) =>
    value !== undefined && (mask === null || mask.has('deliveryConfig') || mask.has(`deliveryConfig.${key}`));
  const out: DeliveryConfig = { ...base };
  if (wants('maxConcurrency', input.maxConcurrency)) out.maxConcurrency = checkMaxConcurrency(input.maxConcurrency);
  if (wants('maxRate', input.maxRate)) out.maxRate = checkMaxRate(input.maxRate);
  if (wants('labelFilters', input.labelFilters)) out.labelFilters = checkLabelFilters(input.labelFilters);
  if (wants('paused', input.paused)) out.paused = checkPaused(input.paused);
  return out;
}

/**
 * PATCH (contract §4.9): with a mask only the listed fields apply, otherwise every field present. httpConfig and
 * deliveryConfig are merged key by key, headers and label filters replaced whole, events and labels replaced; status
 * follows §6.6. A new signature secret ends a rotation's overlap (extensions §X3).
 */
export async function updateDataConnector(
  deps: Deps,
  principal: Principal,
  projectId: string,
  connectorId: string,
  input: DataConnectorInput,
  rawMask: Set<string> | null,
): Promise<DataConnector> {
  const { connector: current } = await requireConnector(
    deps,
    principal,
    projectId,
    connectorId,
    'dataconnector.update',
  );
  checkType(input);
  const mask = parseMask(rawMask);
  const http = checkHttpConfig(input.httpConfig);
  const wants = (path: string, value: unknown) =>
    value !== undefined &&
    (mask === null || mask.has(path) || (path.startsWith('httpConfig.') && mask.has('httpConfig')));
  // Validate everything before touching anything.
  const displayName = wants('displayName', input.displayName) ? checkDisplayName(input.displayName) : undefined;
  const events = wants('events', input.events) ? checkEvents(input.events) : undefined;
  const labels = wants('labels', input.labels) ? checkLabels(input.labels) : undefined;
  const url = wants('httpConfig.url', http.url)
    ? (checkUrlForWrite(http.url, deps.config.allowPrivateEndpoints), http.url as string)
    : undefined;
  const headers = wants('httpConfig.headers', http.headers) ? checkHeaders(http.headers) : undefined;
  const secret = wants('httpConfig.signatureSecret', http.signatureSecret)
    ? checkSecret(http.signatureSecret)
    : undefined;
  const deliveryInput = checkDeliveryConfigObject(input.deliveryConfig);
  // Checked against the stored controls now; merged again into the row read under the lock below.
  mergeDeliveryConfig(deliveryConfigOf(current), deliveryInput, mask);
  const status = wants('status', input.status) ? input.status : undefined;
  if (status !== undefined) initialState(status); // 400 for SYSTEM_DISABLED or unknown values, before any write
  // Enabling: whatever an earlier drop left of the queue goes first, outside the transaction (normally nothing).
  const leftover =
    status === 'ACTIVE' && current.status !== 'ACTIVE'
      ? await dropQueue(deps.store, connectorId, dropLogTime(deps))
      : 0;

  const result = await deps.store.transaction(async (tx) => {
    const before = await reload(tx, projectId, connectorId);
    const next: DataConnectorRecord = { ...before };
    if (displayName !== undefined) next.displayName = displayName;
    if (events !== undefined) next.events = events;
    if (labels !== undefined) next.labels = labels;
    if (url !== undefined) next.url = url;
    if (headers !== undefined) next.headers = headers;
    next.deliveryConfig = mergeDeliveryConfig(deliveryConfigOf(before), deliveryInput, mask);
    if (secret !== undefined) {
      const current = before.signatureSecretSealed === '' ? '' : deps.secretBox.open(before.signatureSecretSealed);
      // An immediate switch, as before rotation existed: it ends any overlap (extensions §X3), so no push is signed
      // with an older secret after it. The secret repeated (a form or a tool that sends the whole httpConfig back)
      // switches nothing and leaves a running overlap alone.
      if (secret !== current) {
        next.signatureSecretSealed = secret === '' ? '' : deps.secretBox.seal(secret);
        Object.assign(next, NO_PREVIOUS_SECRET);
      }
    }
    let dropped = leftover;
    let transitioned = false;
    let disabling = false;
    if (status !== undefined) {
      const t = applyStatusWrite(before, status);
      next.status = t.status;
      next.failingSince = t.failingSince;
      transitioned = t.changed;
      disabling = t.dropQueue;
      // The queue of the disabled connector must not reach the endpoint once it is enabled: what is still there
      // goes in this transaction.
      if (t.changed && t.status === 'ACTIVE') dropped += await dropRest(tx, before.id, dropLogTime(deps));
    }
    const changed = JSON.stringify({ ...next, updateTime: 0 }) !== JSON.stringify({ ...before, updateTime: 0 });
    if (changed) {
      next.updateTime = nowMicros(deps);
      await tx.dataConnectors.update(next);
    }
    const connector = changed ? next : before;
    // The answer is built before the commit: if building it failed, nothing would be left behind.
    return {
      connector,
      view: presentDataConnector(deps, connector, true),
      from: before.status,
      transitioned: changed && transitioned,
      disabling,
      dropped,
    };
  });
  if (!result.transitioned) return result.view;
  const dropped = result.disabling ? await dropQueueAfter(deps, projectId, connectorId) : result.dropped;
  logTransition(deps, result.connector, result.from, principal, dropped);
  // Its dataConnector alerts (extensions §X5) resolve when it is enabled again.
  if (result.connector.status === 'ACTIVE') deps.alerts.connectorEnabled(result.connector);
  return result.view;
}

/** DELETE: the connector, its queue and its metrics go together. */
export async function deleteDataConnector(
  deps: Deps,
  principal: Principal,
  projectId: string,
  connectorId: string,
): Promise<void> {
  await requireConnector(deps, principal, projectId, connectorId, 'dataconnector.delete');
  await deps.store.transaction(async (tx) => {
    const c = await reload(tx, projectId, connectorId);
    await tx.connectorMetrics.deleteByConnector(c.id);
    await tx.dataConnectors.delete(c.id);
  });
  const dropped = await dropQueueAfter(deps, projectId, connectorId);
  await deleteConnectorLog(deps, projectId, connectorId);
  deps.logger.info(
    {
      connector: dataConnectorName(projectId, connectorId),
      by: `${principal.kind}:${principal.id}`,
      droppedDeliveries: dropped,
    },
    'data connector deleted',
  );
}

/** :sync (contract §6.7): queues, in one transaction, the latest event of each type of each device; answers at once. */
export async function syncDataConnector(
  deps: Deps,
  principal: Principal,
  projectId: string,
  connectorId: string,
): Promise<number> {
  await requireConnector(deps, principal, projectId, connectorId, 'dataconnector.update');
  return deps.store.transaction(async (tx) => {
    const c = await reload(tx, projectId, connectorId);
    if (c.status !== 'ACTIVE')
      throw badRequest(`data connector is ${c.status}; only an ACTIVE connector can be synchronised`);
    return enqueueSync(tx, c, EVENT_TYPES, nowMicros(deps));
  });
}

/** Per-minute success and error counts of the last 3 hours (`:metricsHistory`), under the rules of `:metrics`. */
export async function getDataConnectorMetricsHistory(
  deps: Deps,
  principal: Principal,
  projectId: string,
  connectorId: string,
): Promise<MetricsHistoryBucket[]> {
  const { connector } = await requireConnector(deps, principal, projectId, connectorId, 'dataconnector.read');
  return readConnectorMetricsHistory(deps.store, connector.id, nowMicros(deps));
}

export async function getDataConnectorMetrics(
  deps: Deps,
  principal: Principal,
  projectId: string,
  connectorId: string,
): Promise<ConnectorMetrics> {
  const { connector } = await requireConnector(deps, principal, projectId, connectorId, 'dataconnector.read');
  return readConnectorMetrics(deps.store, connector.id, nowMicros(deps));
}
