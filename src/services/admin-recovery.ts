// Recovery for an operator locked out of their own installation: a new password for a console user, a new key for
// the bootstrap service account; and the master key's rotation (every sealed secret sealed again under a new key).
// Run by `sensorcloud admin …` on the data dir with the server stopped, so they check no permission: whoever can
// write the data dir owns the installation anyway.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashPassword } from '../auth/passwords.ts';
import type { SecretBox } from '../auth/secret-box.ts';
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { keyName, serviceAccountName } from '../domain/names.ts';
import { newSecret, newToken } from '../runtime/random.ts';
import type { ServiceAccountRecord } from '../store/contract/records.ts';
import type { SealedValue } from '../store/contract/store.ts';
import { parseRuleWebhookId } from '../store/sql/sealed.ts';
import { MAX_KEYS_PER_SERVICE_ACCOUNT } from './service-accounts.ts';

export type RecoveryDeps = Pick<Deps, 'config' | 'store' | 'clock' | 'random' | 'ids' | 'secretBox'>;

/** Console passwords are at least this long (the same rule as SENSORCLOUD_ADMIN_PASSWORD and invitations). */
export const MIN_PASSWORD_LENGTH = 12;

/** Sets a console user's password: `password`, or a generated one, and ends its sessions. Resolves to the password set. */
export async function resetPassword(
  deps: RecoveryDeps,
  email: string,
  password?: string,
): Promise<{ email: string; password: string }> {
  const user = await deps.store.users.getByEmail(email.toLowerCase());
  if (!user) throw notFound(`no console user has the email ${email}`);
  if (!user.active)
    throw badRequest(
      `${user.email} has not accepted their invitation yet: send them its link (sensorcloud members invite-url)`,
    );
  const next = password ?? newToken(deps.random, 18);
  if (next.length < MIN_PASSWORD_LENGTH) throw badRequest(`a password has at least ${MIN_PASSWORD_LENGTH} characters`);
  const passwordHash = await hashPassword(next, deps.random);
  await deps.store.transaction(async (tx) => {
    await tx.users.update({ ...user, passwordHash, updateTime: nowMicros(deps) });
    // A reset is often for a password that leaked: the sessions signed in with it end too.
    await tx.users.endSessions(user.id);
  });
  return { email: user.email, password: next };
}

export interface RecoveryKey {
  name: string;
  keyId: string;
  secret: string;
  serviceAccount: string;
  email: string;
}

/**
 * A new key for the service account with `email`, by default the bootstrap service account (the one bootstrap.json
 * names). The secret is returned here only, and stored sealed like every key secret.
 */
export async function createRecoveryKey(deps: RecoveryDeps, email?: string): Promise<RecoveryKey> {
  const account =
    email !== undefined
      ? await deps.store.serviceAccounts.getByEmail(email.toLowerCase())
      : await bootstrapServiceAccount(deps);
  if (!account) throw notFound(`no service account has the email ${email}`);
  const secret = newSecret(deps.random);
  const key = {
    id: deps.ids.next(),
    serviceAccountId: account.id,
    secretEnc: deps.secretBox.seal(secret),
    createTime: nowMicros(deps),
  };
  await deps.store.transaction(async (tx) => {
    if ((await tx.keys.countByServiceAccount(account.id)) >= MAX_KEYS_PER_SERVICE_ACCOUNT) {
      throw badRequest(
        `${account.email} has ${MAX_KEYS_PER_SERVICE_ACCOUNT} keys, the most it may have: delete one first (console or API), or give another account with --service-account`,
      );
    }
    await tx.keys.create(key);
  });
  return {
    name: keyName(account.projectId, account.id, key.id),
    keyId: key.id,
    secret,
    serviceAccount: serviceAccountName(account.projectId, account.id),
    email: account.email,
  };
}

async function bootstrapServiceAccount(deps: RecoveryDeps): Promise<ServiceAccountRecord> {
  const file = join(deps.config.dataDir, 'bootstrap.json');
  let name: string;
  try {
    name = (JSON.parse(readFileSync(file, 'utf8')) as { serviceAccount: { name: string } }).serviceAccount.name;
  } catch {
    throw notFound(
      `${file} is missing or unreadable, so the bootstrap service account is unknown: name the account with --service-account <email>`,
    );
  }
  const account = await deps.store.serviceAccounts.get(name.split('/').pop()!);
  if (!account)
    throw notFound(
      `the bootstrap service account ${name} has been deleted: name another account with --service-account <email>`,
    );
  return account;
}

export interface Resealed {
  keys: number;
  /**
   * Signature secrets: connectors' current ones and the previous ones of rotations (extensions §X3), those of rules'
   * webhook actions and those queued with webhook notifications (extensions §X5).
   */
  connectors: number;
  settings: number;
}

/** How a sealed value that does not open is named in the refusal. */
function describeSealed(value: SealedValue): string {
  switch (value.kind) {
    case 'previousSecret':
      return `the previous secret of connector ${value.id}`;
    case 'ruleWebhook': {
      const at = parseRuleWebhookId(value.id);
      return at
        ? `the webhook signature secret of rule ${at.ruleId} (escalation level ${at.level}, action ${at.action})`
        : `${value.kind} ${value.id}`;
    }
    case 'outboxWebhook':
      return `the signature secret of queued webhook notification ${value.id}`;
    default:
      return `${value.kind} ${value.id}`;
  }
}

/**
 * Re-seals every sealed value (key secrets, signature secrets of connectors current and previous, of rules' webhooks
 * and of queued webhook notifications, a cluster's master key check) from the current master key to `next`, in one
 * transaction: all of them or, when any does not open with the current key, none.
 */
export async function resealSecrets(deps: RecoveryDeps, next: SecretBox): Promise<Resealed> {
  return deps.store.transaction(async (tx) => {
    const done: Resealed = { keys: 0, connectors: 0, settings: 0 };
    for (const value of await tx.sealed.list()) {
      let plain: string;
      try {
        plain = deps.secretBox.open(value.sealed);
      } catch {
        throw badRequest(
          `${describeSealed(value)} does not open with the master key ${deps.config.masterKeyFile}: it is not the key this installation's secrets are sealed with (nothing was changed)`,
        );
      }
      await tx.sealed.replace({ ...value, sealed: next.seal(plain) });
      if (value.kind === 'key') done.keys++;
      // A rotation's previous secret (extensions §X3) and a rule's or a queued notification's webhook secret (§X5) are
      // signature secrets too.
      else if (value.kind === 'setting') done.settings++;
      else done.connectors++;
    }
    return done;
  });
}
