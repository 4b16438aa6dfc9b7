// The emulator's :publish use case (contract §5.3): validate and normalise the body, then emit through the one
// event pipeline, which stores it, moves `reported` forward, queues it and (after commit) streams it.
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { normalizePublishBody } from '../domain/event-data.ts';
import { findProjectDevice, requireEmulated } from './devices.ts';
import type { EmittedEvent } from '../events/types.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import { requireProject } from './access.ts';
import type { Principal } from '../auth/principal.ts';

/**
 * Publishes one event `{"<eventType>": {…}}` for a device, whatever its kind (heartbeats and the demo use this
 * directly). The event time is the data's updateTime after defaulting. Throws 400 on a bad body, 404 when the
 * device is gone by the time the transaction runs.
 */
export function publishEvent(
  deps: Deps,
  device: Pick<DeviceRecord, 'id' | 'projectId'>,
  body: unknown,
): Promise<EmittedEvent> {
  return publishInTransaction(deps, device.projectId, device.id, body, false);
}

/** POST /projects/{p}/devices/{d}:publish: emulator.update on the project, emulated devices only. */
export async function publishAsCaller(
  deps: Deps,
  principal: Principal,
  projectId: string,
  deviceId: string,
  body: unknown,
): Promise<EmittedEvent> {
  await requireProject(deps, principal, projectId, 'emulator.update');
  return publishInTransaction(deps, projectId, deviceId, body, true);
}

// The device is read once, inside the transaction (the hot path of :publish): it is current, and a bad body
// or a wrong device just rolls back an empty transaction.
function publishInTransaction(
  deps: Deps,
  projectId: string,
  deviceId: string,
  body: unknown,
  emulatedOnly: boolean,
): Promise<EmittedEvent> {
  return deps.events.transaction(
    async (tx, emit) => {
      const device = await findProjectDevice(tx, projectId, deviceId);
      if (emulatedOnly) requireEmulated(device);
      const { eventType, data, timestamp } = normalizePublishBody(device.type, body, nowMicros(deps));
      return emit(device, eventType, data, timestamp);
    },
    { devices: [deviceId] },
  );
}
