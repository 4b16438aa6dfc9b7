// `:sync` (contract §6.7): the latest event of each type of each device of the project, queued for one connector.
import type { DataConnectorRecord, NewDelivery } from '../store/connector-repos.ts';
import type { Repos } from '../store/store.ts';
import { buildPushBody } from './push-body.ts';

/**
 * `:sync` (contract §6.7), inside the caller's transaction: queues for this connector only the latest stored
 * event of each type of each device now in the project, filter applied, labels as they are now, each row with
 * its own 12-hour window from `now`. Returns the number of rows queued.
 */
export async function enqueueSync(tx: Repos, connector: DataConnectorRecord, eventTypes: readonly string[], now: number): Promise<number> {
  const types = connector.events.length === 0 ? eventTypes : eventTypes.filter((t) => connector.events.includes(t));
  let queued = 0;
  // A page of devices at a time (the same page of devices for both reads, in one transaction), so a large project
  // never holds all its devices and latest events in memory at once.
  for (let after = ''; ;) {
    const range = { after, limit: SYNC_DEVICES_PER_PAGE };
    const devices = new Map((await tx.devices.listByProject(connector.projectId, range)).map((d) => [d.id, d]));
    const rows: NewDelivery[] = [];
    for (const e of await tx.events.latestPerType(connector.projectId, types, range)) {
      const device = devices.get(e.deviceId);
      if (!device) continue;
      // The stored body is the event's JSON, exactly as it was pushed when it happened.
      rows.push({ connectorId: connector.id, eventId: e.id, body: buildPushBody(e.body, device, connector.labels), enqueueTime: now, dueTime: now });
    }
    if (rows.length > 0) await tx.deliveries.add(rows);
    queued += rows.length;
    if (devices.size < SYNC_DEVICES_PER_PAGE) return queued;
    after = [...devices.keys()].pop()!;
  }
}

/** Devices whose latest events one page of `:sync` reads. */
const SYNC_DEVICES_PER_PAGE = 200;

