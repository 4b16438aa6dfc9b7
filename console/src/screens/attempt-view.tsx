// How a delivery's state and one push attempt are shown (the delivery page's timeline, a test push's result, the
// connector page's last failure): when, how long, the outcome class, the HTTP status, the error and the first KiB
// of the answer, all as text.
import { Badge } from '../components.tsx';
import { type Attempt, durationText, outcomeText, stateInfo } from '../deliveries.ts';
import { formatTime } from '../format.ts';

export function DeliveryStateBadge({ state }: { state: string }) {
  const s = stateInfo(state);
  return <Badge kind={s?.[1] ?? 'muted'}>{s?.[2] ?? state}</Badge>;
}

/** "HTTP 503", or "no HTTP answer" (a transport failure, or a blocked address that made no request). */
export const statusText = (a: Attempt) => (a.httpStatus > 0 ? `HTTP ${a.httpStatus}` : 'no HTTP answer');

/** The answer's body in a pre block, marked when the service kept only its first 1,024 bytes. */
export function ResponseSnippet({ attempt }: { attempt: Attempt }) {
  if (attempt.responseBody === '')
    return <p class="muted small snippet-none">{attempt.httpStatus > 0 ? 'The answer had no body.' : null}</p>;
  return (
    <figure class="snippet">
      <figcaption class="muted small">
        Answer{attempt.responseBodyTruncated ? ' — truncated: the first 1,024 bytes' : ''}
      </figcaption>
      <pre tabIndex={0}>
        {attempt.responseBody}
        {attempt.responseBodyTruncated ? <span class="truncated">… (truncated)</span> : null}
      </pre>
    </figure>
  );
}

/**
 * One attempt: its time, duration, outcome, status, error and answer. `sameAnswerAs` names an earlier attempt whose
 * answer was the same, which is then not repeated (a failing endpoint often answers the same page each time).
 */
export function AttemptView({
  attempt,
  heading,
  sameAnswerAs,
}: {
  attempt: Attempt;
  heading?: string;
  sameAnswerAs?: string;
}) {
  const ok = attempt.outcome === 'SUCCESS';
  return (
    <div class="attempt">
      <div class="attempt-line">
        {heading ? <strong>{heading}</strong> : null}
        <span>{formatTime(attempt.attemptTime)}</span>
        <Badge kind={ok ? 'ok' : 'danger'}>{outcomeText(attempt.outcome)}</Badge>
        <span class={ok ? undefined : 'text-danger'}>{statusText(attempt)}</span>
        <span class="muted">took {durationText(attempt.duration)}</span>
      </div>
      {/* For an HTTP error the service's error line is the status the line above shows already. */}
      {attempt.error && attempt.error !== statusText(attempt) ? <p class="attempt-error">{attempt.error}</p> : null}
      {attempt.outcome === 'BLOCKED_ADDRESS' ? (
        <p class="muted small">
          No request was made: the endpoint's address is one the service may not push to (a private or reserved
          network).
        </p>
      ) : null}
      {sameAnswerAs ? (
        <p class="muted small">Answer: the same as {sameAnswerAs}.</p>
      ) : (
        <ResponseSnippet attempt={attempt} />
      )}
    </div>
  );
}
