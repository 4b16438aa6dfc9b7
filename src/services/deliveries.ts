// The delivery log (extensions §X1) and `:resend` (§X2): a connector's deliveries, or every connector's of the project
// (`-`), newest first with their filters; one delivery with its attempts; one delivery's event queued again.
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { formatSpan } from '../config.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { dataConnectorName, deviceName, parseDeviceName } from '../domain/names.ts';
import { pageRequest, toPage } from '../domain/paging.ts';
import { formatDuration, formatTimestamp, parseTimestamp } from '../domain/time.ts';
import { series } from '../delivery/metrics.ts';
import { buildPushBody } from '../delivery/push-body.ts';
import {
  DELIVERY_STATES,
  DELIVERY_TRIGGERS,
  type DeliveryLogFilter,
  type DeliveryLogRecord,
  type DeliveryState,
  type DeliveryTrigger,
  type LoggedAttempt,
} from '../store/contract/delivery-log.ts';
import type {
  Delivery,
  DeliveryAttempt,
  DeliveryList,
  DeliveryListParams,
  DeliverySummary,
} from '../wire/deliveries.ts';
import type { Principal } from '../auth/principal.ts';
import { requireProject } from './access.ts';
import { reload, requireConnector } from './data-connectors.ts';
import { readsOverDeviceHistories } from './history-reads.ts';

/** The `{dc}` that stands for every connector of the project; accepted by the log's list alone. */
export const EVERY_CONNECTOR = '-';

// ---- presentation ----

export const deliveryName = (projectId: string, connectorId: string, id: number) =>
  `${dataConnectorName(projectId, connectorId)}/deliveries/${id}`;

function presentAttempt(a: LoggedAttempt): DeliveryAttempt {
  return {
    attemptTime: formatTimestamp(a.time),
    duration: formatDuration(a.durationMicros / 1_000_000),
    outcome: a.outcome,
    httpStatus: a.httpStatus,
    responseBody: a.responseBody,
    responseBodyTruncated: a.responseBodyTruncated,
    error: a.error,
  };
}

/** A delivery as listed (no `attempts` key, §X1). Its connector is in the project the caller named. */
export function presentDeliverySummary(projectId: string, d: DeliveryLogRecord): DeliverySummary {
  return {
    name: deliveryName(projectId, d.connectorId, d.id),
    eventId: d.eventId,
    eventType: d.eventType,
    targetName: deviceName(projectId, d.deviceId),
    trigger: d.trigger,
    state: d.state,
    attemptCount: d.attemptCount,
    createTime: formatTimestamp(d.createTime),
    updateTime: formatTimestamp(d.updateTime),
    nextAttemptTime: d.nextAttemptTime === null ? '' : formatTimestamp(d.nextAttemptTime),
  };
}

/** A delivery read alone: with its attempts, oldest first. */
export function presentDelivery(projectId: string, d: DeliveryLogRecord): Delivery {
  return { ...presentDeliverySummary(projectId, d), attempts: (d.attempts ?? []).map(presentAttempt) };
}

// ---- parsing ----

/** A delivery id of the path: the queue row's id. Anything else matches nothing: 404 (contract §1.4). */
export function parseDeliveryId(raw: string): number {
  const id = /^[1-9]\d{0,15}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(id)) throw notFound('delivery not found');
  return id;
}

/** `-` is the list's alone (§X1); elsewhere a 400, as the wildcard project is (contract §1.10). */
export function concreteConnectorId(raw: string): string {
  if (raw === EVERY_CONNECTOR)
    throw badRequest("the wildcard data connector '-' is accepted only when listing deliveries; name the connector");
  return raw;
}

function parseStates(raw: readonly string[] | undefined): DeliveryState[] | undefined {
  if (raw === undefined || raw.length === 0) return undefined;
  const states = new Set<DeliveryState>();
  for (const s of raw) {
    if (!(DELIVERY_STATES as readonly string[]).includes(s))
      throw badRequest(`state: unknown delivery state "${s}" (valid: ${DELIVERY_STATES.join(', ')})`);
    states.add(s as DeliveryState);
  }
  return [...states].sort();
}

function parseTrigger(raw: string | undefined): DeliveryTrigger | undefined {
  if (raw === undefined) return undefined;
  if (!(DELIVERY_TRIGGERS as readonly string[]).includes(raw))
    throw badRequest(`trigger: unknown delivery trigger "${raw}" (valid: ${DELIVERY_TRIGGERS.join(', ')})`);
  return raw as DeliveryTrigger;
}

function parseDevice(raw: string | undefined, projectId: string): string | undefined {
  if (raw === undefined) return undefined;
  const parsed = parseDeviceName(raw, projectId);
  if (parsed === null) throw badRequest('device must be a device id or projects/{p}/devices/{d}');
  if (parsed.project !== projectId) throw badRequest(`device: ${raw} is not a device of projects/${projectId}`);
  return parsed.device;
}

// ---- use cases ----

