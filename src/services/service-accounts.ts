// Service accounts and their keys (contract §3.5, §3.6, §4.5): project admin for every operation, reads
// included (§2.6); only accounts owned by the project are visible under it; at most 10 keys each (§7 #10).
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { parseMask } from '../domain/update-mask.ts';
import { serviceAccountEmail } from '../domain/names.ts';
import type { ProjectPermission } from '../domain/roles.ts';
import { afterId, pageRequest, toPage } from '../domain/paging.ts';
import { newSecret } from '../runtime/random.ts';
import type { KeyRecord, MembershipRecord, ServiceAccountRecord } from '../store/contract/records.ts';
import type { Repos } from '../store/contract/store.ts';
import { requireHoldsRolesOf, requireProject } from './access.ts';
import type { Member, MemberList } from '../wire/members.ts';
import type { PageQuery } from '../wire/paging.ts';
import { MAX_DISPLAY_NAME_LENGTH, type ServiceAccountInput } from '../wire/service-accounts.ts';
import { presentMember, scopeOrganization, type MemberScope } from './members.ts';
import type { Principal } from '../auth/principal.ts';

export const MAX_KEYS_PER_SERVICE_ACCOUNT = 10;

/** Paths update_mask may name. Read-only fields are accepted and ignored, like in the body (contract §1.2). */
const MASK_FIELDS = ['displayName', 'enableBasicAuth'];
const READ_ONLY_FIELDS = ['name', 'email', 'createTime', 'updateTime'];

function checkDisplayName(value: string | undefined): void {
  if (value !== undefined && value.length > MAX_DISPLAY_NAME_LENGTH) {
    throw badRequest(`displayName must be at most ${MAX_DISPLAY_NAME_LENGTH} characters`);
  }
}

/**
 * Checks the permission on {p}, then loads the account: 404 unless it exists and is owned by {p}. An `action`
 * (a change that lets the caller act as the account, or takes it away) also needs every role the account holds in
 * its own organization (other organizations' memberships never block the owner: see requireHoldsRolesOf).
 */
async function requireServiceAccount(
  deps: Pick<Deps, 'store'>,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  permission: ProjectPermission,
  action?: string,
): Promise<ServiceAccountRecord> {
  return (await requireOwnedServiceAccount(deps, principal, projectId, serviceAccountId, permission, action)).sa;
}

/** requireServiceAccount, with the organization that owns the account (its project's). */
async function requireOwnedServiceAccount(
  deps: Pick<Deps, 'store'>,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  permission: ProjectPermission,
  action?: string,
): Promise<{ sa: ServiceAccountRecord; organizationId: string }> {
  const { project } = await requireProject(deps, principal, projectId, permission);
  const sa = await deps.store.serviceAccounts.get(serviceAccountId);
  if (!sa || sa.projectId !== project.id) throw notFound('service account not found');
  if (action !== undefined) await requireHoldsRolesOf(deps.store, principal, sa.id, project.organizationId, action);
  return { sa, organizationId: project.organizationId };
}

export async function listServiceAccounts(deps: Deps, principal: Principal, projectId: string, query: PageQuery) {
  await requireProject(deps, principal, projectId, 'serviceaccount.read');
  const filters = `serviceaccounts:${projectId}`;
  const page = pageRequest(query, filters);
  const rows = await deps.store.serviceAccounts.listByProject(projectId, {
    after: afterId(page.after),
    limit: page.pageSize + 1,
  });
  return toPage(rows, page, (sa) => [sa.id], filters);
}

export async function createServiceAccount(
  deps: Deps,
  principal: Principal,
  projectId: string,
  input: ServiceAccountInput,
): Promise<ServiceAccountRecord> {
  checkDisplayName(input.displayName);
  await requireProject(deps, principal, projectId, 'serviceaccount.create');
  const id = deps.ids.next();
  const now = nowMicros(deps);
  const sa: ServiceAccountRecord = {
    id,
    projectId,
    email: serviceAccountEmail(id, projectId, deps.config.emailDomain),
    displayName: input.displayName ?? '',
    enableBasicAuth: input.enableBasicAuth ?? false,
    createTime: now,
    updateTime: now,
  };
  await deps.store.serviceAccounts.create(sa);
  return sa;
}

export function getServiceAccount(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
): Promise<ServiceAccountRecord> {
  return requireServiceAccount(deps, principal, projectId, serviceAccountId, 'serviceaccount.read');
}

