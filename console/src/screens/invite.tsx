// Screen 8 (invitations): the page an invitation link opens. The invited person chooses a password (and a name)
// and accepts with POST /v2/invites:accept; then signs in.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ErrorText, Field, Title, useAction } from '../components.tsx';

export function Invite({ token }: { token: string }) {
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [done, setDone] = useState(false);
  const action = useAction();
  return (
    <main id="main" class="signin">
      <div class="card narrow">
        <Title>Accept your invitation</Title>
        {done ? (
          <>
            <p role="status">Invitation accepted. Your memberships are active.</p>
            <p><a class="button primary" href="/signin">Sign in</a> with your e-mail and the password you just chose.</p>
          </>
        ) : (
          <form onSubmit={async (e) => {
            e.preventDefault();
            if (password !== repeat) {
              action.setError(new Error('The two passwords differ.'));
              return;
            }
            const ok = await action.run(() => api('POST', '/invites:accept', { token, password, ...(displayName ? { displayName } : {}) }));
            if (ok) setDone(true);
          }}>
            <p class="muted">You were invited to a Sensor Cloud project or organization. Choose a password to activate your account.</p>
            <Field label="Your name (optional)">{(id) => <input id={id} autocomplete="name" value={displayName} onInput={(e) => setDisplayName((e.target as HTMLInputElement).value)} />}</Field>
            <Field label="Password" hint="At least 12 characters.">{(id, hint) => <input id={id} aria-describedby={hint} type="password" autocomplete="new-password" minLength={12} required value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />}</Field>
            <Field label="Repeat the password">{(id) => <input id={id} type="password" autocomplete="new-password" required value={repeat} onInput={(e) => setRepeat((e.target as HTMLInputElement).value)} />}</Field>
            <ErrorText error={action.error} />
            <button type="submit" class="primary" disabled={action.busy}>Accept invitation</button>
            <p class="muted small">Already have an account? <a href="/signin">Sign in</a>: invitations to existing accounts are accepted at once.</p>
          </form>
        )}
      </div>
    </main>
  );
}
