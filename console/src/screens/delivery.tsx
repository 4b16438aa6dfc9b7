// Screen 6e: one delivery of a data connector (extensions §X1): what was delivered, its state in words, the attempt
// timeline (time, duration, outcome class, HTTP status, error, the answer's first KiB) and the next attempt; Resend
// (§X2) for roles with dataconnector.update while the connector is active.
import { ActionButton, ErrorText, Loading, Notice, Title, useLoad } from '../components.tsx';
import { connectorPath, getDelivery, stateInfo, triggerText } from '../deliveries.ts';
import { api, idOf } from '../api.ts';
import { formatTime, untilTime } from '../format.ts';
import { reasonFor, usePermissions } from '../permissions.ts';
import { AttemptView, DeliveryStateBadge } from './attempt-view.tsx';
import { StatusBadge } from './connector-status.tsx';
import { DeviceCell, useDeviceNames } from './deliveries.tsx';
import { useResend, writeBlockedReason } from './delivery-actions.tsx';

export function DeliveryPage(props: { projectId: string; connectorId: string; deliveryId: string }) {
  const { projectId, connectorId, deliveryId } = props;
  const perms = usePermissions(`projects/${projectId}`);
  const base = connectorPath(projectId, connectorId);
  const { data, error, reload } = useLoad(async () => {
    const [connector, delivery] = await Promise.all([
      api('GET', base),
      getDelivery(projectId, connectorId, deliveryId),
    ]);
    return { connector, delivery, loadedAt: Date.now() };
  }, [base, deliveryId]);
  const { action, resend } = useResend(projectId, connectorId);
  const names = useDeviceNames(projectId, data ? [idOf(data.delivery.targetName)] : []);

  if (!data)
    return (
      <section>
        <Title>Delivery</Title>
        <div class="toolbar">
          <a class="button" href={`${base}/deliveries`}>
            ← Deliveries
          </a>
        </div>
        {error ? <ErrorText error={error} /> : <Loading />}
      </section>
    );
  const { connector: c, delivery: d } = data;
  const attempts = d.attempts ?? [];
  const canWrite = perms.has('dataconnector.update');
  const blocked =
    d.trigger === 'TEST'
      ? 'A test push carries an example event, which is not in the history: send another test push instead.'
      : writeBlockedReason(c.status);
  const device = idOf(d.targetName);
  const state = stateInfo(d.state);
  return (
    <section>
      <Title
        sub={
          <>
            <DeliveryStateBadge state={d.state} /> <span class="muted small mono">{d.name}</span>
          </>
        }
      >
        {`Delivery of ${d.eventType}`}
      </Title>
      <div class="toolbar">
        <a class="button" href={`${base}/deliveries`}>
          ← Deliveries
        </a>
        {canWrite ? (
          <ActionButton
            class="primary"
            disabled={action.busy || blocked !== null}
            title={blocked ?? 'Push this event again now, as a new delivery'}
            onClick={() => resend(deliveryId)}
          >
            Resend
          </ActionButton>
        ) : null}
        <button type="button" onClick={reload}>
          Refresh
        </button>
        <a class="button" href={`${base}/deliveries?eventId=${encodeURIComponent(d.eventId)}`}>
          Every delivery of this event
        </a>
      </div>
      <ErrorText error={action.error} />
      {action.notice ? <Notice>{action.notice}</Notice> : null}
      {perms.loaded && !canWrite ? (
        <p class="muted small">{reasonFor('dataconnector.update')} Resend is not offered.</p>
      ) : null}
      {canWrite && blocked ? <p class="muted small">{blocked}</p> : null}
      <p class="status-line">
        {state ? `${state[2]}: ${state[3]}.` : d.state}
        {d.nextAttemptTime ? (
          <>
            {' '}
            Next attempt {untilTime(d.nextAttemptTime, data.loadedAt)}, at {formatTime(d.nextAttemptTime)}.
          </>
        ) : null}
      </p>
      <section class="card" aria-labelledby="delivery-h">
        <h2 id="delivery-h">What was delivered</h2>
        <dl class="props">
          <div>
            <dt>Connector</dt>
            <dd>
              <a href={base}>{c.displayName || connectorId}</a> <StatusBadge status={c.status} />
            </dd>
          </div>
          <div>
            <dt>Event</dt>
            <dd>
              <span class="mono break">{d.eventId}</span> <span class="muted">({d.eventType})</span>
            </dd>
          </div>
          <div>
            <dt>Device</dt>
            <dd>
              <DeviceCell projectId={projectId} deviceId={device} name={names.get(device)} />
              {names.get(device) ? <span class="muted small mono"> {device}</span> : null}
            </dd>
          </div>
          <div>
            <dt>Trigger</dt>
            <dd>{triggerText(d.trigger)}</dd>
          </div>
          <div>
            <dt>Attempts</dt>
            <dd>{d.attemptCount}</dd>
          </div>
          <div>
            <dt>Created</dt>
            <dd>{formatTime(d.createTime)}</dd>
          </div>
          <div>
            <dt>Last change</dt>
            <dd>{formatTime(d.updateTime)}</dd>
          </div>
          <div>
            <dt>Next attempt</dt>
            <dd>{d.nextAttemptTime ? formatTime(d.nextAttemptTime) : <span class="muted">none due</span>}</dd>
          </div>
        </dl>
      </section>
      <section class="card" aria-labelledby="attempts-h">
        <h2 id="attempts-h">Attempts</h2>
        {attempts.length === 0 ? (
          <p class="muted">
            {d.state === 'PENDING'
              ? 'Not tried yet: the first attempt is queued or in flight.'
              : 'No attempt was made.'}
          </p>
        ) : (
          <ol class="timeline">
            {attempts.map((a, i) => {
              const prev = attempts[i - 1];
              const same =
                prev &&
                a.responseBody !== '' &&
                prev.responseBody === a.responseBody &&
                prev.httpStatus === a.httpStatus;
              return (
                <li key={a.attemptTime + i} class={a.outcome === 'SUCCESS' ? 'ok' : 'bad'}>
                  <AttemptView attempt={a} heading={`#${i + 1}`} sameAnswerAs={same ? `#${i}` : undefined} />
                </li>
              );
            })}
            {d.nextAttemptTime ? (
              <li class="next">
                <div class="attempt-line">
                  <strong>#{attempts.length + 1}</strong>
                  <span>
                    due {formatTime(d.nextAttemptTime)} ({untilTime(d.nextAttemptTime, data.loadedAt)})
                  </span>
                </div>
              </li>
            ) : null}
          </ol>
        )}
      </section>
    </section>
  );
}
