// `:test` (extensions §X2): one push of an example event from a synthetic device, at once, through the engine's own
// attempt path (DeliveryNotices.pushOnce: the same guard, trust store, timeout, signing and headers as a queued push),
// whatever the connector's status and events filter; not queued, not retried, not in `:metrics`. The result is kept
// in the delivery log as a TEST delivery, DELIVERED or FAILED, with its one attempt.
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { DEVICE_TYPES, EVENT_TYPES, LABELS_CHANGED, SENSOR_COMMON_EVENTS } from '../domain/device-types.ts';
import { normalizePublishBody } from '../domain/event-data.ts';
import { unavailable, badRequest } from '../domain/errors.ts';
import { dataConnectorName, deviceName } from '../domain/names.ts';
import { formatTimestamp } from '../domain/time.ts';
import { loggedAttempt } from '../delivery/delivery-log.ts';
import { DeliveryEngineNotRunning } from '../delivery/handoff.ts';
import { series } from '../delivery/metrics.ts';
import { buildPushBody, type PushDevice } from '../delivery/push-body.ts';
import type { AttemptOutcome } from '../delivery/types.ts';
import type { DeliveryLogRecord, LogOutcome } from '../store/contract/delivery-log.ts';
import type { Delivery, TestPushBody } from '../wire/deliveries.ts';
import type { DeviceEvent } from '../wire/events.ts';
import type { Principal } from '../auth/principal.ts';
import { requireConnector } from './data-connectors.ts';
import { concreteConnectorId, presentDelivery } from './deliveries.ts';

/** The device a test push comes from: no device has this id (real ids are 20 characters of base32hex, `emu` + 20). */
export const TEST_DEVICE_ID = 'sensorcloud-test-device';
/** Its labels; a push carries those the connector names, as for a real device. */
export const TEST_DEVICE_LABELS: Readonly<Record<string, string>> = { name: 'Sensor Cloud test device' };
export const DEFAULT_TEST_EVENT_TYPE = 'touch';

/** What a test push sends for each type: a publish body, normalised as a published event is (§5.2 key order). */
const EXAMPLE_INPUTS: Readonly<Record<string, Record<string, unknown>>> = {
  touch: {},
  temperature: { value: 21.5 },
  objectPresent: { state: 'PRESENT' },
  humidity: { temperature: 21.5, relativeHumidity: 45 },
  objectPresentCount: { total: 42 },
  touchCount: { total: 7 },
  waterPresent: { state: 'NOT_PRESENT' },
  networkStatus: { signalStrength: 85, rssi: -70 },
  batteryStatus: { percentage: 100 },
  connectionStatus: { connection: 'ETHERNET', available: ['ETHERNET', 'CELLULAR'] },
  // A MAC address of no vendor (locally administered) and an address of the documentation range (RFC 5737).
  ethernetStatus: { macAddress: '02:00:00:00:00:01', ipAddress: '192.0.2.10' },
  cellularStatus: { signalStrength: 80 },
  co2: { ppm: 450 },
  pressure: { pascal: 101325 },
  motion: { state: 'MOTION_DETECTED' },
  deskOccupancy: { state: 'OCCUPIED' },
  contact: { state: 'OPEN' },
  probeWireStatus: { state: 'FOUR_WIRE' },
};

/** The synthetic device's type: the one named after the event type, a touch sensor for what every sensor emits. */
function deviceTypeFor(eventType: string): string {
  if (DEVICE_TYPES[eventType]?.events.includes(eventType)) return eventType;
  if (eventType === LABELS_CHANGED || (SENSOR_COMMON_EVENTS as readonly string[]).includes(eventType)) return 'touch';
  return Object.keys(DEVICE_TYPES).find((t) => DEVICE_TYPES[t]!.events.includes(eventType))!;
}

/** The example event of a type, as the pipeline would have stored it (envelope keys in §5.1 order). */
export function exampleEvent(
  projectId: string,
  eventType: string,
  eventId: string,
  now: number,
): { event: DeviceEvent; device: PushDevice } {
  const type = deviceTypeFor(eventType);
  const data =
    eventType === LABELS_CHANGED
      ? { added: { ...TEST_DEVICE_LABELS }, modified: {}, removed: [] }
      : normalizePublishBody(type, { [eventType]: EXAMPLE_INPUTS[eventType] }, now).data;
  const event: DeviceEvent = {
    eventId,
    targetName: deviceName(projectId, TEST_DEVICE_ID),
    eventType,
    data,
    timestamp: formatTimestamp(now),
  };
  const device: PushDevice = {
    id: TEST_DEVICE_ID,
    projectId,
    type,
    productNumber: DEVICE_TYPES[type]!.productNumber,
    labels: TEST_DEVICE_LABELS,
  };
  return { event, device };
}

export async function testDataConnector(
  deps: Deps,
  principal: Principal,
  projectId: string,
  dc: string,
  body: TestPushBody,
): Promise<Delivery> {
  const { connector } = await requireConnector(
    deps,
    principal,
    projectId,
    concreteConnectorId(dc),
    'dataconnector.update',
  );
  const eventType = body.eventType ?? DEFAULT_TEST_EVENT_TYPE;
  if (!(EVENT_TYPES as readonly string[]).includes(eventType))
    throw badRequest(`eventType: unknown event type "${eventType}" (valid: ${EVENT_TYPES.join(', ')})`);

  const startMs = deps.clock.now();
  const start = Math.floor(startMs * 1000);
  const { event, device } = exampleEvent(projectId, eventType, deps.ids.next(), start);
  const pushBody = buildPushBody(JSON.stringify(event), device, connector.labels);
  let outcome: AttemptOutcome;
  try {
    outcome = await deps.delivery.pushOnce(connector, pushBody, 'TEST');
  } catch (err) {
    if (err instanceof DeliveryEngineNotRunning)
      throw unavailable('the delivery engine does not run in this process: a test push needs it');
    throw err;
  }
  const end = nowMicros(deps);
  const logged: Omit<LogOutcome, 'id'> = {
    connectorId: connector.id,
    eventId: event.eventId,
    eventType,
    deviceId: TEST_DEVICE_ID,
    trigger: 'TEST',
    createTime: start,
    state: outcome.ok ? 'DELIVERED' : 'FAILED',
    // As the engine logs a queued push's attempt.
    attempt: loggedAttempt(outcome, startMs),
    nextAttemptTime: null,
    updateTime: end,
  };
  const id = await deps.store.transaction(async (tx) => {
    const id = await tx.deliveryLog.recordTest(logged);
    await tx.connectorMetrics.addCounters({ [series.recoveryRequests('test')]: 1 });
    return id;
  });
  deps.logger.info(
    {
      connector: dataConnectorName(projectId, connector.id),
      eventType,
      outcome: logged.attempt.outcome,
      status: logged.attempt.httpStatus,
      by: `${principal.kind}:${principal.id}`,
    },
    'data connector: test push',
  );
  const record: DeliveryLogRecord = {
    id,
    connectorId: logged.connectorId,
    eventId: logged.eventId,
    eventType,
    deviceId: TEST_DEVICE_ID,
    trigger: 'TEST',
    state: logged.state,
    attemptCount: 1,
    createTime: start,
    updateTime: end,
    nextAttemptTime: null,
    attempts: [logged.attempt],
  };
  return presentDelivery(projectId, record);
}
