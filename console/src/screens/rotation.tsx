// While a signature secret rotation's overlap runs (extensions §X3): until when, and what the connector's page says.
// Small and in the first load; the rotation dialog itself (rotate-secret.tsx) is loaded when it is opened.
import { formatTime, spanText } from '../format.ts';

export interface Connector {
  name: string;
  httpConfig: { signatureSecret: string; previousSignatureSecretExpireTime?: string };
}

/** The end of the overlap under way (RFC 3339), or null when none runs at `now` (ms). */
export function rotationEnd(c: Connector, now = Date.now()): string | null {
  const until = c.httpConfig.previousSignatureSecretExpireTime ?? '';
  return until !== '' && Date.parse(until) > now ? until : null;
}

/** "Tue 3 Jun 2025, 12:00:00 (in 23 h 59 min)". */
export const endText = (until: string, now = Date.now()) =>
  `${formatTime(until)} (in ${spanText(Date.parse(until) - now)})`;

/** What the connector's page says while an overlap runs. */
export function RotationNotice({ until, now }: { until: string; now: number }) {
  return (
    <div class="rotation-notice" role="status" data-testid="rotation">
      <strong>Signature secret rotation under way.</strong> The previous secret is accepted until{' '}
      <strong data-testid="rotation-end">{endText(until, now)}</strong>: until then every push also carries{' '}
      <code>X-Service-Signature-Previous</code>, signed with it, beside <code>X-Service-Signature</code> signed with the
      new secret.
    </div>
  );
}
