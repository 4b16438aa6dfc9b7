// The headers of a push request (contract §6.2-§6.3), shared by the delivery engine's dispatcher and
// `sensorcloud listen`, so a local forward carries exactly what a data connector sends. Pure: the attempt's start
// and the jti source are passed in.
import { readFileSync } from 'node:fs';
import { RESERVED_PUSH_HEADERS } from '../domain/push-headers.ts';
import { signingInput, signWith } from './signing.ts';
import type { PushTarget } from './types.ts';

let cachedPackageVersion: string | undefined;

/** The service version from package.json, read once. */
export function packageVersion(): string {
  if (cachedPackageVersion === undefined) {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    cachedPackageVersion = pkg.version ?? '0.0.0';
  }
  return cachedPackageVersion;
}

/** `SensorCloud-DataConnector/<version>`: the default User-Agent of every push. */
export function pushUserAgent(version: string = packageVersion()): string {
  return `SensorCloud-DataConnector/${version}`;
}

/** The header naming what queued a delivery other than a published event (extensions §X2). */
export const TRIGGER_HEADER = 'X-Sensorcloud-Delivery-Trigger';

/** The transition an alert's webhook notification tells of (extensions §X5). */
export const ALERT_TRANSITION_HEADER = 'X-Sensorcloud-Alert-Transition';

/** The signature of every push (contract §6.3), with the connector's secret. */
export const SIGNATURE_HEADER = 'X-Service-Signature';

/**
 * During a rotation's overlap (extensions §X3): the same claims as X-Service-Signature (iat, jti, checksums), signed
 * with the previous secret, so that a receiver that knows only the secret before the rotation accepts the push too.
 */
export const PREVIOUS_SIGNATURE_HEADER = 'X-Service-Signature-Previous';

/**
 * Content-Type and User-Agent, then each custom header verbatim (reserved and hop-by-hop names skipped, the trigger
 * header among them, so a connector can neither set nor spoof it; a custom User-Agent replaces the default), then
 * `X-Sensorcloud-Delivery-Trigger` for a SYNC, RESEND, REPLAY or TEST delivery (or `X-Sensorcloud-Alert-Transition`
 * for an alert's webhook notification), then `X-Service-Signature` when the
 * target has a secret, and `X-Service-Signature-Previous` when it has a previous one too. `nextJti` is called only
 * when the request is signed, once: both signatures carry the same claims.
 */
export function buildPushHeaders(
  target: Pick<PushTarget, 'headers' | 'signatureSecret' | 'previousSignatureSecret' | 'trigger' | 'alertTransition'>,
  body: Uint8Array,
  userAgent: string,
  iatSeconds: number,
  nextJti: () => string,
): Record<string, string> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'User-Agent': userAgent };
  for (const name in target.headers) {
    const lower = name.toLowerCase();
    if (RESERVED_PUSH_HEADERS.has(lower)) continue;
    if (lower === 'user-agent') delete headers['User-Agent'];
    headers[name] = target.headers[name]!;
  }
  if (target.trigger !== undefined && target.trigger !== 'EVENT') headers[TRIGGER_HEADER] = target.trigger;
  if (target.alertTransition !== undefined) headers[ALERT_TRANSITION_HEADER] = target.alertTransition;
  if (target.signatureSecret !== '') {
    const input = signingInput(body, iatSeconds, nextJti());
    headers[SIGNATURE_HEADER] = signWith(input, target.signatureSecret);
    // Only alongside the new secret's: a rotation always leaves a current secret, and a PATCH ends the overlap.
    if (target.previousSignatureSecret)
      headers[PREVIOUS_SIGNATURE_HEADER] = signWith(input, target.previousSignatureSecret);
  }
  return headers;
}
