// Screen 7b: one service account and its keys: create a key (the secret is shown once, with a copy button and
// a warning), list keys (never a secret), delete a key; Basic Auth on or off.
import { useState } from 'preact/hooks';
import { api, idOf, listAll } from '../api.ts';
import {
  ActionButton,
  ConfirmButton,
  CopyButton,
  ErrorText,
  Loading,
  Title,
  useAction,
  useLoad,
} from '../components.tsx';
import { formatTime } from '../format.ts';
import { usePermissions } from '../permissions.ts';

export function ServiceAccountPage({ projectId, serviceAccountId }: { projectId: string; serviceAccountId: string }) {
  const perms = usePermissions(`projects/${projectId}`);
  const path = `/projects/${projectId}/serviceaccounts/${serviceAccountId}`;
  const { data, error, reload } = useLoad(async () => {
    const [account, keys] = await Promise.all([api('GET', path), listAll<any>(`${path}/keys`, 'keys')]);
    return { account, keys };
  }, [path]);
  const [secret, setSecret] = useState<{ id: string; secret: string } | null>(null);
  const action = useAction();
  if (!data)
    return (
      <section>
        <Title>Service account</Title>
        {error ? <ErrorText error={error} /> : <Loading />}
      </section>
    );
  const a = data.account;
  return (
    <section>
      <Title sub={<div class="muted small mono break">{a.email}</div>}>{a.displayName || serviceAccountId}</Title>
      <div class="toolbar">
        <a class="button" href={`/projects/${projectId}/serviceaccounts`}>
          ← All service accounts
        </a>
        <ActionButton
          allowed={perms.has('serviceaccount.update')}
          permission="serviceaccount.update"
          onClick={async () => {
            if (
              await action.run(() =>
                api('PATCH', `${path}?updateMask=enableBasicAuth`, { enableBasicAuth: !a.enableBasicAuth }),
              )
            )
              reload();
          }}
        >
          {a.enableBasicAuth ? 'Turn Basic Auth off' : 'Turn Basic Auth on'}
        </ActionButton>
        <span class="muted small">Basic Auth is {a.enableBasicAuth ? 'on' : 'off'}.</span>
      </div>
      <ErrorText error={action.error} />
      {secret ? (
        <div class="secret-box" role="alert">
          <h2>Copy the secret of key {secret.id} now</h2>
          <p>
            <strong>This is the only time it is shown.</strong> Store it somewhere safe; if it is lost, delete the key
            and create another.
          </p>
          <div class="secret-line">
            <code data-testid="key-secret" class="secret">
              {secret.secret}
            </code>
            <CopyButton text={secret.secret} label="Copy secret" />
          </div>
          <p class="muted small">
            Use the key id as user name and the secret as password for Basic Auth, or sign a JWT with it for the OAuth2
            token endpoint.
          </p>
          <button type="button" onClick={() => setSecret(null)}>
            I have stored it
          </button>
        </div>
      ) : null}
      <section class="card" aria-labelledby="keys-h">
        <div class="card-head">
          <h2 id="keys-h">Keys</h2>
          <span class="spacer" />
          <ActionButton
            allowed={perms.has('serviceaccount.key.create')}
            permission="serviceaccount.key.create"
            class="primary"
            disabled={action.busy}
            onClick={async () => {
              await action.run(async () => {
                const res = await api<{ key: { id: string }; secret: string }>('POST', `${path}/keys`);
                setSecret({ id: res.key.id, secret: res.secret });
                reload();
              });
            }}
          >
            Create key
          </ActionButton>
        </div>
        {data.keys.length === 0 ? (
          <p class="muted">No keys. Create one to let this account authenticate.</p>
        ) : (
          <div class="table-wrap">
            <table class="stack-table">
              <thead>
                <tr>
                  <th scope="col">Key id</th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.keys.map((k) => (
                  <tr key={k.name}>
                    <td class="mono stack-title">{idOf(k.name)}</td>
                    <td data-label="Created">{formatTime(k.createTime)}</td>
                    <td class="actions">
                      {perms.has('serviceaccount.key.delete') ? (
                        <ConfirmButton
                          label="Delete"
                          confirm="Delete this key? Its tokens stop working."
                          onConfirm={async () => {
                            if (await action.run(() => api('DELETE', `${path}/keys/${idOf(k.name)}`))) reload();
                          }}
                        />
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <p class="muted small">Secrets are never listed: the API returns a key's secret only when it is created.</p>
      </section>
    </section>
  );
}