/** PATCH: with a mask only the listed fields apply (a listed field absent from the body stays unchanged). */
export async function updateServiceAccount(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  input: ServiceAccountInput,
  mask: Set<string> | null,
): Promise<ServiceAccountRecord> {
  const fields = parseMask(mask, MASK_FIELDS, READ_ONLY_FIELDS);
  const applies = (field: keyof ServiceAccountInput) =>
    input[field] !== undefined && (fields === null || fields.has(field));
  if (applies('displayName')) checkDisplayName(input.displayName);
  await requireServiceAccount(
    deps,
    principal,
    projectId,
    serviceAccountId,
    'serviceaccount.update',
    'updating this service account',
  );
  // Applied to the row as it is now, locked: a concurrent PATCH of the other field is kept.
  return deps.store.transaction(async (tx) => {
    const sa = await tx.serviceAccounts.getForUpdate(serviceAccountId);
    if (!sa || sa.projectId !== projectId) throw notFound('service account not found');
    const next = { ...sa };
    if (applies('displayName')) next.displayName = input.displayName!;
    if (applies('enableBasicAuth')) next.enableBasicAuth = input.enableBasicAuth!;
    if (next.displayName === sa.displayName && next.enableBasicAuth === sa.enableBasicAuth) return sa;
    next.updateTime = nowMicros(deps);
    await tx.serviceAccounts.update(next);
    return next;
  });
}

/**
 * Deletes the account with its keys and its memberships everywhere, other organizations' included; its Basic auth
 * and tokens die with it.
 */
export async function deleteServiceAccount(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
): Promise<void> {
  const { sa, organizationId } = await requireOwnedServiceAccount(
    deps,
    principal,
    projectId,
    serviceAccountId,
    'serviceaccount.delete',
    'deleting this service account',
  );
  await deps.store.transaction(async (tx) => {
    await refuseRemovingLastOrganizationAdmin(tx, sa.id, organizationId);
    await tx.serviceAccounts.delete(sa.id);
  });
}

/**
 * Contract §7 #9: the last ACCEPTED organization admin of the owner's organization may not disappear with its
 * service account. Another organization that made the account its admin cannot stop the owner deleting it.
 */
async function refuseRemovingLastOrganizationAdmin(tx: Repos, memberId: string, organizationId: string): Promise<void> {
  for (const m of await tx.memberships.listByMember(memberId)) {
    if (
      m.scopeType !== 'organization' ||
      m.scopeId !== organizationId ||
      m.status !== 'ACCEPTED' ||
      !m.roles.includes('roles/organization.admin')
    )
      continue;
    if ((await tx.memberships.countAcceptedOrganizationAdmins(m.scopeId)) <= 1) {
      throw badRequest(
        `the service account is the last organization admin of organizations/${m.scopeId}; add another admin first`,
      );
    }
  }
}

export async function listKeys(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  query: PageQuery,
) {
  const sa = await requireServiceAccount(deps, principal, projectId, serviceAccountId, 'serviceaccount.key.read');
  const filters = `keys:${sa.id}`;
  const page = pageRequest(query, filters);
  const rows = await deps.store.keys.listByServiceAccount(sa.id, {
    after: afterId(page.after),
    limit: page.pageSize + 1,
  });
  return toPage(rows, page, (k) => [k.id], filters);
}

/** Creates a key; the secret is returned here only and stored sealed under the master key (contract §3.6). */
export async function createKey(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
): Promise<{ key: KeyRecord; secret: string }> {
  const sa = await requireServiceAccount(
    deps,
    principal,
    projectId,
    serviceAccountId,
    'serviceaccount.key.create',
    'creating a key for this service account',
  );
  const secret = newSecret(deps.random);
  const key: KeyRecord = {
    id: deps.ids.next(),
    serviceAccountId: sa.id,
    secretEnc: deps.secretBox.seal(secret),
    createTime: nowMicros(deps),
  };
  await deps.store.transaction(async (tx) => {
    if (!(await tx.serviceAccounts.get(sa.id))) throw notFound('service account not found');
    if ((await tx.keys.countByServiceAccount(sa.id)) >= MAX_KEYS_PER_SERVICE_ACCOUNT) {
      throw badRequest(`a service account has at most ${MAX_KEYS_PER_SERVICE_ACCOUNT} keys; delete one first`);
    }
    await tx.keys.create(key);
  });
  return { key, secret };
}

async function requireKey(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  keyId: string,
  permission: ProjectPermission,
  action?: string,
): Promise<KeyRecord> {
  const sa = await requireServiceAccount(deps, principal, projectId, serviceAccountId, permission, action);
  const key = await deps.store.keys.get(keyId);
  if (!key || key.serviceAccountId !== sa.id) throw notFound('key not found');
  return key;
}

export function getKey(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  keyId: string,
): Promise<KeyRecord> {
  return requireKey(deps, principal, projectId, serviceAccountId, keyId, 'serviceaccount.key.read');
}

