// Screen 6b: one data connector: status and what it means (while its pushes fail: since when, and its last failure
// read from the delivery log; while it is paused, that events queue), :metrics, the delivery-health chart (successes
// and errors per minute over the last 3 hours, from :metricsHistory), enable/disable, pause/resume and the delivery
// controls (extensions §X4, delivery-controls.tsx), Sync, edit, rotate the signature secret (rotate-secret.tsx, loaded
// when first opened; the end of its overlap while it runs, rotation.tsx), delete, and the way to its deliveries.
import { useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { TimeChart, type ChartSeries } from '../chart.tsx';
import {
  ActionButton,
  Badge,
  ConfirmButton,
  ErrorText,
  Loading,
  Notice,
  Title,
  useAction,
  useLoad,
} from '../components.tsx';
import { firstLine, readFailure, type FailureSummary, outcomeText, deliveryHref } from '../deliveries.ts';
import { formatTime } from '../format.ts';
import { reasonFor, usePermissions } from '../permissions.ts';
import { navigate } from '../router.ts';
import { ConnectorStatusBadges, STATUS_TEXT } from './connector-status.tsx';
import { ControlsLine, PauseConfirm, PausedNotice, deliveryConfigOf } from './delivery-controls.tsx';
import { RotationNotice, rotationEnd } from './rotation.tsx';

type RotateSecretDialog = typeof import('./rotate-secret.tsx').RotateSecretDialog;
const loadRotateSecretDialog = () => import('./rotate-secret.tsx');

const WINDOW_SECONDS = 3 * 3600;

export function ConnectorPage({ projectId, connectorId }: { projectId: string; connectorId: string }) {
  const perms = usePermissions(`projects/${projectId}`);
  const base = `/projects/${projectId}/dataconnectors/${connectorId}`;
  const { data, error, reload } = useLoad(async () => {
    const [connector, metrics, history] = await Promise.all([
      api('GET', base),
      api('GET', `${base}:metrics`),
      api<{ buckets: { startTime: string; successCount: number; errorCount: number }[] }>(
        'GET',
        `${base}:metricsHistory`,
      ),
    ]);
    return { connector, metrics: metrics.metrics, buckets: history.buckets, loadedAt: Date.now() };
  }, [base]);
  const action = useAction();
  /** The rotation dialog while it is open (its code is loaded on the first click). */
  const [RotateDialog, setRotateDialog] = useState<RotateSecretDialog | null>(null);
  /** "Pause" was pressed: the consequence is on screen, waiting for a yes. */
  const [askingPause, setAskingPause] = useState(false);
  const pauseButton = useRef<HTMLButtonElement>(null);
  const cancelPause = () => {
    setAskingPause(false);
    pauseButton.current?.focus();
  };
  // Why it fails, from the log; only a connector that pushes (or was stopped by its failures) can be failing.
  const failure = useLoad(async () => {
    if (!data || (data.connector.status !== 'ACTIVE' && data.connector.status !== 'SYSTEM_DISABLED')) return null;
    return readFailure(projectId, connectorId, data.buckets, data.connector.failingSince);
  }, [data?.loadedAt]);

  const series = useMemo((): ChartSeries[] => {
    if (!data) return [];
    const ok: [number, number][] = [];
    const bad: [number, number][] = [];
    for (const b of data.buckets) {
      const t = new Date(b.startTime).getTime() / 1000;
      ok.push([t, b.successCount]);
      bad.push([t, b.errorCount]);
    }
    return [
      { label: 'Successes', points: ok, color: '#2e7d32' },
      { label: 'Errors', points: bad, color: '#c62828' },
    ];
  }, [data]);

  if (!data)
    return (
      <section>
        <Title>Data connector</Title>
        {error ? <ErrorText error={error} /> : <Loading />}
      </section>
    );
  const c = data.connector;
  const status = STATUS_TEXT[c.status];
  const canUpdate = perms.has('dataconnector.update');
  const setStatus = async (to: string) => {
    const done =
      to === 'ACTIVE'
        ? 'Enabled: new events are pushed from now on (no backfill).'
        : 'Disabled: its queue was dropped and nothing is sent until it is enabled.';
    if (await action.run(() => api('PATCH', `${base}?updateMask=status`, { status: to }), done)) reload();
  };
  const delivery = deliveryConfigOf(c);
  const paused = delivery.paused;
  const active = c.status === 'ACTIVE';
  const setPaused = async (to: boolean) => {
    setAskingPause(false);
    // Pausing needs no message of its own: the paused notice (a status) says it.
    const done = to ? undefined : 'Resumed: the queued events are being pushed, in the order they were due.';
    const patch = () => api('PATCH', `${base}?updateMask=deliveryConfig.paused`, { deliveryConfig: { paused: to } });
    if (await action.run(patch, done)) reload();
  };
  const deliveriesHref = `${location.pathname}/deliveries`;
  const now = data.loadedAt / 1000;
  const overlapEnd = rotationEnd(c, data.loadedAt);
  return (
    <section>
      <Title
        sub={
          <>
            <ConnectorStatusBadges status={c.status} paused={paused} />{' '}
            {c.status === 'ACTIVE' && failure.data ? <Badge kind="warn">Failing</Badge> : null}{' '}
            <span class="muted small mono">{c.name}</span>
          </>
        }
      >
        {c.displayName || 'Data connector'}
      </Title>
      {paused && active ? <PausedNotice active deliveriesHref={deliveriesHref} /> : null}
      {active && failure.data ? (
        <FailingNotice failure={failure.data} deliveriesHref={deliveriesHref} />
      ) : paused && active ? null : (
        <div
          class={c.status === 'SYSTEM_DISABLED' ? 'alert' : 'status-line'}
          role={c.status === 'SYSTEM_DISABLED' ? 'alert' : undefined}
        >
          {c.status === 'SYSTEM_DISABLED' ? <strong>Disabled by the system. </strong> : null}
          {status?.meaning}
          {c.status === 'SYSTEM_DISABLED' && failure.data ? <LastFailure failure={failure.data} /> : null}
        </div>
      )}
      {paused && !active ? <PausedNotice active={false} deliveriesHref={deliveriesHref} /> : null}
      {overlapEnd ? <RotationNotice until={overlapEnd} now={data.loadedAt} /> : null}
      <div class="toolbar">
        <a class="button" href={`/projects/${projectId}/dataconnectors`}>
          ← All connectors
        </a>
        <a class="button" href={deliveriesHref}>
          Deliveries
        </a>
        {c.status === 'ACTIVE' ? (
          <ActionButton
            allowed={canUpdate}
            permission="dataconnector.update"
            onClick={() => setStatus('USER_DISABLED')}
            disabled={action.busy}
          >
            Disable
          </ActionButton>
        ) : (
          <ActionButton
            allowed={canUpdate}
            permission="dataconnector.update"
            class="primary"
            onClick={() => setStatus('ACTIVE')}
            disabled={action.busy}
          >
            Enable
          </ActionButton>
        )}
        {canUpdate ? (
          paused ? (
            <button type="button" class="primary" onClick={() => setPaused(false)} disabled={action.busy}>
              Resume
            </button>
          ) : (
            <button
              type="button"
              ref={pauseButton}
              aria-expanded={askingPause}
              onClick={() => {
                action.setNotice(null); // the last action's message stops applying
                setAskingPause(!askingPause);
              }}
              disabled={action.busy}
            >
              Pause
            </button>
          )
        ) : null}
        <ActionButton
          allowed={canUpdate && c.status === 'ACTIVE'}
          permission="dataconnector.update"
          title={c.status !== 'ACTIVE' ? 'Sync needs an active connector' : undefined}
          onClick={() =>
            action.run(
              () => api('POST', `${base}:sync`),
              'Sync queued: the latest event of each type of each device is being pushed.',
            )
          }
        >
          Sync
        </ActionButton>
        {canUpdate ? (
          <a class="button" href={`${location.pathname}/edit`}>
            Edit
          </a>
        ) : null}
        {canUpdate ? (
          <button
            type="button"
            aria-haspopup="dialog"
            onClick={() =>
              loadRotateSecretDialog().then(
                (m) => setRotateDialog(() => m.RotateSecretDialog),
                () =>
                  action.fail(
                    null,
                    'The rotation dialog could not be loaded (the service may have been updated meanwhile): reload the page.',
                  ),
              )
            }
          >
            Rotate secret
          </button>
        ) : null}
        <button type="button" onClick={reload}>
          Refresh
        </button>
        <span class="spacer" />
        {perms.has('dataconnector.delete') ? (
          <ConfirmButton
            label="Delete"
            confirm="Delete this connector and its queue?"
            onConfirm={async () => {
              if (await action.run(() => api('DELETE', base))) navigate(`/projects/${projectId}/dataconnectors`);
            }}
          />
        ) : perms.loaded ? (
          <ActionButton allowed={false} permission="dataconnector.delete">
            Delete
          </ActionButton>
        ) : null}
      </div>
      {askingPause && !paused ? (
        <PauseConfirm busy={action.busy} onConfirm={() => setPaused(true)} onCancel={cancelPause} />
      ) : null}
      {RotateDialog ? (
        <RotateDialog base={base} connector={c} onRotated={reload} onClose={() => setRotateDialog(null)} />
      ) : null}
      <ErrorText error={action.error} />
      {action.notice ? <Notice>{action.notice}</Notice> : null}
      {perms.loaded && !canUpdate ? <p class="muted small">{reasonFor('dataconnector.update')}</p> : null}
      <div class="stats" role="group" aria-label="Last 3 hours">
        <div class="stat">
          <span class="stat-value" data-testid="success-count">
            {data.metrics.successCount}
          </span>
          <span class="stat-label">successful pushes (3 h)</span>
        </div>
        <div class="stat">
          <span class={data.metrics.errorCount > 0 ? 'stat-value text-danger' : 'stat-value'} data-testid="error-count">
            {data.metrics.errorCount}
          </span>
          <span class="stat-label">failed pushes (3 h)</span>
        </div>
        <div class="stat">
          <span class="stat-value">{data.metrics.latency99p}</span>
          <span class="stat-label">p99 latency of successes</span>
        </div>
      </div>
      {data.metrics.errorCount > 0 ? (
        <p class="muted small">
          Failed pushes are retried. Common causes: a wrong URL, a receiver that answers 401/403 or another non-2xx
          status, an invalid TLS certificate, or no answer within 10 s.
        </p>
      ) : null}
      <section class="card" aria-labelledby="health-h">
        <h2 id="health-h">Delivery health, last 3 hours</h2>
        <TimeChart title="Pushes per minute" series={series} from={now - WINDOW_SECONDS} to={now} height={180} bars />
      </section>
      <section class="card" aria-labelledby="config-h">
        <h2 id="config-h">Configuration</h2>
        <dl class="props">
          <div>
            <dt>Endpoint</dt>
            <dd class="mono break">{c.httpConfig.url}</dd>
          </div>
          <div>
            <dt>Events</dt>
            <dd>{c.events.length === 0 ? 'All events' : c.events.join(', ')}</dd>
          </div>
          <div>
            <dt>Label keys copied</dt>
            <dd>{c.labels.length === 0 ? <span class="muted">none</span> : c.labels.join(', ')}</dd>
          </div>
          <div>
            <dt>Delivery controls</dt>
            <dd>
              <ControlsLine config={delivery} />
              {paused ? <div class="muted small">Paused: events are queued, none is pushed.</div> : null}
            </dd>
          </div>
          <div>
            <dt>Custom headers</dt>
            <dd>
              {Object.keys(c.httpConfig.headers).length === 0 ? (
                <span class="muted">none</span>
              ) : (
                Object.keys(c.httpConfig.headers).map((h) => (
                  <div key={h} class="mono">
                    {h}: <span class="muted">(value hidden)</span>
                  </div>
                ))
              )}
            </dd>
          </div>
          <div>
            <dt>Signature</dt>
            <dd>
              {canUpdate ? (
                c.httpConfig.signatureSecret ? (
                  <>
                    Signed (X-Service-Signature); the secret is never shown
                    {overlapEnd ? (
                      <div class="muted small">
                        The previous secret signs too (X-Service-Signature-Previous) until {formatTime(overlapEnd)}.
                      </div>
                    ) : null}
                  </>
                ) : (
                  'Not signed'
                )
              ) : (
                <span class="muted">hidden from your role</span>
              )}
            </dd>
          </div>
          <div>
            <dt>Created</dt>
            <dd>{formatTime(c.createTime)}</dd>
          </div>
          <div>
            <dt>Updated</dt>
            <dd>{formatTime(c.updateTime)}</dd>
          </div>
        </dl>
      </section>
    </section>
  );
}

/** The newest failed attempt in one line: when, its class, its status, the first line of the answer. */
function LastFailure({ failure }: { failure: FailureSummary }) {
  const a = failure.attempt;
  const answer = firstLine(a.responseBody) || a.error;
  return (
    <p class="last-failure" data-testid="last-failure">
      Last failure: <a href={deliveryHref(failure.delivery.name)}>{formatTime(a.attemptTime)}</a>,{' '}
      <strong>{outcomeText(a.outcome)}</strong>
      {a.httpStatus > 0 ? `, HTTP ${a.httpStatus}` : ''}
      {answer ? (
        <>
          : <q class="mono">{answer}</q>
        </>
      ) : null}
    </p>
  );
}

/** Replaces "every matching event is pushed" while pushes fail. */
function FailingNotice({ failure, deliveriesHref }: { failure: FailureSummary; deliveriesHref: string }) {
  const since = failure.failingSince;
  return (
    <div class="alert alert-warn" role="status" data-testid="failing">
      <strong>
        {since
          ? `Failing since ${formatTime(since)}.`
          : failure.lastSuccessTime
            ? `Failing: no push has succeeded since ${formatTime(failure.lastSuccessTime)}.`
            : 'Failing: no push has succeeded in the delivery log.'}
      </strong>{' '}
      Pushes are retried for up to 12 hours; after 5 days without a single success the service disables the connector.{' '}
      <a href={`${deliveriesHref}?state=RETRYING&state=EXPIRED`}>Failing deliveries</a>
      <LastFailure failure={failure} />
    </div>
  );
}
