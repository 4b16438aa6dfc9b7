// The recovery actions of a data connector (extensions §X2), for roles with dataconnector.update: a test push (any
// status; its result at once), a replay of a time window (active connectors; the window and the number of events it
// holds are shown before anything is sent) and the resend of one delivery (active connectors).
import { useState } from 'preact/hooks';
import { api, idOf } from '../api.ts';
import { ErrorText, Field, FieldError, Notice, useAction } from '../components.tsx';
import { connectorPath, type Delivery, deliveryHref } from '../deliveries.ts';
import { countReplayWindow, type WindowCount } from '../replay-count.ts';
import { EVENT_TYPES, formatTime, spanText } from '../format.ts';
import { localInputValue } from '../history.ts';
import { AttemptView, DeliveryStateBadge } from './attempt-view.tsx';
import { STATUS_TEXT } from './connector-status.tsx';

/** Why resend and replay are not offered for a connector in this status, or null when they are. */
export function writeBlockedReason(status: string): string | null {
  if (status === 'ACTIVE') return null;
  const label = STATUS_TEXT[status]?.label ?? status;
  return `Resend and replay need an active connector; this one is ${label.toLowerCase()}. Enable it first (a test push works in any status).`;
}

interface Connector {
  name: string;
  displayName: string;
  status: string;
  events: string[];
  deliveryConfig?: { labelFilters?: Record<string, string> };
}

/** A test push's result: the delivery's state and its one attempt. */
export function TestResult({ delivery }: { delivery: Delivery }) {
  const attempt = delivery.attempts?.[0];
  return (
    <div class={delivery.state === 'DELIVERED' ? 'test-result ok' : 'test-result bad'} role="status">
      <div class="attempt-line">
        <DeliveryStateBadge state={delivery.state} />
        <strong>
          {delivery.state === 'DELIVERED'
            ? 'The endpoint accepted the test push.'
            : 'The test push failed: the endpoint did not accept it.'}
        </strong>
        <a href={deliveryHref(delivery.name)}>Open this delivery</a>
      </div>
      {attempt ? <AttemptView attempt={attempt} /> : null}
    </div>
  );
}

