// What a data connector's custom headers may be (contract §3.9), checked when the connector is written and
// honoured again when a push is sent, so the two can never disagree.

/**
 * Names the service sets itself, hop-by-hop ones, and `expect`, which the HTTP client (undici) refuses: refused
 * case-insensitively when a connector is written, and never sent even if an older store holds one.
 */
export const RESERVED_PUSH_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'x-service-signature',
  // The previous secret's signature during a rotation's overlap (extensions §X3).
  'x-service-signature-previous',
  // What queued a delivery (extensions §X2): set by the service for SYNC, RESEND, REPLAY and TEST pushes only.
  'x-sensorcloud-delivery-trigger',
  // The transition of an alert's webhook notification (extensions §X5): set by the service.
  'x-sensorcloud-alert-transition',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'proxy-authenticate',
  'proxy-authorization',
]);

/** An HTTP token (RFC 9110 §5.6.2): what a header name may be. */
export const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** What the HTTP client refuses in a header value at send time: anything but tab, space, visible ASCII and Latin-1. */
export const NOT_SENDABLE_IN_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
