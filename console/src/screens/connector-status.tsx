// What each data connector status means and how to recover (contract §6.6), shown wherever a status appears, and
// the "Paused" chip of a paused connector (extensions §X4).
import { Badge } from '../components.tsx';

export const STATUS_TEXT: Record<string, { kind: string; label: string; meaning: string }> = {
  ACTIVE: { kind: 'ok', label: 'Active', meaning: 'Every matching event is pushed to the endpoint.' },
  USER_DISABLED: {
    kind: 'muted',
    label: 'Disabled',
    meaning:
      'Disabled by a user. Nothing is queued or sent; events from this time are not sent later. Enable it to resume.',
  },
  SYSTEM_DISABLED: {
    kind: 'danger',
    label: 'Disabled by the system',
    meaning:
      'Every push failed for 5 days without a single success, so the service stopped this connector and dropped its queue. ' +
      'Fix the endpoint (URL, certificate, or a receiver answering 2xx within 10 s), then press Enable; events from the disabled time are not sent.',
  },
};

export function StatusBadge({ status }: { status: string }) {
  const s = STATUS_TEXT[status] ?? { kind: 'muted', label: status, meaning: '' };
  return <Badge kind={s.kind}>{s.label}</Badge>;
}

/**
 * The status chip, or "Paused" (extensions §X4) in place of "Active": a paused connector keeps its status, queues its
 * events and pushes none. A disabled connector that is paused too shows both.
 */
export function ConnectorStatusBadges({ status, paused }: { status: string; paused: boolean }) {
  if (!paused) return <StatusBadge status={status} />;
  if (status === 'ACTIVE') return <Badge kind="paused">Paused</Badge>;
  return (
    <>
      <StatusBadge status={status} /> <Badge kind="paused">Paused</Badge>
    </>
  );
}