/** GET …/dataconnectors/{dc}/deliveries (`-`: every connector of the project), newest first, keyset paging on the id. */
export async function listDeliveries(
  deps: Deps,
  principal: Principal,
  projectId: string,
  dc: string,
  params: DeliveryListParams,
): Promise<DeliveryList> {
  let connectorIds: string[];
  if (dc === EVERY_CONNECTOR) {
    await requireProject(deps, principal, projectId, 'dataconnector.read');
    connectorIds = [];
    for (let after: string | null = null; ; ) {
      const page = await deps.store.dataConnectors.listByProject(projectId, { after, limit: 1000 });
      connectorIds.push(...page.map((c) => c.id));
      if (page.length < 1000) break;
      after = page[page.length - 1]!.id;
    }
  } else {
    const { connector } = await requireConnector(deps, principal, projectId, dc, 'dataconnector.read');
    connectorIds = [connector.id];
  }
  // Everything is checked before the first read of the log.
  const states = parseStates(params.state);
  const trigger = parseTrigger(params.trigger);
  const deviceId = parseDevice(params.device, projectId);
  const startTime = params.startTime === undefined ? undefined : parseTimestamp(params.startTime, 'startTime');
  const endTime = params.endTime === undefined ? undefined : parseTimestamp(params.endTime, 'endTime');
  if (startTime !== undefined && endTime !== undefined && startTime >= endTime)
    throw badRequest('startTime must be before endTime');
  // The token is only valid with the filters it was issued for (contract §1.5).
  const filters = JSON.stringify([
    'deliveries',
    dc,
    states ?? [],
    trigger ?? '',
    params.eventId ?? '',
    deviceId ?? '',
    startTime ?? '',
    endTime ?? '',
  ]);
  const page = pageRequest(params, filters);
  let beforeId: number | undefined;
  if (page.after !== null) {
    const [id] = page.after;
    if (typeof id !== 'number' || !Number.isSafeInteger(id)) throw badRequest('invalid pageToken');
    beforeId = id;
  }
  const filter: DeliveryLogFilter = {
    connectorIds,
    states,
    trigger,
    eventId: params.eventId,
    deviceId,
    startTime,
    endTime,
  };
  if (beforeId !== undefined) filter.beforeId = beforeId;
  const rows =
    connectorIds.length === 0 ? [] : await deps.store.deliveryLog.list(filter, page.pageSize + 1, nowMicros(deps));
  const { items, nextPageToken } = toPage(rows, page, (d) => [d.id], filters);
  return { deliveries: items.map((d) => presentDeliverySummary(projectId, d)), nextPageToken };
}

/** GET …/deliveries/{id}: one delivery with its attempts. */
export async function getDelivery(
  deps: Deps,
  principal: Principal,
  projectId: string,
  dc: string,
  rawId: string,
): Promise<Delivery> {
  const { connector } = await requireConnector(
    deps,
    principal,
    projectId,
    concreteConnectorId(dc),
    'dataconnector.read',
  );
  const id = parseDeliveryId(rawId);
  const delivery = await deps.store.deliveryLog.get(connector.id, id, nowMicros(deps));
  if (delivery === null) throw notFound('delivery not found');
  return presentDelivery(projectId, delivery);
}

const notActive = (status: string, what: string) =>
  badRequest(`data connector is ${status}; only an ACTIVE connector can ${what}`);

/**
 * `:resend` (§X2): the delivery's event, read again from the history, queued as a new delivery (trigger RESEND, the
 * same eventId) with the body built as for a live event, with the device's labels as they are now. It goes through
 * the queue like a `:sync` row: due at once, found by the engine's next claim, retried under the normal rules.
 */
export async function resendDelivery(
  deps: Deps,
  principal: Principal,
  projectId: string,
  dc: string,
  rawId: string,
): Promise<Delivery> {
  const { connector } = await requireConnector(
    deps,
    principal,
    projectId,
    concreteConnectorId(dc),
    'dataconnector.update',
  );
  const id = parseDeliveryId(rawId);
  const original = await deps.store.deliveryLog.get(connector.id, id, nowMicros(deps));
  if (original === null) throw notFound('delivery not found');
  if (original.trigger === 'TEST')
    throw badRequest('a TEST delivery carries an example event, which is not in the event history: use :test again');
  if (connector.status !== 'ACTIVE') throw notActive(connector.status, 'resend');
  const event = await readsOverDeviceHistories(deps.store).find(
    original.eventId,
    original.deviceId,
    original.eventType,
  );
  if (event === null)
    throw badRequest(
      `event ${original.eventId} is no longer in the event history, which keeps events ${formatSpan(deps.config.eventRetentionSeconds)} (SENSORCLOUD_EVENT_RETENTION): it cannot be resent`,
    );

  const resent = await deps.store.transaction(async (tx) => {
    const c = await reload(tx, projectId, connector.id);
    if (c.status !== 'ACTIVE') throw notActive(c.status, 'resend');
    const device = await tx.devices.get(event.deviceId);
    // A device moved to another project takes its labels there: they are not this connector's to receive.
    if (device === null || device.projectId !== projectId)
      throw badRequest(`device ${event.deviceId} is no longer in projects/${projectId}: its events cannot be resent`);
    const now = nowMicros(deps);
    const [newId] = await tx.deliveries.insert([
      {
        connectorId: c.id,
        eventId: event.id,
        body: buildPushBody(event.body, device, c.labels),
        enqueueTime: now,
        dueTime: now,
        trigger: 'RESEND',
      },
    ]);
    await tx.connectorMetrics.addCounters({ [series.recoveryRequests('resend')]: 1 });
    const record: DeliveryLogRecord = {
      id: newId!,
      connectorId: c.id,
      eventId: event.id,
      eventType: event.eventType,
      deviceId: event.deviceId,
      trigger: 'RESEND',
      state: 'PENDING',
      attemptCount: 0,
      createTime: now,
      updateTime: now,
      nextAttemptTime: now,
      attempts: [],
    };
    return record;
  });
  deps.logger.info(
    {
      connector: dataConnectorName(projectId, connector.id),
      delivery: id,
      resentAs: resent.id,
      eventId: resent.eventId,
      by: `${principal.kind}:${principal.id}`,
    },
    'data connector: delivery resent',
  );
  return presentDelivery(projectId, resent);
}
