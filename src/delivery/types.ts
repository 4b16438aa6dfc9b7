// The seam between the delivery engine (queue, retry, status machine, metrics) and the transport (HTTPS,
// TLS, SSRF guard, signing). Outcomes are data (DESIGN: "delivery outcomes are data").

/** Where and how to push; read from the connector at each attempt (contract §6.1). */
export interface PushTarget {
  url: string;
  headers: Record<string, string>;
  /** '' = unsigned. */
  signatureSecret: string;
  /**
   * The connector is failing or suspect: its attempt is a probe, and probes to one address together hold at most
   * half of its connections, so dead paths on a receiver host never take the connections of its healthy ones.
   */
  probe?: boolean;
}

export type AttemptReason =
  | 'ack' // 2xx
  | 'http_status' // non-2xx, 3xx included (redirects are never followed)
  | 'timeout' // no response headers within 10 s
  | 'tls' // certificate or handshake failure
  | 'connection' // refused, reset, DNS failure …
  | 'refused_address'; // SSRF guard (contract §6.10)

export interface AttemptOutcome {
  ok: boolean;
  reason: AttemptReason;
  /** HTTP status when one was received. */
  status?: number;
  /** From attempt start until response headers arrived or the attempt failed (10 s on timeout), in ms. */
  responseTimeMs: number;
  /** Parsed Retry-After (seconds) of a 429/503 answer. */
  retryAfterSeconds?: number;
  /** Human-readable reason, for logs; never contains the signature secret. */
  message: string;
}

export interface Dispatcher {
  /** One push attempt of the stored body bytes to the target. Never throws: failures are outcomes. */
  send(target: PushTarget, body: Buffer): Promise<AttemptOutcome>;
  close(): Promise<void>;
}
