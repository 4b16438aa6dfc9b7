// Screen 8 (invitations): the page an invitation link opens. It says whom the invitation is for and what accepting
// it grants (POST /v2/invites:lookup); the invited person chooses a password (and a name) and accepts with
// POST /v2/invites:accept; then signs in.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ErrorText, Field, Loading, Title, useAction, useLoad } from '../components.tsx';
import { explainError } from '../form-errors.ts';
import { formatTime } from '../format.ts';

interface Invitation {
  email: string;
  displayName: string;
  expireTime: string;
  memberships: { parent: string; parentDisplayName: string; roles: string[] }[];
}

const ROLE_NAMES: Record<string, string> = {
  'roles/project.user': 'Project user',
  'roles/project.developer': 'Project developer',
  'roles/project.admin': 'Project administrator',
  'roles/organization.admin': 'Organization administrator',
};
const MIN_PASSWORD = 12;

/** "Project developer" (the highest of nested project roles), or the roles as the API names them. */
function roleText(roles: string[]): string {
  for (const r of ['roles/organization.admin', 'roles/project.admin', 'roles/project.developer', 'roles/project.user'])
    if (roles.includes(r)) return ROLE_NAMES[r]!;
  return roles.join(', ');
}

function What({ invitation }: { invitation: Invitation }) {
  const projects = invitation.memberships.filter((m) => m.parent.startsWith('projects/'));
  const organizations = invitation.memberships.filter((m) => m.parent.startsWith('organizations/'));
  const row = (title: string, list: Invitation['memberships']) =>
    list.length === 0 ? null : (
      <div>
        <dt>{title}</dt>
        <dd>
          {list.map((m) => (
            <div key={m.parent}>
              <span class="strong">{m.parentDisplayName}</span> <span class="muted">as</span> {roleText(m.roles)}
            </div>
          ))}
        </dd>
      </div>
    );
  return (
    <dl class="props invite-what">
      <div>
        <dt>E-mail</dt>
        <dd class="strong wrap-anywhere" data-testid="invite-email">
          {invitation.email}
        </dd>
      </div>
      {row(projects.length > 1 ? 'Projects' : 'Project', projects)}
      {row(organizations.length > 1 ? 'Organizations' : 'Organization', organizations)}
      <div>
        <dt>Link</dt>
        <dd>works once, until {formatTime(invitation.expireTime)}</dd>
      </div>
    </dl>
  );
}

export function Invite({ token }: { token: string }) {
  const { data: invitation, error: lookupError } = useLoad(
    () => api<Invitation>('POST', '/invites:lookup', { token }),
    [token],
  );
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [displayName, setDisplayName] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const action = useAction({ password: 'password', displayName: 'displayName' });
  const name = displayName ?? invitation?.displayName ?? '';
  return (
    <main id="main" class="signin">
      <div class="card narrow">
        <Title>Accept your invitation</Title>
        {done && invitation ? (
          <>
            <p role="status">Invitation accepted. Your memberships are active.</p>
            <p>
              <a class="button primary" href="/signin">
                Sign in
              </a>{' '}
              with <strong class="break">{invitation.email}</strong> and the password you just chose.
            </p>
          </>
        ) : lookupError ? (
          <>
            {/* In words only: the invited person has no use for the status and its explanation. */}
            <p class="error" role="alert">
              {explainError(lookupError).text}
            </p>
            <p class="muted small">
              Already accepted? <a href="/signin">Sign in</a>.
            </p>
          </>
        ) : !invitation ? (
          <Loading what="Reading the invitation" />
        ) : (
          <form
            ref={action.form}
            onInput={action.onInput}
            noValidate
            onSubmit={async (e) => {
              e.preventDefault();
              if (password.length < MIN_PASSWORD)
                return action.fail('password', `The password must have at least ${MIN_PASSWORD} characters.`);
              if (password !== repeat)
                return action.fail('repeat', 'The two passwords differ: type the same password twice.');
              const ok = await action.run(() =>
                api('POST', '/invites:accept', { token, password, ...(name ? { displayName: name } : {}) }),
              );
              if (ok) setDone(true);
            }}
          >
            <p class="muted">
              You were invited to Sensor Cloud. Choose a password to activate your account; then sign in with your
              e-mail.
            </p>
            <What invitation={invitation} />
            <ErrorText error={action.error} />
            <Field label="Your name (optional)" error={action.fieldError('displayName')}>
              {(id, described, invalid) => (
                <input
                  id={id}
                  name="displayName"
                  autocomplete="name"
                  aria-describedby={described}
                  aria-invalid={invalid}
                  maxLength={256}
                  value={name}
                  onInput={(e) => setDisplayName((e.target as HTMLInputElement).value)}
                />
              )}
            </Field>
            <Field label="Password" hint={`At least ${MIN_PASSWORD} characters.`} error={action.fieldError('password')}>
              {(id, described, invalid) => (
                <input
                  id={id}
                  name="password"
                  aria-describedby={described}
                  aria-invalid={invalid}
                  type="password"
                  autocomplete="new-password"
                  value={password}
                  onInput={(e) => {
                    setPassword((e.target as HTMLInputElement).value);
                    action.edited('repeat');
                  }}
                />
              )}
            </Field>
            <Field label="Repeat the password" error={action.fieldError('repeat')}>
              {(id, described, invalid) => (
                <input
                  id={id}
                  name="repeat"
                  aria-describedby={described}
                  aria-invalid={invalid}
                  type="password"
                  autocomplete="new-password"
                  value={repeat}
                  onInput={(e) => setRepeat((e.target as HTMLInputElement).value)}
                />
              )}
            </Field>
            <button type="submit" class="primary" disabled={action.busy}>
              Accept invitation
            </button>
          </form>
        )}
      </div>
    </main>
  );
}
