// The shape of a push body (contract §6.2): compact JSON `{event, labels, metadata}`. Parse it only after the
// signature was verified against the raw bytes.

export interface PushEvent {
  /** Unique per event: de-duplicate on it. */
  eventId: string;
  /** `projects/<project>/devices/<device>`. */
  targetName: string;
  /** touch, temperature, humidity, networkStatus, labelsChanged, … */
  eventType: string;
  /** `{"<eventType>": {…}}` (labelsChanged: `{added, modified, removed}`). */
  data: Record<string, unknown>;
  /** RFC 3339 UTC: treat it as the event's version, since order is not guaranteed. */
  timestamp: string;
}

export interface PushMetadata {
  deviceId: string;
  projectId: string;
  deviceType: string;
  productNumber: string;
}

export interface PushBody {
  event: PushEvent;
  /** The device labels the connector asked for (its `labels` keys), as they were when the event was queued. */
  labels: Record<string, string>;
  /** The source device; check event.eventType is a device event before reading it (it may change). */
  metadata: PushMetadata;
}
