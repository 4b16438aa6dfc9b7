// First start on an empty store (operator contract): one organization, one project, an admin user and a
// service account with one key, all organization admins. Credentials go to <data dir>/bootstrap.json once
// (mode 0600) and are never rewritten or logged.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashPassword } from '../auth/passwords.ts';
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { organizationName, projectName, serviceAccountEmail, serviceAccountName } from '../domain/names.ts';
import { newSecret, newToken } from '../runtime/random.ts';
import { StartupError } from '../runtime/startup-error.ts';

export interface BootstrapFile {
  baseUrl: string;
  tokenUrl: string;
  organization: string;
  project: string;
  user: { email: string; password: string };
  serviceAccount: { name: string; email: string; keyId: string; secret: string };
}

/** Returns the path of bootstrap.json when this start created it, null when the store was already set up. */
export async function bootstrapIfEmpty(deps: Deps): Promise<{ file: string; contents: BootstrapFile } | null> {
  // Processes of a cluster starting together: one sets up, the others then find the store set up.
  const cluster = deps.store.cluster;
  return cluster === null ? bootstrapNow(deps) : cluster.withLock('bootstrap', () => bootstrapNow(deps));
}

async function bootstrapNow(deps: Deps): Promise<{ file: string; contents: BootstrapFile } | null> {
  const { store, config, ids } = deps;
  if ((await store.organizations.count()) > 0) return null;
  const file = join(config.dataDir, 'bootstrap.json');
  if (existsSync(file)) {
    throw new StartupError(
      `${file} exists but the database is empty: move it away to set up a new installation, or restore the database that belongs to it`,
    );
  }
  const now = nowMicros(deps);
  const orgId = ids.next();
  const projectId = ids.next();
  const userId = ids.next();
  const saId = ids.next();
  const keyId = ids.next();
  const email = config.adminEmail ?? `admin@${config.emailDomain}`;
  const password = config.adminPassword ?? newToken(deps.random, 18);
  const secret = newSecret(deps.random);
  const saEmail = serviceAccountEmail(saId, projectId, config.emailDomain);
  const passwordHash = await hashPassword(password, deps.random);

  const contents: BootstrapFile = {
    baseUrl: `${config.publicUrl}/v2`,
    tokenUrl: `${config.publicUrl}/oauth2/token`,
    organization: organizationName(orgId),
    project: projectName(projectId),
    user: { email, password },
    serviceAccount: { name: serviceAccountName(projectId, saId), email: saEmail, keyId, secret },
  };

  await store.transaction(async (tx) => {
    await tx.organizations.create({ id: orgId, displayName: 'Default organization', createTime: now });
    await tx.projects.create({
      id: projectId,
      organizationId: orgId,
      displayName: 'Default project',
      location: { latitude: null, longitude: null, timeLocation: '' },
      labels: {},
      createTime: now,
      updateTime: now,
    });
    await tx.users.create({
      id: userId,
      email,
      displayName: 'Administrator',
      passwordHash,
      active: true,
      createTime: now,
      updateTime: now,
    });
    await tx.serviceAccounts.create({
      id: saId,
      projectId,
      email: saEmail,
      displayName: 'bootstrap',
      enableBasicAuth: true,
      createTime: now,
      updateTime: now,
    });
    await tx.keys.create({
      id: keyId,
      serviceAccountId: saId,
      secretEnc: deps.secretBox.seal(secret),
      createTime: now,
    });
    for (const [memberId, accountType] of [
      [userId, 'USER'],
      [saId, 'SERVICE_ACCOUNT'],
    ] as const) {
      await tx.memberships.create({
        scopeType: 'organization',
        scopeId: orgId,
        memberId,
        accountType,
        roles: ['roles/organization.admin'],
        status: 'ACCEPTED',
        createTime: now,
      });
    }
    // Written inside the transaction: if the file cannot be written, nothing is committed and the next
    // start tries again; 'wx' never overwrites.
    writeFileSync(file, JSON.stringify(contents, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  });
  return { file, contents };
}
