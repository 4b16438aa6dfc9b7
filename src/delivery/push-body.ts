// The push body (contract §6.2) and the queue rows of an event: built once, at enqueue, and sent unchanged on
// every attempt. Shared with `sensorcloud listen`, which forwards exactly what a connector pushes.
import { carriesLabels } from '../domain/labels.ts';
import type { EmittedEvent } from '../events/types.ts';
import { deliveryConfigOf, type DataConnectorRecord, type NewDelivery } from '../store/contract/connector-repos.ts';
import type { DeviceRecord } from '../store/contract/records.ts';

const PING = 'ping';

/** Whether the connector forwards this event type: an empty filter forwards every type; pings never. */
export function forwards(connector: Pick<DataConnectorRecord, 'events'>, eventType: string): boolean {
  if (eventType === PING) return false;
  return connector.events.length === 0 || connector.events.includes(eventType);
}

/**
 * Whether the device carries every label of the connector's label filters (extensions §X4; a value '' = the key is
 * present): decided when an event is published, with the device's labels then.
 */
export function matchesLabelFilters(
  connector: Pick<DataConnectorRecord, 'deliveryConfig'>,
  labels: Readonly<Record<string, string>>,
): boolean {
  return carriesLabels(labels, deliveryConfigOf(connector).labelFilters);
}

/** What a push body reads of the device (also built by `sensorcloud listen` from the API's Device). */
export type PushDevice = Pick<DeviceRecord, 'id' | 'projectId' | 'type' | 'productNumber' | 'labels'>;

/**
 * The push body (contract §6.2): compact JSON `{event, labels, metadata}`, UTF-8 without \u escapes, around the
 * event's own JSON (`JSON.stringify(event)`, as the pipeline stores it). `labels` holds the device labels named by
 * the connector, in the connector's order, absent keys left out.
 */
export function buildPushBody(eventJson: string, device: PushDevice, labelKeys: readonly string[]): Buffer {
  const labels: Record<string, string> = {};
  for (const key of labelKeys) {
    if (Object.hasOwn(device.labels, key)) labels[key] = device.labels[key]!;
  }
  const metadata = {
    deviceId: device.id,
    projectId: device.projectId,
    deviceType: device.type,
    productNumber: device.productNumber,
  };
  return Buffer.from(
    `{"event":${eventJson},"labels":${JSON.stringify(labels)},"metadata":${JSON.stringify(metadata)}}`,
    'utf8',
  );
}

/**
 * Queue rows for one event and the given connectors, each with its connector (`targets[i]` for `rows[i]`). Bodies are
 * shared between connectors asking for the same labels; with one connector, the usual case, no map is made.
 */
export function rowsFor(
  connectors: DataConnectorRecord[],
  { event, json }: EmittedEvent,
  device: DeviceRecord,
  now: number,
): { rows: NewDelivery[]; targets: DataConnectorRecord[] } {
  const bodies = connectors.length > 1 ? new Map<string, Buffer>() : null;
  const rows: NewDelivery[] = [];
  const targets: DataConnectorRecord[] = [];
  for (const c of connectors) {
    if (!forwards(c, event.eventType) || !matchesLabelFilters(c, device.labels)) continue;
    let body: Buffer | undefined;
    if (bodies === null) body = buildPushBody(json, device, c.labels);
    else {
      const key = JSON.stringify(c.labels);
      body = bodies.get(key);
      if (!body) bodies.set(key, (body = buildPushBody(json, device, c.labels)));
    }
    rows.push({ connectorId: c.id, eventId: event.eventId, body, enqueueTime: now, dueTime: now });
    targets.push(c);
  }
  return { rows, targets };
}
