// What a replay window holds (extensions §X2), counted by the console before it asks for the replay: the events of
// the window the connector's filters accept, from each device's history, and how many of them the delivery log
// shows delivered already. The service decides; this is what the user sees before asking it.
import { api, idOf, listAll, query } from './api.ts';
import { listDeliveries } from './deliveries.ts';

/** What a replay window holds, as counted by the console before it asks for the replay. */
export type WindowCount =
  | {
      kind: 'exact';
      /** Events in the window that the filters accept. */
      count: number;
      devices: number;
      /** With "only undelivered": how many of them have a DELIVERED delivery to the connector (null: not told). */
      delivered: number | null;
    }
  | { kind: 'over'; atLeast: number }
  | { kind: 'uncounted'; devices: number };

/** Above this many events the console stops counting and says "more than". */
export const COUNT_CAP = 10_000;
/** Above this many devices the console does not count (one history read per device). */
export const COUNT_MAX_DEVICES = 200;
/** At most this many pages of DELIVERED deliveries are read to tell which events were delivered. */
const DELIVERED_PAGES = 10;

/**
 * The events of the project whose timestamp is in [start, end) and that the connector's filters accept (its event
 * types, the chosen ones, its label filters), counted from each device's history; with `onlyUndelivered`, also how
 * many of them the log shows delivered to the connector (its DELIVERED deliveries created since `start`: a delivery
 * is made after its event). The service decides; this is what the console shows before asking it.
 */
export async function countReplayWindow(
  projectId: string,
  connector: { name: string; events: string[]; deliveryConfig?: { labelFilters?: Record<string, string> } },
  start: Date,
  end: Date,
  eventTypes: string[],
  onlyUndelivered: boolean,
): Promise<WindowCount> {
  const labelFilters = Object.entries(connector.deliveryConfig?.labelFilters ?? {}).map(([k, v]) =>
    v === '' ? k : `${k}=${v}`,
  );
  const devices = await listAll<{ name: string }>(
    `/projects/${projectId}/devices${query({ label_filters: labelFilters })}`,
    'devices',
    1,
  );
  if (devices.length > COUNT_MAX_DEVICES) return { kind: 'uncounted', devices: COUNT_MAX_DEVICES };
  let types = connector.events;
  if (eventTypes.length > 0) types = types.length === 0 ? eventTypes : types.filter((t) => eventTypes.includes(t));
  if (connector.events.length > 0 && types.length === 0)
    return { kind: 'exact', count: 0, devices: devices.length, delivered: onlyUndelivered ? 0 : null };
  const endMs = end.getTime();
  const ids = new Set<string>();
  const queue = devices.map((d) => idOf(d.name));
  const worker = async () => {
    for (let id = queue.shift(); id !== undefined && ids.size <= COUNT_CAP; id = queue.shift()) {
      let pageToken = '';
      do {
        const page = await api<{ events: { eventId: string; timestamp: string }[]; nextPageToken: string }>(
          'GET',
          `/projects/${projectId}/devices/${id}/events${query({
            eventTypes: types,
            startTime: start.toISOString(),
            endTime: end.toISOString(),
            pageSize: 1000,
            pageToken,
          })}`,
        );
        // The history's end is inclusive; the replay's is not.
        for (const e of page.events) if (Date.parse(e.timestamp) < endMs) ids.add(e.eventId);
        pageToken = page.nextPageToken;
      } while (pageToken !== '' && ids.size <= COUNT_CAP);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  if (ids.size > COUNT_CAP) return { kind: 'over', atLeast: COUNT_CAP };
  if (!onlyUndelivered || ids.size === 0)
    return { kind: 'exact', count: ids.size, devices: devices.length, delivered: onlyUndelivered ? 0 : null };

  const connectorId = idOf(connector.name);
  const delivered = new Set<string>();
  let pageToken = '';
  for (let i = 0; i < DELIVERED_PAGES; i++) {
    const page = await listDeliveries(
      projectId,
      connectorId,
      { states: ['DELIVERED'], startTime: start.toISOString() },
      1000,
      pageToken,
    );
    for (const d of page.deliveries) if (ids.has(d.eventId)) delivered.add(d.eventId);
    pageToken = page.nextPageToken;
    if (pageToken === '') break;
  }
  return {
    kind: 'exact',
    count: ids.size,
    devices: devices.length,
    delivered: pageToken === '' ? delivered.size : null,
  };
}
