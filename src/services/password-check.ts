// A console user's password checked as a login: by the password grant, and by accepting an invitation for an
// account that exists already (contract §2.5, docs/authentication.md). The check (scrypt, auth/passwords.ts) is
// slow and runs on the libuv thread pool, so it needs one of the process's slots (auth/password-check-slots.ts;
// refused at once: 429 when the client has its share running, 503 when every slot is taken), and it is counted by
// the login throttle before it runs (auth/login-throttle.ts), so that attempts sent at once cannot all be checked.
import { verifyPassword } from '../auth/passwords.ts';
import type { Deps } from '../deps.ts';
import { tooManyRequests, unavailable } from '../domain/errors.ts';

/**
 * A well-formed scrypt hash of nothing in particular: unknown or pending users are checked against it, so a
 * wrong email costs the same time as a wrong password and does not reveal which emails exist.
 */
const DUMMY_PASSWORD_HASH = `scrypt$32768$8$1$${'A'.repeat(22)}$${'A'.repeat(43)}`;

/**
 * Whether `password` is the one of `email`, tried from the address `client`. `storedHash` is read once the check
 * may run (null: no usable account, checked against the dummy all the same). True forgives the attempt.
 */
export async function checkPassword(
  deps: Deps,
  email: string,
  client: string,
  password: string,
  storedHash: () => Promise<string | null>,
): Promise<boolean> {
  const slot = deps.logins.slots.take(client);
  if (slot === 'client') throw tooManyRequests(1, 'a login from this address is being checked; try again in a second');
  if (slot === 'server')
    throw unavailable('the server is checking as many logins as it may at once; try again in a second', 1);
  let right: boolean | undefined;
  try {
    const attempt = await deps.logins.throttle.begin(email, client);
    const hash = await storedHash();
    right = (await verifyPassword(password, hash ?? DUMMY_PASSWORD_HASH)) && hash !== null;
    if (right) await attempt.succeeded();
    return right;
  } finally {
    slot(right === undefined ? undefined : !right);
  }
}
