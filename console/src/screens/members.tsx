// Screen 8: project and organization members: add a user or service account by e-mail with a role, change
// role, remove, pending invitations with their invite link, and the four roles with their permissions.
import { useEffect, useState } from 'preact/hooks';
import { api, idOf, listAll } from '../api.ts';
import {
  ConfirmButton,
  CopyButton,
  ErrorText,
  Field,
  Loading,
  Notice,
  Title,
  useAction,
  useLoad,
} from '../components.tsx';
import { formatTime } from '../format.ts';
import { reasonFor, usePermissions, useProject } from '../permissions.ts';

const PROJECT_ROLES: [string, string][] = [
  ['roles/project.user', 'Project user'],
  ['roles/project.developer', 'Project developer'],
  ['roles/project.admin', 'Project administrator'],
];
const ROLE_NAMES: Record<string, string> = Object.fromEntries([
  ...PROJECT_ROLES,
  ['roles/organization.admin', 'Organization administrator'],
]);

/** The highest of a member's project roles (the roles nest: user ⊂ developer ⊂ admin). */
function mainRole(roles: string[]): string {
  for (const [r] of [...PROJECT_ROLES].reverse()) if (roles.includes(r)) return r;
  return roles[0] ?? '';
}

/** The invitation link of a pending member, fetched on demand and shown under the member's e-mail. */
function InviteLinkButton({ path, onUrl }: { path: string; onUrl: (url: string) => void }) {
  const action = useAction();
  return (
    <>
      <button
        type="button"
        disabled={action.busy}
        onClick={() => action.run(async () => onUrl((await api('GET', `${path}:getInviteUrl`)).inviteUrl))}
      >
        Invite link
      </button>
      <ErrorText error={action.error} />
    </>
  );
}

function MemberRow({
  parent,
  member,
  isOrg,
  canUpdate,
  canDelete,
  canInvite,
  onChanged,
}: {
  parent: string;
  member: any;
  isOrg: boolean;
  canUpdate: boolean;
  canDelete: boolean;
  canInvite: boolean;
  onChanged: () => void;
}) {
  const action = useAction();
  const roleAction = useAction();
  const [inviteUrl, setInviteUrl] = useState<string | null>(null);
  // The role the select shows: the new one while it is saved, the saved one after (the list reloads), and back to
  // the one before when the API refuses it.
  const saved = mainRole(member.roles);
  const [role, setRole] = useState(saved);
  useEffect(() => setRole(saved), [saved]);
  const path = `/${parent}/members/${idOf(member.name)}`;
  const label = member.displayName || member.email;
  const changeRole = async (next: string) => {
    const before = role;
    setRole(next);
    const ok = await roleAction.run(async () => {
      await api('PATCH', `${path}?updateMask=roles`, { roles: [next] });
      // A pending user's unused invitation links stop working when its roles change (docs/projects-and-members.md).
      if (member.status === 'PENDING') setInviteUrl(null);
      roleAction.setNotice(
        member.status === 'PENDING'
          ? `Saved: ${ROLE_NAMES[next] ?? next}. Earlier invite links stopped working.`
          : `Saved: ${ROLE_NAMES[next] ?? next}.`,
      );
    });
    if (ok) onChanged();
    else setRole(before);
  };
  return (
    <tr>
      <td class="stack-title">
        <span class="strong">{label}</span>
        {member.displayName ? <div class="muted small break">{member.email}</div> : null}
        {inviteUrl ? (
          <div class="invite-link">
            <span class="small">Send this link to {member.email}; it is valid for 7 days and works once.</span>
            <code class="break">{inviteUrl}</code>
            <CopyButton text={inviteUrl} label="Copy link" />
          </div>
        ) : null}
        <ErrorText error={action.error} />
      </td>
      <td data-label="Kind">{member.accountType === 'SERVICE_ACCOUNT' ? 'Service account' : 'User'}</td>
      <td data-label="Role">
        {isOrg || !canUpdate ? (
          member.roles.map((r: string) => ROLE_NAMES[r] ?? r).join(', ')
        ) : (
          <>
            <label class="visually-hidden" for={`role-${idOf(member.name)}`}>
              Role of {label}
            </label>
            <select
              id={`role-${idOf(member.name)}`}
              value={role}
              disabled={roleAction.busy || action.busy}
              onChange={(e) => void changeRole((e.target as HTMLSelectElement).value)}
            >
              {PROJECT_ROLES.map(([r, n]) => (
                <option key={r} value={r}>
                  {n}
                </option>
              ))}
            </select>
            {roleAction.busy ? (
              <div class="muted small" role="status">
                Saving…
              </div>
            ) : null}
            {roleAction.notice ? (
              <div class="saved small" role="status">
                {roleAction.notice}
              </div>
            ) : null}
            <ErrorText error={roleAction.error} />
          </>
        )}
      </td>
      <td data-label="Status">
        {member.status === 'PENDING' ? (
          <span class="badge badge-warn">pending</span>
        ) : (
          <span class="muted">accepted</span>
        )}
      </td>
      <td class="actions">
        {member.status === 'PENDING' && canInvite && !inviteUrl ? (
          <InviteLinkButton path={path} onUrl={setInviteUrl} />
        ) : null}
        {canDelete ? (
          <ConfirmButton
            label="Remove"
            confirm={`Remove ${label}?`}
            onConfirm={async () => {
              if (await action.run(() => api('DELETE', path))) onChanged();
            }}
          />
        ) : null}
      </td>
    </tr>
  );
}

