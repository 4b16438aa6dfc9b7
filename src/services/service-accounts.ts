// Service accounts and their keys (contract §3.5, §3.6, §4.5): project admin for every operation, reads
// included (§2.6); only accounts owned by the project are visible under it; at most 10 keys each (§7 #10).
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { serviceAccountEmail } from '../domain/names.ts';
import type { ProjectPermission } from '../domain/roles.ts';
import { pageRequest, toPage } from '../domain/paging.ts';
import { newSecret } from '../runtime/random.ts';
import type { KeyRecord, ServiceAccountRecord } from '../store/records.ts';
import type { Repos } from '../store/store.ts';
import { requireHoldsRolesOf, requireProject } from './access.ts';
import type { Principal } from '../auth/principal.ts';

export const MAX_KEYS_PER_SERVICE_ACCOUNT = 10;
export const MAX_DISPLAY_NAME_LENGTH = 256;

export interface ServiceAccountInput {
  displayName?: string;
  enableBasicAuth?: boolean;
}

interface PageQuery { pageSize?: unknown; pageToken?: string }

/** Paths update_mask may name. Read-only fields are accepted and ignored, like in the body (contract §1.2). */
const MASK_FIELDS = new Set(['displayName', 'enableBasicAuth']);
const READ_ONLY_FIELDS = new Set(['name', 'email', 'createTime', 'updateTime']);

const toCamel = (path: string) => path.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function checkDisplayName(value: string | undefined): void {
  if (value !== undefined && value.length > MAX_DISPLAY_NAME_LENGTH) {
    throw badRequest(`displayName must be at most ${MAX_DISPLAY_NAME_LENGTH} characters`);
  }
}

/** The id in a page token's key; anything else is a forged token and must not reach SQL. */
function afterId(after: unknown[] | null): string | null {
  if (after === null) return null;
  if (after.length !== 1 || typeof after[0] !== 'string') throw badRequest('invalid pageToken');
  return after[0];
}

/**
 * Checks the permission on {p}, then loads the account: 404 unless it exists and is owned by {p}. An `action`
 * (a change that lets the caller act as the account, or takes it away) also needs every role the account holds.
 */
async function requireServiceAccount(
  deps: Pick<Deps, 'store'>, principal: Principal, projectId: string, serviceAccountId: string, permission: ProjectPermission, action?: string,
): Promise<ServiceAccountRecord> {
  await requireProject(deps, principal, projectId, permission);
  const sa = await deps.store.serviceAccounts.get(serviceAccountId);
  if (!sa || sa.projectId !== projectId) throw notFound('service account not found');
  if (action !== undefined) await requireHoldsRolesOf(deps.store, principal, sa.id, action);
  return sa;
}

export async function listServiceAccounts(deps: Deps, principal: Principal, projectId: string, query: PageQuery) {
  await requireProject(deps, principal, projectId, 'serviceaccount.read');
  const filters = `serviceaccounts:${projectId}`;
  const page = pageRequest(query, filters);
  const rows = await deps.store.serviceAccounts.listByProject(projectId, { after: afterId(page.after), limit: page.pageSize + 1 });
  return toPage(rows, page, (sa) => [sa.id], filters);
}

export async function createServiceAccount(deps: Deps, principal: Principal, projectId: string, input: ServiceAccountInput): Promise<ServiceAccountRecord> {
  checkDisplayName(input.displayName);
  await requireProject(deps, principal, projectId, 'serviceaccount.create');
  const id = deps.ids.next();
  const now = nowMicros(deps);
  const sa: ServiceAccountRecord = {
    id, projectId, email: serviceAccountEmail(id, projectId, deps.config.emailDomain),
    displayName: input.displayName ?? '', enableBasicAuth: input.enableBasicAuth ?? false, createTime: now, updateTime: now,
  };
  await deps.store.serviceAccounts.create(sa);
  return sa;
}

export function getServiceAccount(deps: Deps, principal: Principal, projectId: string, serviceAccountId: string): Promise<ServiceAccountRecord> {
  return requireServiceAccount(deps, principal, projectId, serviceAccountId, 'serviceaccount.read');
}