/** Deletes the key; Basic auth with it and tokens minted with it stop working at once. */
export async function deleteKey(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  keyId: string,
): Promise<void> {
  const key = await requireKey(
    deps,
    principal,
    projectId,
    serviceAccountId,
    keyId,
    'serviceaccount.key.delete',
    'deleting a key of this service account',
  );
  await deps.store.keys.delete(key.id);
}

/*
 * Memberships of a service account in other organizations. Another organization may add the account (by its email)
 * to its projects or itself, but the membership stays PENDING, granting nothing, until an admin of the account's
 * owner accepts it here; the owner can also decline or leave it. These name the other organization's project or
 * organization to the owner: that organization offered the membership to the owner's account, and what is accepted
 * must be seen. Memberships in the owner's own organization are managed under …/members, by its admins, as before.
 */

/** The account's memberships in other organizations, PENDING and ACCEPTED, in the member shape (§3.3), in creation order. */
export async function listForeignMemberships(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  query: PageQuery,
): Promise<MemberList> {
  const { sa, organizationId } = await requireOwnedServiceAccount(
    deps,
    principal,
    projectId,
    serviceAccountId,
    'serviceaccount.read',
  );
  const filters = `memberships:${sa.id}`;
  const page = pageRequest(query, filters);
  const after = page.after;
  if (
    after &&
    (after.length !== 3 || typeof after[0] !== 'number' || typeof after[1] !== 'string' || typeof after[2] !== 'string')
  ) {
    throw badRequest('invalid pageToken'); // a forged token
  }
  const key = (m: MembershipRecord): [number, string, string] => [m.createTime, m.scopeType, m.scopeId];
  const beyond = (m: MembershipRecord) => {
    if (!after) return true;
    const [t, type, id] = key(m);
    return t !== after[0]
      ? t > (after[0] as number)
      : type !== after[1]
        ? type > (after[1] as string)
        : id > (after[2] as string);
  };
  // An account holds few memberships: all of them are read, and the other organizations' paged here.
  const rows = (await deps.store.memberships.listByMember(sa.id)).sort(
    (a, b) =>
      a.createTime - b.createTime ||
      (a.scopeType < b.scopeType ? -1 : a.scopeType > b.scopeType ? 1 : 0) ||
      (a.scopeId < b.scopeId ? -1 : a.scopeId > b.scopeId ? 1 : 0),
  );
  const foreign: MembershipRecord[] = [];
  for (const m of rows) {
    if (foreign.length > page.pageSize) break;
    if (!beyond(m)) continue;
    const owner = await scopeOrganization(deps.store, { type: m.scopeType, id: m.scopeId });
    if (owner !== null && owner !== organizationId) foreign.push(m);
  }
  const { items, nextPageToken } = toPage(foreign, page, key, filters);
  const members: Member[] = [];
  for (const m of items) members.push(await presentMember(deps.store, { type: m.scopeType, id: m.scopeId }, m));
  return { members, nextPageToken };
}

/** The account's membership in `parent`, which must be of another organization than the owner's; else 404. */
async function loadForeignMembership(
  repos: Repos,
  serviceAccountId: string,
  organizationId: string,
  parent: MemberScope,
) {
  const m = await repos.memberships.get(parent.type, parent.id, serviceAccountId);
  const owner = m ? await scopeOrganization(repos, parent) : null;
  if (!m || owner === null || owner === organizationId) throw notFound('membership not found');
  return m;
}

/** Accepts a PENDING membership in another organization (an ACCEPTED one is answered as it is). */
export async function acceptForeignMembership(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  parent: MemberScope,
): Promise<Member> {
  const { sa, organizationId } = await requireOwnedServiceAccount(
    deps,
    principal,
    projectId,
    serviceAccountId,
    'serviceaccount.update',
    'accepting a membership of this service account',
  );
  return deps.store.transaction(async (tx) => {
    const m = await loadForeignMembership(tx, sa.id, organizationId, parent);
    if (m.status === 'PENDING') await tx.memberships.accept(parent.type, parent.id, sa.id);
    return presentMember(tx, parent, { ...m, status: 'ACCEPTED' });
  });
}

/**
 * Declines a PENDING membership in another organization, or leaves an ACCEPTED one. The owner may always do so: no
 * last-administrator guard protects another organization that made the account its only administrator.
 */
export async function removeForeignMembership(
  deps: Deps,
  principal: Principal,
  projectId: string,
  serviceAccountId: string,
  parent: MemberScope,
): Promise<Record<string, never>> {
  const { sa, organizationId } = await requireOwnedServiceAccount(
    deps,
    principal,
    projectId,
    serviceAccountId,
    'serviceaccount.update',
    'removing a membership of this service account',
  );
  await deps.store.transaction(async (tx) => {
    await loadForeignMembership(tx, sa.id, organizationId, parent);
    await tx.memberships.delete(parent.type, parent.id, sa.id);
  });
  return {};
}
