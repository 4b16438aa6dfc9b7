// Sign-in and sign-out. The password grant with session=cookie makes the server set an HttpOnly cookie; the
// token never reaches this script. The e-mail is kept only to show who is signed in.
import { ApiError, CONSOLE_HEADERS } from './api.ts';

const EMAIL_KEY = 'sensorcloud.email';

export function signedInEmail(): string {
  return localStorage.getItem(EMAIL_KEY) ?? '';
}

export async function signIn(email: string, password: string): Promise<void> {
  const body = new URLSearchParams({ grant_type: 'password', username: email, password, session: 'cookie' });
  const res = await fetch('/oauth2/token', {
    method: 'POST',
    headers: { ...CONSOLE_HEADERS, 'content-type': 'application/x-www-form-urlencoded' },
    body,
    credentials: 'same-origin',
  });
  if (!res.ok) {
    const data = await res.json().catch(() => ({}));
    if (res.status === 429) {
      const wait = res.headers.get('retry-after');
      throw new ApiError(
        429,
        `Too many failed sign-ins for this e-mail. Try again in ${wait ?? 'a few'} seconds.`,
        data.help ?? '',
      );
    }
    if (data.error === 'invalid_grant') throw new ApiError(400, 'Wrong e-mail or password.', data.help ?? '');
    throw new ApiError(res.status, data.error_description ?? data.error ?? 'Sign-in failed.', data.help ?? '');
  }
  localStorage.setItem(EMAIL_KEY, email.trim().toLowerCase());
}

export async function signOut(): Promise<void> {
  await fetch('/oauth2/revoke', { method: 'POST', headers: CONSOLE_HEADERS, credentials: 'same-origin' });
  localStorage.removeItem(EMAIL_KEY);
}
