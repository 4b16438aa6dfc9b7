// `sensorcloud listen`'s forwarding: turns an event from the stream into exactly the request a data connector
// sends (contract §6.2-§6.3) and POSTs it to a local http or https endpoint. The body and the headers are made by
// the delivery engine's own code (buildPushBody, buildPushHeaders), so there is one implementation of the push.
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Agent, request } from 'undici';
import { buildPushBody, type PushDevice } from '../delivery/push-body.ts';
import { buildPushHeaders, pushUserAgent } from '../delivery/push-headers.ts';
import { systemClock } from '../runtime/clock.ts';
import { createIdGenerator } from '../runtime/ids.ts';
import { systemRandom } from '../runtime/random.ts';
import type { ApiClient } from './client.ts';
import { UsageError } from './errors.ts';
import type { ApiEvent } from './event-format.ts';

/** Same deadline as a real push (§6.4): no response headers within 10 s fails the forward. */
export const FORWARD_TIMEOUT_MS = 10_000;
/** The response body is read up to this many bytes and dropped, as the dispatcher does. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface ForwardTarget {
  url: string;
  /** '' = unsigned. */
  signatureSecret: string;
  /** Custom headers, as a connector's httpConfig.headers. */
  headers: Record<string, string>;
  /** The connector's label keys: which device labels go into the body, in this order. */
  labelKeys: string[];
}

export interface ForwardResult {
  eventId: string;
  eventType: string;
  device: string;
  /** HTTP status, or null when no answer came. */
  status: number | null;
  /** From sending until the response headers (or the failure), ms. */
  latencyMs: number;
  error?: string;
}

interface ApiDevice {
  name: string;
  type: string;
  productNumber: string;
  labels: Record<string, string>;
}

/** The device fields a push body reads, from the API's Device (`projects/p/devices/d`). */
export function pushDeviceOf(device: ApiDevice): PushDevice {
  const [, projectId, , id] = device.name.split('/');
  return {
    id: id!,
    projectId: projectId!,
    type: device.type,
    productNumber: device.productNumber,
    labels: device.labels,
  };
}

/** Labels after a labelsChanged event: `{added, modified, removed}` applied in that order. */
export function applyLabelChange(labels: Record<string, string>, data: unknown): Record<string, string> {
  const change = (data ?? {}) as {
    added?: Record<string, string>;
    modified?: Record<string, string>;
    removed?: string[];
  };
  const next = { ...labels, ...change.added, ...change.modified };
  for (const key of change.removed ?? []) delete next[key];
  return next;
}

export interface Forwarder {
  forward(event: ApiEvent): Promise<ForwardResult>;
  close(): Promise<void>;
}

export interface ForwarderOptions {
  /** Extra PEM CAs to trust for an https endpoint (beside node's roots and NODE_EXTRA_CA_CERTS). */
  caFile?: string;
  /** Accept any certificate (a self-signed one on localhost). */
  insecure?: boolean;
}

export async function createForwarder(
  client: ApiClient,
  target: ForwardTarget,
  options: ForwarderOptions = {},
): Promise<Forwarder> {
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    throw new UsageError(`--forward-to must be a URL, got "${target.url}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError('--forward-to must be an http:// or https:// URL');
  let ca: string[] | undefined;
  if (options.caFile) {
    try {
      ca = [...rootCertificates, readFileSync(options.caFile, 'utf8')];
    } catch (err) {
      throw new UsageError(`--ca-file: ${(err as Error).message}`);
    }
  }
  // undici (as the dispatcher) rather than fetch: fetch adds headers of its own that a real push does not carry.
  const agent = new Agent({
    connect: { ...(ca ? { ca } : {}), rejectUnauthorized: options.insecure !== true },
    headersTimeout: FORWARD_TIMEOUT_MS,
    bodyTimeout: FORWARD_TIMEOUT_MS,
  });
  const userAgent = pushUserAgent();
  const ids = createIdGenerator(systemClock, systemRandom);
  const devices = new Map<string, Promise<PushDevice>>();

  /**
   * The device as the engine saw it when it queued the event: fetched at its first event, then kept current by
   * applying each labelsChanged event's change (the body carries the labels as they are after it, §5.4), in stream
   * order, so quick successive changes do not race a fetch.
   */
  const deviceOf = (event: ApiEvent): Promise<PushDevice> => {
    let device = devices.get(event.targetName);
    if (device && event.eventType === 'labelsChanged')
      device = device.then((d) => ({ ...d, labels: applyLabelChange(d.labels, event.data) }));
    else if (!device) device = client.call<ApiDevice>('GET', event.targetName).then(pushDeviceOf);
    devices.set(event.targetName, device);
    device.catch(() => devices.delete(event.targetName));
    return device;
  };

  return {
    async forward(event) {
      const base = { eventId: event.eventId, eventType: event.eventType, device: event.targetName };
      let device: PushDevice;
      try {
        device = await deviceOf(event);
      } catch (err) {
        return { ...base, status: null, latencyMs: 0, error: `device not readable: ${(err as Error).message}` };
      }
      // The stream's event JSON is the stored event's JSON: re-serialising the parsed object gives the same bytes.
      const body = buildPushBody(JSON.stringify(event), device, target.labelKeys);
      const start = performance.now();
      const headers = buildPushHeaders(target, body, userAgent, Math.floor(Date.now() / 1000), () => ids.next());
      try {
        // Redirects are not followed (undici 7 follows none without an interceptor), as for a real push.
        const res = await request(url, { method: 'POST', headers, body, dispatcher: agent });
        const latencyMs = performance.now() - start;
        let received = 0;
        for await (const chunk of res.body) {
          received += (chunk as Buffer).length;
          if (received > MAX_RESPONSE_BYTES) break;
        }
        return { ...base, status: res.statusCode, latencyMs };
      } catch (err) {
        const e = err as { code?: string; message?: string; cause?: { code?: string } };
        return {
          ...base,
          status: null,
          latencyMs: performance.now() - start,
          error: e.code ?? e.cause?.code ?? e.message ?? String(err),
        };
      }
    },
    async close() {
      await agent.close();
    },
  };
}