/** PATCH: with a mask only the listed fields apply (a listed field absent from the body stays unchanged). */
export async function updateServiceAccount(
  deps: Deps, principal: Principal, projectId: string, serviceAccountId: string, input: ServiceAccountInput, mask: Set<string> | null,
): Promise<ServiceAccountRecord> {
  let fields: Set<string> | null = null;
  if (mask) {
    fields = new Set();
    for (const raw of mask) {
      const path = toCamel(raw);
      if (MASK_FIELDS.has(path)) fields.add(path);
      else if (!READ_ONLY_FIELDS.has(path)) throw badRequest(`update_mask: unknown field "${raw}" (allowed: displayName, enableBasicAuth)`);
    }
  }
  const applies = (field: keyof ServiceAccountInput) => input[field] !== undefined && (fields === null || fields.has(field));
  if (applies('displayName')) checkDisplayName(input.displayName);
  await requireServiceAccount(deps, principal, projectId, serviceAccountId, 'serviceaccount.update', 'updating this service account');
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

/** Deletes the account with its keys and its memberships everywhere; its Basic auth and tokens die with it. */
export async function deleteServiceAccount(deps: Deps, principal: Principal, projectId: string, serviceAccountId: string): Promise<void> {
  const sa = await requireServiceAccount(deps, principal, projectId, serviceAccountId, 'serviceaccount.delete', 'deleting this service account');
  await deps.store.transaction(async (tx) => {
    await refuseRemovingLastOrganizationAdmin(tx, sa.id);
    await tx.serviceAccounts.delete(sa.id);
  });
}

/** Contract §7 #9: the last ACCEPTED organization admin may not disappear with its service account. */
async function refuseRemovingLastOrganizationAdmin(tx: Repos, memberId: string): Promise<void> {
  for (const m of await tx.memberships.listByMember(memberId)) {
    if (m.scopeType !== 'organization' || m.status !== 'ACCEPTED' || !m.roles.includes('roles/organization.admin')) continue;
    if ((await tx.memberships.countAcceptedOrganizationAdmins(m.scopeId)) <= 1) {
      throw badRequest(`the service account is the last organization admin of organizations/${m.scopeId}; add another admin first`);
    }
  }
}

export async function listKeys(deps: Deps, principal: Principal, projectId: string, serviceAccountId: string, query: PageQuery) {
  const sa = await requireServiceAccount(deps, principal, projectId, serviceAccountId, 'serviceaccount.key.read');
  const filters = `keys:${sa.id}`;
  const page = pageRequest(query, filters);
  const rows = await deps.store.keys.listByServiceAccount(sa.id, { after: afterId(page.after), limit: page.pageSize + 1 });
  return toPage(rows, page, (k) => [k.id], filters);
}

/** Creates a key; the secret is returned here only and stored sealed under the master key (contract §3.6). */
export async function createKey(deps: Deps, principal: Principal, projectId: string, serviceAccountId: string): Promise<{ key: KeyRecord; secret: string }> {
  const sa = await requireServiceAccount(deps, principal, projectId, serviceAccountId, 'serviceaccount.key.create', 'creating a key for this service account');
  const secret = newSecret(deps.random);
  const key: KeyRecord = { id: deps.ids.next(), serviceAccountId: sa.id, secretEnc: deps.secretBox.seal(secret), createTime: nowMicros(deps) };
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
  deps: Deps, principal: Principal, projectId: string, serviceAccountId: string, keyId: string, permission: ProjectPermission, action?: string,
): Promise<KeyRecord> {
  const sa = await requireServiceAccount(deps, principal, projectId, serviceAccountId, permission, action);
  const key = await deps.store.keys.get(keyId);
  if (!key || key.serviceAccountId !== sa.id) throw notFound('key not found');
  return key;
}

export function getKey(deps: Deps, principal: Principal, projectId: string, serviceAccountId: string, keyId: string): Promise<KeyRecord> {
  return requireKey(deps, principal, projectId, serviceAccountId, keyId, 'serviceaccount.key.read');
}

/** Deletes the key; Basic auth with it and tokens minted with it stop working at once. */
export async function deleteKey(deps: Deps, principal: Principal, projectId: string, serviceAccountId: string, keyId: string): Promise<void> {
  const key = await requireKey(deps, principal, projectId, serviceAccountId, keyId, 'serviceaccount.key.delete', 'deleting a key of this service account');
  await deps.store.keys.delete(key.id);
}