function AddMember({ parent, isOrg, onAdded }: { parent: string; isOrg: boolean; onAdded: () => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState(isOrg ? 'roles/organization.admin' : 'roles/project.user');
  const action = useAction({ email: 'email', roles: 'role' });
  return (
    <form
      class="row-form card"
      aria-label="Add a member"
      ref={action.form}
      onInput={action.onInput}
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        // The API's own check, to say it here; the API decides.
        if (!/^[^\s@]+@[^\s@]+$/.test(email.trim()))
          return action.fail('email', 'Enter an e-mail address, such as ada@example.com.');
        await action.run(async () => {
          const m = await api('POST', `/${parent}/members`, { email: email.trim(), roles: [role] });
          action.setNotice(
            m.status === 'PENDING'
              ? `${m.email} was invited: send them the invite link from the list.`
              : `${m.email} was added.`,
          );
          setEmail('');
        });
        onAdded(); // after a refusal too: "already a member" may be someone added meanwhile, whom the list shows then
      }}
    >
      <ErrorText error={action.error} />
      <Field label="E-mail of a user or service account" error={action.fieldError('email')}>
        {(id, described, invalid) => (
          <input
            id={id}
            name="email"
            type="email"
            autocomplete="off"
            aria-describedby={described}
            aria-invalid={invalid}
            value={email}
            onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      <Field label="Role" error={action.fieldError('role')}>
        {(id, described, invalid) => (
          <select
            id={id}
            name="role"
            aria-describedby={described}
            aria-invalid={invalid}
            value={role}
            onChange={(e) => setRole((e.target as HTMLSelectElement).value)}
          >
            {isOrg ? (
              <option value="roles/organization.admin">Organization administrator</option>
            ) : (
              PROJECT_ROLES.map(([r, n]) => (
                <option key={r} value={r}>
                  {n}
                </option>
              ))
            )}
          </select>
        )}
      </Field>
      <button type="submit" class="primary" disabled={action.busy}>
        Add member
      </button>
      {action.notice ? <Notice>{action.notice}</Notice> : null}
    </form>
  );
}

function Roles() {
  const { data } = useLoad(() => listAll<any>('/roles', 'roles'), []);
  if (!data) return null;
  return (
    <section class="card" aria-labelledby="roles-h">
      <h2 id="roles-h">Roles and what they allow</h2>
      <div class="roles">
        {data.map((r) => (
          <details key={r.name}>
            <summary>
              <strong>{r.displayName}</strong> <span class="muted small">{r.description}</span>
            </summary>
            <ul class="perm-list">
              {r.permissions.map((p: string) => (
                <li key={p} class="mono small">
                  {p}
                </li>
              ))}
            </ul>
          </details>
        ))}
      </div>
    </section>
  );
}

function MemberList({ parent, isOrg }: { parent: string; isOrg: boolean }) {
  const perms = usePermissions(parent);
  const canRead = perms.has('membership.read');
  const { data, error, reload } = useLoad(
    () => (canRead ? listAll<any>(`/${parent}/members`, 'members') : Promise.resolve(null)),
    [parent, canRead],
  );
  if (!perms.loaded) return <Loading />;
  if (!canRead) return <p>{reasonFor('membership.read')}</p>;
  return (
    <>
      {perms.has('membership.create') ? (
        <AddMember parent={parent} isOrg={isOrg} onAdded={reload} />
      ) : (
        <p class="muted small">{reasonFor('membership.create')} Adding members is not offered.</p>
      )}
      <ErrorText error={error} />
      {!data ? (
        <Loading />
      ) : data.length === 0 ? (
        <p class="empty">
          No members yet.{isOrg ? '' : ' Organization administrators have every right here without being members.'}
        </p>
      ) : (
        <div class="table-wrap">
          <table class="stack-table members-table">
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Kind</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.map((m) => (
                <MemberRow
                  key={m.name}
                  parent={parent}
                  member={m}
                  isOrg={isOrg}
                  canUpdate={perms.has('membership.update')}
                  canDelete={perms.has('membership.delete')}
                  canInvite={perms.has('membership.create')}
                  onChanged={reload}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data && data.length > 0 ? (
        <p class="muted small">
          {data.length} member{data.length === 1 ? '' : 's'}, the first added {formatTime(data[0].createTime)}.
        </p>
      ) : null}
    </>
  );
}

export function Members({ projectId }: { projectId: string }) {
  const project = useProject(projectId);
  return (
    <section>
      <Title>Members</Title>
      <p class="muted">
        People and service accounts with a role in {project ? project.displayName : 'this project'}.
        {project ? (
          <>
            {' '}
            Organization-wide administrators are listed under{' '}
            <a href={`/organizations/${idOf(project.organization)}/members`}>organization members</a>.
          </>
        ) : null}
      </p>
      <MemberList parent={`projects/${projectId}`} isOrg={false} />
      <Roles />
    </section>
  );
}

export function OrganizationMembers({ organizationId }: { organizationId: string }) {
  const { data: org } = useLoad(() => api('GET', `/organizations/${organizationId}`), [organizationId]);
  return (
    <section>
      <Title>Organization members</Title>
      <p class="muted">
        Administrators of {org ? org.displayName : 'this organization'}: they administer every project in it.
      </p>
      <MemberList parent={`organizations/${organizationId}`} isOrg />
      <Roles />
    </section>
  );
}
