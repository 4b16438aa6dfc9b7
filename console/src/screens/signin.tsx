// Screen 1: sign in with e-mail and password; back to the page that asked (?next=) afterwards.
import { useState } from 'preact/hooks';
import { ErrorText, Field, Title, useAction } from '../components.tsx';
import { clearPermissions } from '../permissions.ts';
import { navigate, useLocation } from '../router.ts';
import { signIn } from '../session.ts';

/** Only same-site paths: a crafted ?next= must not send the user to another site. */
function safeNext(next: string | null): string {
  return next?.startsWith('/') && !next.startsWith('//') && !next.startsWith('/signin') ? next : '/';
}

export function SignIn() {
  const { params } = useLocation();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  const expired = params.get('expired') === '1';
  return (
    <main id="main" class="signin">
      <div class="card narrow">
        <Title>Sign in</Title>
        <p class="muted">Sensor Cloud console</p>
        {expired ? (
          <p class="notice" role="status">
            Your session has ended. Sign in again to continue where you were.
          </p>
        ) : null}
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            const ok = await action.run(() => signIn(email, password));
            if (ok) {
              clearPermissions();
              navigate(safeNext(params.get('next')), { replace: true });
            }
          }}
        >
          <Field label="E-mail">
            {(id) => (
              <input
                id={id}
                type="email"
                autocomplete="username"
                required
                value={email}
                onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
              />
            )}
          </Field>
          <Field label="Password">
            {(id) => (
              <input
                id={id}
                type="password"
                autocomplete="current-password"
                required
                value={password}
                onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
              />
            )}
          </Field>
          <ErrorText error={action.error} />
          <button type="submit" class="primary" disabled={action.busy}>
            {action.busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
        <p class="muted small">
          First start? The administrator's e-mail and password are in <code>data/bootstrap.json</code>.
        </p>
      </div>
    </main>
  );
}