export function TestPushPanel(props: {
  projectId: string;
  connector: Connector;
  onSent: () => void;
  onClose: () => void;
}) {
  const c = props.connector;
  const [eventType, setEventType] = useState(c.events[0] ?? 'temperature');
  const [result, setResult] = useState<Delivery | null>(null);
  const action = useAction();
  const base = connectorPath(props.projectId, idOf(c.name));
  return (
    <form
      id="test-push"
      class="card"
      aria-labelledby="test-push-h"
      ref={action.form}
      onSubmit={async (e) => {
        e.preventDefault();
        setResult(null);
        await action.run(async () => {
          const res = await api<{ delivery: Delivery }>('POST', `${base}:test`, { eventType });
          setResult(res.delivery);
          props.onSent();
        });
      }}
    >
      <h2 id="test-push-h">Send a test push</h2>
      <p class="muted small">
        Sends one example event of the chosen type, from a synthetic device, to this connector's endpoint at once:
        signed and with its headers, like a real push, in any status. It is not retried, not counted in the connector's
        figures, and is listed here with the trigger “Test push”.
      </p>
      <div class="row-form">
        <Field label="Event type">
          {(id) => (
            <select id={id} value={eventType} onChange={(e) => setEventType((e.target as HTMLSelectElement).value)}>
              {EVENT_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </Field>
        <button type="submit" class="primary" disabled={action.busy}>
          {action.busy ? 'Sending…' : 'Send test push'}
        </button>
        <button type="button" onClick={props.onClose}>
          Close
        </button>
      </div>
      <ErrorText error={action.error} />
      {result ? <TestResult delivery={result} /> : null}
    </form>
  );
}

const events = (n: number) => `${n.toLocaleString()} event${n === 1 ? '' : 's'}`;

/** How many events the replay will send, when the console could tell. */
function toSend(count: WindowCount | null): number | null {
  if (count?.kind !== 'exact') return null;
  return count.delivered === null ? null : count.count - count.delivered;
}

function CountText({ count, onlyUndelivered }: { count: WindowCount; onlyUndelivered: boolean }) {
  const limit =
    'The service refuses a window that holds more than its replay limit (100,000 unless the operator changed it) and says how many it holds; nothing is sent then.';
  if (count.kind === 'exact') {
    const from = `counted from the history of ${count.devices} device${count.devices === 1 ? '' : 's'}`;
    if (count.count === 0)
      return (
        <p class="replay-count">
          <strong data-testid="replay-count">No event</strong> in this window ({from}): there is nothing to replay.
        </p>
      );
    if (!onlyUndelivered)
      return (
        <p class="replay-count">
          <strong data-testid="replay-count">{events(count.count)}</strong> to push again ({from}).
        </p>
      );
    if (count.delivered === null)
      return (
        <p class="replay-count">
          <strong data-testid="replay-count">At most {events(count.count)}</strong> in this window ({from}); those
          already delivered to this connector are skipped.
        </p>
      );
    const n = count.count - count.delivered;
    return (
      <p class="replay-count">
        <strong data-testid="replay-count">{n === 0 ? 'No event' : events(n)}</strong> to push again:{' '}
        {events(count.count)} in this window ({from}), {count.delivered.toLocaleString()} of them delivered to this
        connector already.{n === 0 ? ' There is nothing to replay.' : ''}
      </p>
    );
  }
  if (count.kind === 'over')
    return (
      <p class="replay-count">
        <strong data-testid="replay-count">More than {events(count.atLeast)}</strong> in this window
        {onlyUndelivered ? ' (before those delivered already are skipped)' : ''}. {limit}
      </p>
    );
  return (
    <p class="replay-count">
      <strong data-testid="replay-count">Not counted here</strong>: the project has more than {count.devices} devices.{' '}
      {limit}
    </p>
  );
}

export function ReplayPanel(props: {
  projectId: string;
  connector: Connector;
  onClose: () => void;
  onReplayed: () => void;
}) {
  const c = props.connector;
  // The last hour, to whole minutes (the input's precision): the end is the next minute, so events of this one are in.
  const nextMinute = Math.ceil((Date.now() + 1) / 60_000) * 60_000;
  const [start, setStart] = useState(localInputValue(new Date(nextMinute - 3600_000)));
  const [end, setEnd] = useState(localInputValue(new Date(nextMinute)));
  const [onlyUndelivered, setOnlyUndelivered] = useState(true);
  const [allTypes, setAllTypes] = useState(true);
  const [types, setTypes] = useState<string[]>([]);
  const [review, setReview] = useState<{ start: Date; end: Date; count: WindowCount | null } | null>(null);
  const [replayed, setReplayed] = useState<number | null>(null);
  const action = useAction({ startTime: 'start', endTime: 'end', eventTypes: 'types' });
  const base = connectorPath(props.projectId, idOf(c.name));
  const offered = c.events.length > 0 ? c.events : EVENT_TYPES;
  const chosen = allTypes ? [] : types;
  const reset = () => {
    setReview(null);
    setReplayed(null);
  };

  const startReview = async () => {
    const s = new Date(start);
    const e = new Date(end);
    if (Number.isNaN(s.getTime())) return action.fail('start', 'Enter the start of the window.');
    if (Number.isNaN(e.getTime())) return action.fail('end', 'Enter the end of the window.');
    if (s >= e) return action.fail('end', 'The end must be after the start.');
    if (!allTypes && types.length === 0) return action.fail('types', 'Choose at least one event type.');
    setReplayed(null);
    setReview({ start: s, end: e, count: null });
    await action.run(async () => {
      const count = await countReplayWindow(props.projectId, c, s, e, chosen, onlyUndelivered);
      setReview({ start: s, end: e, count });
    });
  };
  const replay = async () => {
    if (!review) return;
    await action.run(async () => {
      const res = await api<{ replayedCount: number }>('POST', `${base}:replay`, {
        startTime: review.start.toISOString(),
        endTime: review.end.toISOString(),
        onlyUndelivered,
        ...(chosen.length > 0 ? { eventTypes: chosen } : {}),
      });
      setReplayed(res.replayedCount);
      setReview(null);
      props.onReplayed();
    });
  };

  return (
    <form
      id="replay"
      class="card form-card replay"
      aria-labelledby="replay-h"
      ref={action.form}
      onInput={(e) => {
        action.onInput(e);
        if (review && !action.busy) reset();
      }}
      onSubmit={(e) => {
        e.preventDefault();
        void (review?.count ? replay() : startReview());
      }}
    >
      <div>
        <h2 id="replay-h">Replay a time window</h2>
        <p class="muted small">
          Pushes again every event of this project whose time lies in the window (start included, end excluded) and that
          this connector's filters accept, with its original event id, through the queue and the usual retries: how to
          recover a receiver's outage or a time the connector was disabled. Events are kept for 31 days.
        </p>
      </div>
      <div class="grid-form">
        <Field label="Start (your local time)" error={action.fieldError('start')}>
          {(id, described, invalid) => (
            <input
              id={id}
              name="start"
              type="datetime-local"
              aria-describedby={described}
              aria-invalid={invalid}
              value={start}
              onInput={(e) => setStart((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <Field label="End (your local time)" error={action.fieldError('end')}>
          {(id, described, invalid) => (
            <input
              id={id}
              name="end"
              type="datetime-local"
              aria-describedby={described}
              aria-invalid={invalid}
              value={end}
              onInput={(e) => setEnd((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
      </div>
      <label class="check-label">
        <input
          type="checkbox"
          name="onlyUndelivered"
          checked={onlyUndelivered}
          onChange={() => setOnlyUndelivered(!onlyUndelivered)}
        />{' '}
        Only events not delivered to this connector yet (the window must lie within the delivery log's retention, 72
        hours by default)
      </label>
      <fieldset class="field" aria-describedby={action.fieldError('types') ? 'types-error' : undefined}>
        <legend>Event types</legend>
        <label class="check-label">
          <input type="radio" name="types-mode" checked={allTypes} onChange={() => setAllTypes(true)} />{' '}
          {c.events.length > 0 ? `Every type this connector pushes (${c.events.join(', ')})` : 'Every type'}
        </label>
        <label class="check-label">
          <input type="radio" name="types-mode" checked={!allTypes} onChange={() => setAllTypes(false)} /> Only these
          types:
        </label>
        <FieldError id="types-error" text={action.fieldError('types')} />
        <div class="check-grid">
          {offered.map((t) => (
            <label key={t} class="check-label">
              <input
                type="checkbox"
                name="types"
                disabled={allTypes}
                checked={!allTypes && types.includes(t)}
                onChange={() => setTypes(types.includes(t) ? types.filter((x) => x !== t) : [...types, t])}
              />{' '}
              {t}
            </label>
          ))}
        </div>
      </fieldset>
      {review ? (
        <div class="replay-review" aria-live="polite">
          <p>
            Replay to <strong>{c.displayName || idOf(c.name)}</strong> every event from{' '}
            <strong>{formatTime(review.start.toISOString())}</strong> to{' '}
            <strong>{formatTime(review.end.toISOString())}</strong> (
            {spanText(review.end.getTime() - review.start.getTime())})
            {chosen.length > 0 ? ` of the types ${chosen.join(', ')}` : ''}
            {onlyUndelivered ? ', only those not delivered to it yet' : ''}.
          </p>
          {review.count ? (
            <CountText count={review.count} onlyUndelivered={onlyUndelivered} />
          ) : (
            <p class="muted">Counting the events in this window…</p>
          )}
        </div>
      ) : null}
      <ErrorText error={action.error} />
      {replayed !== null ? (
        <Notice>
          Replayed: {replayed.toLocaleString()} event{replayed === 1 ? '' : 's'} queued as new deliveries (trigger
          “Replay”), in the order of the history.{' '}
          <a href={`${base}/deliveries?trigger=REPLAY`}>Show the replayed deliveries</a>
        </Notice>
      ) : null}
      <div class="form-actions">
        {review?.count ? (
          <>
            <button
              type="submit"
              class="primary"
              disabled={
                action.busy ||
                (review.count.kind === 'exact' && (review.count.count === 0 || toSend(review.count) === 0))
              }
            >
              {review.count.kind === 'exact'
                ? `Replay ${onlyUndelivered && toSend(review.count) === null ? 'at most ' : ''}${events(toSend(review.count) ?? review.count.count)}`
                : 'Replay'}
            </button>
            <button type="button" onClick={reset}>
              Change the window
            </button>
          </>
        ) : (
          <button type="submit" class="primary" disabled={action.busy}>
            {action.busy ? 'Counting…' : 'Review the replay'}
          </button>
        )}
        <button type="button" onClick={props.onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

/** Resend one delivery: the same event again, as a new delivery; the answer names it. */
export function useResend(projectId: string, connectorId: string) {
  const action = useAction();
  const resend = (deliveryId: string) =>
    action.run(async () => {
      const res = await api<{ delivery: Delivery }>(
        'POST',
        `${connectorPath(projectId, connectorId)}/deliveries/${deliveryId}:resend`,
        {},
      );
      action.setNotice(
        <>
          Resent: the event was queued again as a new delivery.{' '}
          <a href={deliveryHref(res.delivery.name)}>Open the new delivery</a>
        </>,
      );
    });
  return { action, resend };
}
