// Screen 6a: the project's data connectors with status (SYSTEM_DISABLED explained prominently, a paused connector
// as "Paused"), success and error counts and p99 latency from :metrics.
import { api, idOf, listAll } from '../api.ts';
import { ErrorText, Loading, Title, useLoad } from '../components.tsx';
import { reasonFor, usePermissions } from '../permissions.ts';
import { ConnectorStatusBadges, STATUS_TEXT } from './connector-status.tsx';

export function Connectors({ projectId }: { projectId: string }) {
  const perms = usePermissions(`projects/${projectId}`);
  const { data, error } = useLoad(async () => {
    const connectors = await listAll<any>(`/projects/${projectId}/dataconnectors`, 'dataConnectors');
    const metrics = await Promise.all(
      connectors.map((c) =>
        api(`GET`, `/projects/${projectId}/dataconnectors/${idOf(c.name)}:metrics`).then(
          (m) => m.metrics,
          () => null,
        ),
      ),
    );
    return connectors.map((c, i) => ({ ...c, metrics: metrics[i] }));
  }, [projectId]);
  const systemDisabled = (data ?? []).filter((c) => c.status === 'SYSTEM_DISABLED');
  return (
    <section>
      <Title
        actions={
          perms.has('dataconnector.create') ? (
            <a class="button primary" href={`/projects/${projectId}/dataconnectors/new`}>
              New data connector
            </a>
          ) : null
        }
      >
        Data connectors
      </Title>
      <p class="muted">
        A data connector pushes every matching device event of this project to your HTTPS endpoint, signed, with retries
        for up to 12 hours.
      </p>
      {perms.loaded && !perms.has('dataconnector.create') ? (
        <p class="muted small">{reasonFor('dataconnector.create')} Creating connectors is not offered.</p>
      ) : null}
      {systemDisabled.length > 0 ? (
        <div class="alert" role="alert">
          <strong>
            {systemDisabled.length} connector{systemDisabled.length === 1 ? ' was' : 's were'} disabled by the system.
          </strong>{' '}
          {STATUS_TEXT.SYSTEM_DISABLED!.meaning}
        </div>
      ) : null}
      <ErrorText error={error} />
      {!data ? (
        error ? null : (
          <Loading />
        )
      ) : data.length === 0 ? (
        <p class="empty">No data connectors yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Connector</th>
                <th scope="col">Status</th>
                <th scope="col" class="num">
                  Successes (3 h)
                </th>
                <th scope="col" class="num">
                  Errors (3 h)
                </th>
                <th scope="col" class="num">
                  p99 latency
                </th>
              </tr>
            </thead>
            <tbody>
              {data.map((c) => (
                <tr key={c.name} class={c.status === 'SYSTEM_DISABLED' ? 'row-danger' : undefined}>
                  <td>
                    <a class="strong" href={`/projects/${projectId}/dataconnectors/${idOf(c.name)}`}>
                      {c.displayName || idOf(c.name)}
                    </a>
                    <div class="muted small mono break">{c.httpConfig.url}</div>
                  </td>
                  <td>
                    <ConnectorStatusBadges status={c.status} paused={c.deliveryConfig?.paused === true} />
                    {c.deliveryConfig?.paused === true && c.status === 'ACTIVE' ? (
                      <div class="muted small">events queue, none is pushed</div>
                    ) : null}
                  </td>
                  <td class="num">{c.metrics?.successCount ?? '—'}</td>
                  <td class={c.metrics?.errorCount > 0 ? 'num text-danger' : 'num'}>{c.metrics?.errorCount ?? '—'}</td>
                  <td class="num">{c.metrics?.latency99p ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
