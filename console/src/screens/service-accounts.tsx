// Screen 7a: the project's service accounts: create (Basic Auth on or off), rename, delete.
import { useState } from 'preact/hooks';
import { api, idOf, listAll } from '../api.ts';
import {
  ConfirmButton,
  ErrorText,
  Field,
  FieldError,
  Loading,
  Notice,
  Title,
  useAction,
  useLoad,
} from '../components.tsx';
import { formatTime } from '../format.ts';
import { reasonFor, usePermissions } from '../permissions.ts';

function CreateAccount({ projectId, onCreated }: { projectId: string; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [basic, setBasic] = useState(false);
  const action = useAction({ displayName: 'name' });
  return (
    <form
      class="row-form card"
      aria-label="Create a service account"
      ref={action.form}
      onInput={action.onInput}
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        if (name.trim() === '') return action.fail('name', 'Give the service account a name.');
        if (
          await action.run(
            () => api('POST', `/projects/${projectId}/serviceaccounts`, { displayName: name, enableBasicAuth: basic }),
            `${name} was created: open it to create a key.`,
          )
        ) {
          setName('');
          setBasic(false);
          onCreated();
        }
      }}
    >
      <ErrorText error={action.error} />
      <Field label="Name of the new service account" error={action.fieldError('name')}>
        {(id, described, invalid) => (
          <input
            id={id}
            name="name"
            aria-describedby={described}
            aria-invalid={invalid}
            maxLength={256}
            value={name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      <label class="check-label">
        <input type="checkbox" checked={basic} onChange={() => setBasic(!basic)} /> Allow Basic Auth (key id and secret
        on every call; for prototyping)
      </label>
      <button type="submit" class="primary" disabled={action.busy}>
        Create service account
      </button>
      {action.notice ? <Notice>{action.notice}</Notice> : null}
    </form>
  );
}

function AccountRow({
  projectId,
  account,
  canUpdate,
  canDelete,
  onChanged,
}: {
  projectId: string;
  account: any;
  canUpdate: boolean;
  canDelete: boolean;
  onChanged: () => void;
}) {
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(account.displayName);
  const action = useAction({ displayName: 'name' });
  const path = `/projects/${projectId}/serviceaccounts/${idOf(account.name)}`;
  const inputId = `sa-${idOf(account.name)}`;
  return (
    <tr>
      <td class="stack-title">
        {editing ? (
          <form
            class="inline"
            ref={action.form}
            onInput={action.onInput}
            noValidate
            onSubmit={async (e) => {
              e.preventDefault();
              if (name.trim() === '') return action.fail('name', 'Give the service account a name.');
              if (
                await action.run(
                  () => api('PATCH', `${path}?updateMask=displayName`, { displayName: name }),
                  'Renamed.',
                )
              ) {
                setEditing(false);
                onChanged();
              }
            }}
          >
            <label class="visually-hidden" for={inputId}>
              New name
            </label>
            <input
              id={inputId}
              name="name"
              value={name}
              maxLength={256}
              aria-invalid={action.fieldError('name') ? true : undefined}
              aria-describedby={action.fieldError('name') ? `${inputId}-error` : undefined}
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
            />
            <button type="submit" class="primary" disabled={action.busy}>
              Save
            </button>
            <button
              type="button"
              onClick={() => {
                setEditing(false);
                setName(account.displayName);
                action.edited('name');
              }}
            >
              Cancel
            </button>
            <FieldError id={`${inputId}-error`} text={action.fieldError('name')} />
          </form>
        ) : (
          <a class="strong" href={path}>
            {account.displayName || idOf(account.name)}
          </a>
        )}
        <div class="muted small mono break">{account.email}</div>
        <ErrorText error={action.error} />
        {action.notice ? (
          <div class="saved small" role="status">
            {action.notice}
          </div>
        ) : null}
      </td>
      <td data-label="Basic Auth">{account.enableBasicAuth ? 'on' : 'off'}</td>
      <td data-label="Created">{formatTime(account.createTime)}</td>
      <td class="actions">
        {canUpdate && !editing ? (
          <button type="button" onClick={() => setEditing(true)}>
            Rename
          </button>
        ) : null}
        {canDelete ? (
          <ConfirmButton
            label="Delete"
            confirm="Delete it, its keys and memberships?"
            onConfirm={async () => {
              if (await action.run(() => api('DELETE', path))) onChanged();
            }}
          />
        ) : null}
      </td>
    </tr>
  );
}

export function ServiceAccounts({ projectId }: { projectId: string }) {
  const perms = usePermissions(`projects/${projectId}`);
  const allowed = perms.has('serviceaccount.read');
  const { data, error, reload } = useLoad(
    () => (allowed ? listAll<any>(`/projects/${projectId}/serviceaccounts`, 'serviceAccounts') : Promise.resolve(null)),
    [projectId, allowed],
  );
  return (
    <section>
      <Title>Service accounts</Title>
      <p class="muted">
        Machine identities for scripts and integrations. A new account has no rights: add it as a{' '}
        <a href={`/projects/${projectId}/members`}>member</a> with a role.
      </p>
      {!perms.loaded ? (
        <Loading />
      ) : !allowed ? (
        <p>{reasonFor('serviceaccount.read')} Service accounts are managed by project administrators.</p>
      ) : (
        <>
          {perms.has('serviceaccount.create') ? <CreateAccount projectId={projectId} onCreated={reload} /> : null}
          <ErrorText error={error} />
          {!data ? (
            <Loading />
          ) : data.length === 0 ? (
            <p class="empty">No service accounts in this project.</p>
          ) : (
            <div class="table-wrap">
              <table class="stack-table">
                <thead>
                  <tr>
                    <th scope="col">Service account</th>
                    <th scope="col">Basic Auth</th>
                    <th scope="col">Created</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((a) => (
                    <AccountRow
                      key={a.name}
                      projectId={projectId}
                      account={a}
                      canUpdate={perms.has('serviceaccount.update')}
                      canDelete={perms.has('serviceaccount.delete')}
                      onChanged={reload}
                    />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}
