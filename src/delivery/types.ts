// The seam between the delivery engine (queue, retry, status machine, metrics) and the transport (HTTPS,
// TLS, SSRF guard, signing). Outcomes are data (DESIGN: "delivery outcomes are data").
import type { AttemptOutcomeClass, DeliveryTrigger } from '../store/contract/delivery-log.ts';

/** Where and how to push; read from the connector at each attempt (contract §6.1). */
export interface PushTarget {
  url: string;
  headers: Record<string, string>;
  /** '' = unsigned. */
  signatureSecret: string;
  /**
   * During a rotation's overlap (extensions §X3): the previous secret, which signs X-Service-Signature-Previous with
   * the claims of X-Service-Signature. Absent (or '') otherwise.
   */
  previousSignatureSecret?: string;
  /**
   * The connector is failing or suspect: its attempt is a probe, and probes to one address together hold at most
   * half of its connections, so dead paths on a receiver host never take the connections of its healthy ones.
   */
  probe?: boolean;
  /**
   * What queued the delivery (extensions §X2): SYNC, RESEND, REPLAY and TEST pushes carry it in the
   * X-Sensorcloud-Delivery-Trigger header; absent (or EVENT, a published event) sends no such header.
   */
  trigger?: DeliveryTrigger;
  /**
   * An alert's webhook notification (extensions §X5): the transition it tells of, in the
   * X-Sensorcloud-Alert-Transition header (a reserved name: never taken from the custom headers).
   */
  alertTransition?: string;
}

export type AttemptReason =
  | 'ack' // 2xx
  | 'http_status' // non-2xx, 3xx included (redirects are never followed)
  | 'timeout' // no response headers within 10 s
  | 'tls' // certificate or handshake failure
  | 'connection' // refused, reset, DNS failure …
  | 'refused_address'; // SSRF guard (contract §6.10)

/** The class of an attempt in the delivery log (extensions §X1): kept with the log's records (store/contract). */
export type { AttemptOutcomeClass };

export interface AttemptOutcome {
  ok: boolean;
  reason: AttemptReason;
  /**
   * The delivery log's class of the attempt. Every dispatcher of this folder sets it; an outcome made elsewhere (a
   * test's scripted dispatcher, the engine's guard against a throwing one) may not: read it with outcomeClassOf()
   * (classify.ts), which falls back to what `reason` alone says.
   */
  outcome?: AttemptOutcomeClass;
  /** HTTP status when one was received. */
  status?: number;
  /** From attempt start until response headers arrived or the attempt failed (10 s on timeout), in ms. */
  responseTimeMs: number;
  /** Parsed Retry-After (seconds) of a 429/503 answer. */
  retryAfterSeconds?: number;
  /** Human-readable reason, for logs; never contains the signature secret, nor anything of the response body. */
  message: string;
  /**
   * The start of the answer's body as it arrived, raw: at most its first 1,024 bytes (RESPONSE_SNIPPET_BYTES), in a
   * buffer of its own. Absent when no body byte arrived (no answer, an empty body, a refused address). For the
   * delivery log only (§X1: decoded by decodeResponseBody() where it is shown); never logged.
   */
  responseBody?: Buffer;
  /**
   * Set (true) when `responseBody` is not the whole answer: more than 1,024 bytes arrived, or the body did not arrive
   * in full (cut off at 64 KiB, stalled past the deadline, the connection dropped). Absent means false.
   */
  responseBodyTruncated?: boolean;
}

export interface Dispatcher {
  /** One push attempt of the stored body bytes to the target. Never throws: failures are outcomes. */
  send(target: PushTarget, body: Buffer): Promise<AttemptOutcome>;
  close(): Promise<void>;
}
