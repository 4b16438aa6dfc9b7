// Event history of one device (contract §4.7): inclusive time window (default the last 24 h), optional event
// type filter, newest first, keyset paging on (timestamp, eventId).
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { EVENT_TYPES } from '../domain/device-types.ts';
import { badRequest } from '../domain/errors.ts';
import { MAX_PAGE_BYTES, pageRequest, toPage } from '../domain/paging.ts';
import { parseTimestamp } from '../domain/time.ts';
import type { DeviceEvent, DeviceEventList, EventHistoryParams } from '../wire/events.ts';
import { findProjectDevice } from './devices.ts';
import { requireProject } from './access.ts';
import type { Principal } from '../auth/principal.ts';

export const DEFAULT_HISTORY_WINDOW_MICROS = 24 * 3600 * 1_000_000;

/** Returns the stored events (as served) and the next page token. */
export async function listDeviceEvents(
  deps: Deps,
  principal: Principal,
  projectId: string,
  deviceId: string,
  params: EventHistoryParams,
): Promise<DeviceEventList> {
  await requireProject(deps, principal, projectId, 'device.read');
  await findProjectDevice(deps.store, projectId, deviceId);

  const eventTypes = [...new Set(params.eventTypes ?? [])].sort();
  for (const t of eventTypes)
    if (!(EVENT_TYPES as readonly string[]).includes(t)) throw badRequest(`eventTypes: unknown event type "${t}"`);
  // The token carries the window it was issued for, so later pages keep the first page's default bounds even
  // though "now" has moved; it is only valid with the same raw filters.
  const filters = JSON.stringify([eventTypes, params.startTime ?? '', params.endTime ?? '']);
  const page = pageRequest(params, filters);
  let startTime: number;
  let endTime: number;
  let before: [number, string] | null = null;
  if (page.after) {
    const [ts, id, start, end] = page.after;
    if (typeof ts !== 'number' || typeof id !== 'string' || typeof start !== 'number' || typeof end !== 'number')
      throw badRequest('invalid pageToken');
    before = [ts, id];
    startTime = start;
    endTime = end;
  } else {
    const now = nowMicros(deps);
    endTime = params.endTime !== undefined ? parseTimestamp(params.endTime, 'endTime') : now;
    startTime =
      params.startTime !== undefined
        ? parseTimestamp(params.startTime, 'startTime')
        : now - DEFAULT_HISTORY_WINDOW_MICROS;
    if (startTime > endTime) throw badRequest('startTime must not be after endTime');
  }

  const rows = await deps.store.events.listByDevice({
    deviceId,
    eventTypes,
    startTime,
    endTime,
    before,
    limit: page.pageSize + 1,
    maxBytes: MAX_PAGE_BYTES,
  });
  const { items, nextPageToken } = toPage(
    rows,
    page,
    (r) => [r.timestamp, r.id, startTime, endTime],
    filters,
    (r) => r.body.length,
  );
  return { events: items.map((r) => JSON.parse(r.body) as DeviceEvent), nextPageToken };
}
