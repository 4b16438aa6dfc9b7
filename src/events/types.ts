// The event envelope (contract §5.1) and what the pipeline hands to consumers and subscribers.
import type { DeviceRecord } from '../store/contract/records.ts';
import type { DeviceEvent } from '../wire/events.ts';

/** The envelope on the wire; key order is part of the contract (wire/events.ts). */
export type { DeviceEvent };

export interface EmittedEvent {
  event: DeviceEvent;
  /** The device after this event was applied (reported updated, labels as they are now). */
  device: DeviceRecord;
  /** Event time in microseconds. */
  timestamp: number;
  /** JSON.stringify(event): the event as stored, pushed and streamed, serialised once. */
  json: string;
}
