// Every alert transition on the project's event stream (extensions §X5): an event of type alertChanged whose
// targetName is the alert's and whose data is {"alertChanged": <the alert without notifications>}. Handed to the
// pipeline's subscribers after the transition commits (the cluster relay forwards it to the other processes' streams
// as any event); never stored in the history, never pushed to data connectors.
import type { EventPipeline } from '../events/pipeline.ts';
import type { EmittedEvent } from '../events/types.ts';
import { formatTimestamp } from '../domain/time.ts';
import type { AlertRecord } from '../store/contract/alerting.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import { ALERT_CHANGED } from '../domain/device-types.ts';
import { presentAlertSummary } from './present.ts';

/** Tells the streams of an alert's transition; `device` is the alert's device, when it is a device's. */
export type AnnounceAlert = (alert: AlertRecord, device: DeviceRecord | null) => void;

export function createAlertAnnouncer(events: Pick<EventPipeline, 'relay'>, eventId: () => string): AnnounceAlert {
  return (alert, device) => {
    const event = {
      eventId: eventId(),
      targetName: alert.targetName,
      eventType: ALERT_CHANGED,
      data: { [ALERT_CHANGED]: presentAlertSummary(alert) },
      timestamp: formatTimestamp(alert.updateTime),
    };
    // A connector's alert has no device: the streams' project filter reads this one; their device filters match none.
    const owner: DeviceRecord = device ?? {
      id: alert.targetId,
      projectId: alert.projectId,
      type: '',
      productNumber: '',
      labels: {},
      reported: {},
      latestEvents: {},
      emulated: false,
      createTime: alert.createTime,
      updateTime: alert.updateTime,
    };
    const emitted: EmittedEvent = { event, device: owner, timestamp: alert.updateTime, json: JSON.stringify(event) };
    events.relay(emitted);
  };
}
