// Screen 7a: the project's service accounts: create (Basic Auth on or off), rename, delete.
import { useState } from 'preact/hooks';
import { api, idOf, listAll } from '../api.ts';
import { ConfirmButton, ErrorText, Field, Loading, Title, useAction, useLoad } from '../components.tsx';
import { formatTime } from '../format.ts';
import { reasonFor, usePermissions } from '../permissions.ts';

function CreateAccount({ projectId, onCreated }: { projectId: string; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [basic, setBasic] = useState(false);
  const action = useAction();
  return (
    <form class="row-form card" aria-label="Create a service account" onSubmit={async (e) => {
      e.preventDefault();
      if (await action.run(() => api('POST', `/projects/${projectId}/serviceaccounts`, { displayName: name, enableBasicAuth: basic }))) {
        setName('');
        setBasic(false);
        onCreated();
      }
    }}>
      <Field label="Name of the new service account">{(id) => <input id={id} required maxLength={256} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />}</Field>
      <label class="check-label"><input type="checkbox" checked={basic} onChange={() => setBasic(!basic)} /> Allow Basic Auth (key id and secret on every call; for prototyping)</label>
      <button type="submit" class="primary" disabled={action.busy}>Create service account</button>
      <ErrorText error={action.error} />
    </form>
  );
}

function AccountRow({ projectId, account, canUpdate, canDelete, onChanged }: { projectId: string; account: any; canUpdate: boolean; canDelete: boolean; onChanged: () => void }) {
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(account.displayName);
  const action = useAction();
  const path = `/projects/${projectId}/serviceaccounts/${idOf(account.name)}`;
  return (
    <tr>
      <td>
        {editing ? (
          <form class="inline" onSubmit={async (e) => {
            e.preventDefault();
            if (await action.run(() => api('PATCH', `${path}?updateMask=displayName`, { displayName: name }))) {
              setEditing(false);
              onChanged();
            }
          }}>
            <label class="visually-hidden" for={`sa-${idOf(account.name)}`}>New name</label>
            <input id={`sa-${idOf(account.name)}`} value={name} maxLength={256} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
            <button type="submit" class="primary">Save</button>
            <button type="button" onClick={() => setEditing(false)}>Cancel</button>
          </form>
        ) : <a class="strong" href={path}>{account.displayName || idOf(account.name)}</a>}
        <div class="muted small mono break">{account.email}</div>
        <ErrorText error={action.error} />
      </td>
      <td>{account.enableBasicAuth ? 'on' : 'off'}</td>
      <td>{formatTime(account.createTime)}</td>
      <td class="actions">
        {canUpdate && !editing ? <button type="button" onClick={() => setEditing(true)}>Rename</button> : null}
        {canDelete ? <ConfirmButton label="Delete" confirm="Delete it, its keys and memberships?" onConfirm={async () => {
          if (await action.run(() => api('DELETE', path))) onChanged();
        }} /> : null}
      </td>
    </tr>
  );
}

export function ServiceAccounts({ projectId }: { projectId: string }) {
  const perms = usePermissions(`projects/${projectId}`);
  const allowed = perms.has('serviceaccount.read');
  const { data, error, reload } = useLoad(
    () => (allowed ? listAll<any>(`/projects/${projectId}/serviceaccounts`, 'serviceAccounts') : Promise.resolve(null)), [projectId, allowed]);
  return (
    <section>
      <Title>Service accounts</Title>
      <p class="muted">Machine identities for scripts and integrations. A new account has no rights: add it as a <a href={`/projects/${projectId}/members`}>member</a> with a role.</p>
      {!perms.loaded ? <Loading /> : !allowed ? <p>{reasonFor('serviceaccount.read')} Service accounts are managed by project administrators.</p> : (
        <>
          {perms.has('serviceaccount.create') ? <CreateAccount projectId={projectId} onCreated={reload} /> : null}
          <ErrorText error={error} />
          {!data ? <Loading /> : data.length === 0 ? <p class="empty">No service accounts in this project.</p> : (
            <div class="table-wrap">
              <table>
                <thead><tr><th scope="col">Service account</th><th scope="col">Basic Auth</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
                <tbody>{data.map((a) => <AccountRow key={a.name} projectId={projectId} account={a} canUpdate={perms.has('serviceaccount.update')} canDelete={perms.has('serviceaccount.delete')} onChanged={reload} />)}</tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}
