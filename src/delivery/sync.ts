// `:sync` (contract §6.7): the latest event of each type of each device of the project, queued for one connector.
import type { DataConnectorRecord, NewDelivery } from '../store/contract/connector-repos.ts';
import type { Repos } from '../store/contract/store.ts';
import { buildPushBody, matchesLabelFilters } from './push-body.ts';

/**
 * `:sync` (contract §6.7), inside the caller's transaction: queues for this connector only the latest stored
 * event of each type of each device now in the project, filter and label filters (§X4) applied, labels as they are now, each row with
 * its own 12-hour window from `now`. Returns the number of rows queued.
 *
 * Merged into the connector's last `:sync` while a row of that one is still queued and the connector's filter and
 * labels are the same: then it queues nothing. Those rows carry the latest events as of that sync, and every event
 * since has been queued for the connector as it happened (it has been ACTIVE throughout: disabling drops the queue),
 * so the receiver gets the same latest state either way. Otherwise 100 calls on 500 devices × 2 types queued 100,000
 * rows. The caller holds the connector's row lock (getForUpdate), so two at once, in any processes, take turns and
 * the second sees the first's rows.
 */
export async function enqueueSync(
  tx: Repos,
  connector: DataConnectorRecord,
  eventTypes: readonly string[],
  now: number,
): Promise<number> {
  const filters = connector.deliveryConfig?.labelFilters ?? {};
  const scope = JSON.stringify({ events: connector.events, labels: connector.labels, filters });
  const last = await tx.deliveries.lastSync(connector.id);
  if (last !== null && last.scope === scope && (await tx.deliveries.syncQueued(last))) return 0;
  const types = connector.events.length === 0 ? eventTypes : eventTypes.filter((t) => connector.events.includes(t));
  let queued = 0;
  let firstId = Infinity;
  let lastId = -Infinity;
  const done = async () => {
    if (queued > 0)
      await tx.deliveries.recordSync({ connectorId: connector.id, firstId, lastId, enqueueTime: now, scope });
    return queued;
  };
  // A page of devices at a time (the same page of devices for both reads, in one transaction), so a large project
  // never holds all its devices and latest events in memory at once.
  for (let after = ''; ; ) {
    const range = { after, limit: SYNC_DEVICES_PER_PAGE };
    const devices = new Map((await tx.devices.listByProject(connector.projectId, range)).map((d) => [d.id, d]));
    const rows: NewDelivery[] = [];
    for (const e of await tx.events.latestPerType(connector.projectId, types, range)) {
      const device = devices.get(e.deviceId);
      if (!device || !matchesLabelFilters(connector, device.labels)) continue;
      // The stored body is the event's JSON, exactly as it was pushed when it happened.
      rows.push({
        connectorId: connector.id,
        eventId: e.id,
        body: buildPushBody(e.body, device, connector.labels),
        enqueueTime: now,
        dueTime: now,
        trigger: 'SYNC',
      });
    }
    if (rows.length > 0) {
      // insert, not add: the ids make the sync's record.
      for (const id of await tx.deliveries.insert(rows)) {
        firstId = Math.min(firstId, id);
        lastId = Math.max(lastId, id);
      }
    }
    queued += rows.length;
    if (devices.size < SYNC_DEVICES_PER_PAGE) return done();
    after = [...devices.keys()].pop()!;
  }
}

/** Devices whose latest events one page of `:sync` reads. */
const SYNC_DEVICES_PER_PAGE = 200;
