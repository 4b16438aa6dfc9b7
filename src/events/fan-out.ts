// Event stream fan-out (contract §4.8): one pipeline subscriber feeds every open stream. Streams are indexed by
// project, so an emitted event costs one map lookup plus a set check per open stream of its own project, and
// each event is serialised and framed at most once however many streams receive it: the streams write the same
// bytes, so a message buffered for 500 slow readers is held once, not 500 times.
import { parseLabelFilter, type LabelFilter } from '../domain/labels.ts';
import type { ProjectStreamQuery } from '../wire/events.ts';
import type { EventPipeline } from './pipeline.ts';
import type { EmittedEvent } from './types.ts';

/** A stream's filters (contract §4.6 semantics): values ORed within a filter, filters ANDed; null = any. */
export interface StreamFilter {
  projectId: string;
  deviceIds: ReadonlySet<string> | null;
  deviceTypes: ReadonlySet<string> | null;
  productNumbers: ReadonlySet<string> | null;
  eventTypes: ReadonlySet<string> | null;
  /** All must hold; value null = the key is present with any value. */
  labelFilters: ReadonlyArray<LabelFilter>;
}

/** A stream query's filters, as the API takes them. */
export type StreamFilterInput = Omit<ProjectStreamQuery, 'pingInterval'>;

/** One stream message, `{"result":{"event":…}}`, with its bytes for each framing made once, when first asked. */
export class StreamMessage {
  private ndjson: Buffer | null = null;
  private sse: Buffer | null = null;
  constructor(readonly json: string) {}

  /** The bytes on the wire: an NDJSON line, or an SSE `data:` message. */
  frame(sse: boolean): Buffer {
    if (sse) return (this.sse ??= Buffer.from(`data: ${this.json}\n\n`));
    return (this.ndjson ??= Buffer.from(`${this.json}\n`));
  }
}

/** Receives the message of each matching event; must not throw or block. */
export type StreamSink = (message: StreamMessage, emitted: EmittedEvent) => void;

export interface FanOut {
  /** Registers a stream; returns the function that removes it (idempotent). */
  add(filter: StreamFilter, sink: StreamSink): () => void;
  /** Open registrations (all projects). */
  size(): number;
  /** Stops listening to the pipeline. */
  close(): void;
}

const setOf = (values: string[] | undefined): ReadonlySet<string> | null =>
  values && values.length > 0 ? new Set(values) : null;

/** Builds a filter from query values; device ids may also be given as `projects/{p}/devices/{d}`. */
export function compileStreamFilter(projectId: string, input: StreamFilterInput): StreamFilter {
  return {
    projectId,
    deviceIds: setOf(input.deviceIds?.map((d) => d.slice(d.lastIndexOf('/') + 1))),
    deviceTypes: setOf(input.deviceTypes),
    productNumbers: setOf(input.productNumbers),
    eventTypes: setOf(input.eventTypes),
    labelFilters: (input.labelFilters ?? []).map(parseLabelFilter),
  };
}

export function matchesStreamFilter(filter: StreamFilter, emitted: EmittedEvent): boolean {
  const { device, event } = emitted;
  if (device.projectId !== filter.projectId) return false;
  if (filter.eventTypes && !filter.eventTypes.has(event.eventType)) return false;
  if (filter.deviceIds && !filter.deviceIds.has(device.id)) return false;
  if (filter.deviceTypes && !filter.deviceTypes.has(device.type)) return false;
  if (filter.productNumbers && !filter.productNumbers.has(device.productNumber)) return false;
  for (const lf of filter.labelFilters) {
    if (!Object.hasOwn(device.labels, lf.key)) return false;
    if (lf.value !== null && device.labels[lf.key] !== lf.value) return false;
  }
  return true;
}

/** The stream message of an event (contract §4.8), built by hand so the event JSON is reused verbatim. */
export const resultMessage = (eventJson: string): string => `{"result":{"event":${eventJson}}}`;

export function createFanOut(events: EventPipeline, onSinkError: (err: unknown) => void = () => {}): FanOut {
  interface Entry {
    filter: StreamFilter;
    sink: StreamSink;
  }
  const byProject = new Map<string, Set<Entry>>();
  let count = 0;

  const unsubscribe = events.subscribe((emitted) => {
    const entries = byProject.get(emitted.device.projectId);
    if (!entries) return;
    let message: StreamMessage | null = null;
    for (const entry of entries) {
      if (!matchesStreamFilter(entry.filter, emitted)) continue;
      message ??= new StreamMessage(resultMessage(emitted.json));
      try {
        entry.sink(message, emitted);
      } catch (err) {
        onSinkError(err);
      }
    }
  });

  return {
    add(filter, sink) {
      const entry: Entry = { filter, sink };
      let entries = byProject.get(filter.projectId);
      if (!entries) byProject.set(filter.projectId, (entries = new Set()));
      entries.add(entry);
      count++;
      let removed = false;
      return () => {
        if (removed) return;
        removed = true;
        count--;
        entries.delete(entry);
        if (entries.size === 0 && byProject.get(filter.projectId) === entries) byProject.delete(filter.projectId);
      };
    },
    size: () => count,
    close: () => {
      unsubscribe();
    },
  };
}
