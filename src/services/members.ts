// Project and organization members (contract §2.5-2.7, §3.3, §4.2-4.3): add (with pending invitations for unknown
// emails), roles, removal with the last-organization-admin guard (§7 #9), invite links, the wildcard project
// queries and batches, and looking up and accepting an invitation.
import { createHash } from 'node:crypto';
import { hashPassword } from '../auth/passwords.ts';
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { checkBatchSize } from '../domain/batches.ts';
import { badRequest, conflict, forbidden, notFound } from '../domain/errors.ts';
import { concreteProjectId, idFromName, organizationMemberName, organizationName, projectMemberName, projectName } from '../domain/names.ts';
import { pageRequest, toPage } from '../domain/paging.ts';
import { PROJECT_ROLES, type OrganizationPermission, type Permission, type ProjectPermission, type RoleName } from '../domain/roles.ts';
import { formatTimestamp } from '../domain/time.ts';
import { newToken } from '../runtime/random.ts';
import type { MembershipRecord, ProjectRecord, ScopeType } from '../store/records.ts';
import type { Repos } from '../store/store.ts';
import { projectPermissions, requireHoldsRolesOf, requireOrganization, requireProject } from './access.ts';
import type { Principal } from '../auth/principal.ts';

export interface MemberScope { type: ScopeType; id: string }

const ORGANIZATION_ADMIN = 'roles/organization.admin';
const INVITE_LIFETIME_MICROS = 7 * 24 * 3600 * 1_000_000;
const MIN_PASSWORD_LENGTH = 12;
const MAX_PASSWORD_LENGTH = 1024;

const memberName = (scope: MemberScope, memberId: string) =>
  scope.type === 'project' ? projectMemberName(scope.id, memberId) : organizationMemberName(scope.id, memberId);

export const hashInviteToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/** The wire shape of §3.3, keys in contract order. */
export async function presentMember(repos: Repos, scope: MemberScope, m: MembershipRecord) {
  const account = m.accountType === 'SERVICE_ACCOUNT' ? await repos.serviceAccounts.get(m.memberId) : await repos.users.get(m.memberId);
  return {
    name: memberName(scope, m.memberId),
    displayName: account?.displayName ?? '',
    roles: [...m.roles],
    status: m.status,
    email: account?.email ?? '',
    accountType: m.accountType,
    createTime: formatTimestamp(m.createTime),
  };
}
export type MemberJson = Awaited<ReturnType<typeof presentMember>>;

async function requireScope(deps: Deps, principal: Principal, scope: MemberScope, permission: ProjectPermission & OrganizationPermission): Promise<void> {
  if (scope.type === 'project') await requireProject(deps, principal, scope.id, permission);
  else await requireOrganization(deps, principal, scope.id, permission);
}

/** The 404/403 rule of §2.7 for a project already read (inside a transaction, where requireProject cannot run). */
function checkProjectPermission(principal: Principal, project: ProjectRecord | null, permission: ProjectPermission): void {
  const perms = project ? projectPermissions(principal, project) : new Set<Permission>();
  if (!project || perms.size === 0) throw notFound('project not found');
  if (!perms.has(permission)) throw forbidden(`permission ${permission} required on projects/${project.id}`);
}

export function parseEmail(value: unknown, field = 'email'): string {
  const email = typeof value === 'string' ? value.trim().toLowerCase() : '';
  if (email.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(email)) throw badRequest(`${field} must be an email address`);
  return email;
}

/** Project: a non-empty subset of the three project roles. Organization: exactly the organization admin role. */
export function parseRoles(scopeType: ScopeType, value: unknown, field = 'roles'): string[] {
  const list = Array.isArray(value) && value.every((r) => typeof r === 'string') ? (value as string[]) : null;
  if (scopeType === 'organization') {
    if (!list || list.length !== 1 || list[0] !== ORGANIZATION_ADMIN) throw badRequest(`${field} must be exactly ["${ORGANIZATION_ADMIN}"]`);
    return [ORGANIZATION_ADMIN];
  }
  if (!list || list.length === 0 || !list.every((r) => PROJECT_ROLES.includes(r as RoleName))) {
    throw badRequest(`${field} must be a non-empty list of ${PROJECT_ROLES.join(', ')}`);
  }
  return [...new Set(list)];
}

/**
 * Adds one membership inside a transaction: existing accounts join at once, unknown emails become pending users.
 * An invitation link activates every membership of its user, so a pending user's unused links are revoked when it
 * gains a membership (or a role): a link handed out earlier, by someone who may not hold the new roles, must not
 * grant them (see requireHoldsRolesOf). The new one comes from whoever may hand it out now.
 */
async function createMembership(deps: Deps, tx: Repos, scope: MemberScope, email: string, roles: string[], field = 'email'): Promise<MembershipRecord> {
  const now = nowMicros(deps);
  let memberId: string;
  let accountType: MembershipRecord['accountType'];
  let status: MembershipRecord['status'];
  const sa = await tx.serviceAccounts.getByEmail(email);
  const user = sa ? null : await tx.users.getByEmail(email);
  if (sa) {
    [memberId, accountType, status] = [sa.id, 'SERVICE_ACCOUNT', 'ACCEPTED'];
  } else if (user) {
    // A user still pending from an earlier invitation stays pending until it accepts one.
    [memberId, accountType, status] = [user.id, 'USER', user.active ? 'ACCEPTED' : 'PENDING'];
  } else {
    if (email.endsWith(`.serviceaccount.${deps.config.emailDomain}`)) throw badRequest(`${field}: no service account has the email ${email}`);
    memberId = deps.ids.next();
    await tx.users.create({ id: memberId, email, displayName: '', passwordHash: null, active: false, createTime: now, updateTime: now });
    [accountType, status] = ['USER', 'PENDING'];
  }
  if (await tx.memberships.get(scope.type, scope.id, memberId)) throw conflict('member already exists');
  const m: MembershipRecord = { scopeType: scope.type, scopeId: scope.id, memberId, accountType, roles, status, createTime: now };
  await tx.memberships.create(m);
  if (status === 'PENDING') await tx.invites.revokeUnused(memberId, now);
  return m;
}

async function loadMembership(repos: Repos, scope: MemberScope, memberId: string): Promise<MembershipRecord> {
  const m = await repos.memberships.get(scope.type, scope.id, memberId);
  if (!m) throw notFound('member not found');
  return m;
}

const isAcceptedAdmin = (m: MembershipRecord) => m.status === 'ACCEPTED' && m.roles.includes(ORGANIZATION_ADMIN);

/** §7 #9: an organization keeps at least one ACCEPTED administrator. */
async function guardLastOrganizationAdmin(tx: Repos, scope: MemberScope, m: MembershipRecord, action: string): Promise<void> {
  if (scope.type !== 'organization' || !isAcceptedAdmin(m)) return;
  if ((await tx.memberships.countAcceptedOrganizationAdmins(scope.id)) <= 1) {
    throw badRequest(`cannot ${action} the last organization administrator`);
  }
}

export async function listMembers(deps: Deps, principal: Principal, scope: MemberScope, query: { pageSize?: string; pageToken?: string }) {
  await requireScope(deps, principal, scope, 'membership.read');
  const page = pageRequest(query, 'members');
  const after = page.after ? ([Number(page.after[0]), String(page.after[1])] as [number, string]) : null;
  if (after && !Number.isInteger(after[0])) throw badRequest('invalid pageToken');
  const rows = await deps.store.memberships.listByScope(scope.type, scope.id, { after, limit: page.pageSize + 1 });
  const { items, nextPageToken } = toPage(rows, page, (m) => [m.createTime, m.memberId], 'members');
  const members = [];
  for (const m of items) members.push(await presentMember(deps.store, scope, m));
  return { members, nextPageToken };
}

export async function addMember(deps: Deps, principal: Principal, scope: MemberScope, body: { email: string; roles: string[] }): Promise<MemberJson> {
  await requireScope(deps, principal, scope, 'membership.create');
  const email = parseEmail(body.email);
  const roles = parseRoles(scope.type, body.roles);
  return deps.store.transaction(async (tx) => presentMember(tx, scope, await createMembership(deps, tx, scope, email, roles)));
}

export async function getMember(deps: Deps, principal: Principal, scope: MemberScope, memberId: string): Promise<MemberJson> {
  await requireScope(deps, principal, scope, 'membership.read');
  return presentMember(deps.store, scope, await loadMembership(deps.store, scope, memberId));
}

/** Mask paths naming read-only member fields: accepted and ignored (§1.2). */
const MEMBER_READ_ONLY_PATHS = new Set(['name', 'displayName', 'display_name', 'status', 'email', 'accountType', 'account_type', 'createTime', 'create_time']);

export async function updateMember(
  deps: Deps, principal: Principal, scope: MemberScope, memberId: string, body: { roles?: string[] }, mask: Set<string> | null,
): Promise<MemberJson> {
  await requireScope(deps, principal, scope, 'membership.update');
  for (const path of mask ?? []) {
    if (path !== 'roles' && !MEMBER_READ_ONLY_PATHS.has(path)) throw badRequest(`update_mask: unknown field "${path}"`);
  }
  const apply = mask ? mask.has('roles') : body.roles !== undefined;
  const roles = apply ? parseRoles(scope.type, body.roles) : null;
  return deps.store.transaction(async (tx) => {
    const m = await loadMembership(tx, scope, memberId);
    if (roles) {
      if (!roles.includes(ORGANIZATION_ADMIN)) await guardLastOrganizationAdmin(tx, scope, m, 'demote');
      await tx.memberships.updateRoles(scope.type, scope.id, memberId, roles);
      if (m.status === 'PENDING') await tx.invites.revokeUnused(memberId, nowMicros(deps));
    }
    return presentMember(tx, scope, { ...m, roles: roles ?? m.roles });
  });
}

export async function removeMember(deps: Deps, principal: Principal, scope: MemberScope, memberId: string): Promise<Record<string, never>> {
  await requireScope(deps, principal, scope, 'membership.delete');
  await deps.store.transaction(async (tx) => {
    const m = await loadMembership(tx, scope, memberId);
    await guardLastOrganizationAdmin(tx, scope, m, 'remove');
    await tx.memberships.delete(scope.type, scope.id, memberId);
  });
  return {};
}

/** A random single-use link valid 7 days; only the token's SHA-256 is stored. */
export async function createInviteUrl(deps: Deps, principal: Principal, scope: MemberScope, memberId: string): Promise<{ inviteUrl: string }> {
  await requireScope(deps, principal, scope, 'membership.create');
  const token = newToken(deps.random, 32);
  await deps.store.transaction(async (tx) => {
    const m = await loadMembership(tx, scope, memberId);
    if (m.status === 'ACCEPTED') throw badRequest('the member has already accepted; there is nothing to invite');
    // Whoever holds the link sets the user's password and becomes the user, with all its memberships.
    await requireHoldsRolesOf(tx, principal, m.memberId, 'creating an invitation link for this user');
    await tx.invites.create({ tokenHash: hashInviteToken(token), userId: m.memberId, expireTime: nowMicros(deps) + INVITE_LIFETIME_MICROS, usedTime: null });
  });
  return { inviteUrl: `${deps.config.publicUrl}/invite/${token}` };
}

/** GET /projects/-/members: one member's project memberships in an organization, where the caller holds membership.read. */
export async function listMemberProjects(
  deps: Deps, principal: Principal, query: { memberId?: string; organization?: string; pageSize?: string; pageToken?: string },
) {
  if (query.memberId === undefined) throw badRequest('memberId is required with the wildcard project');
  if (query.organization === undefined) throw badRequest('organization is required with the wildcard project');
  const organizationId = idFromName(query.organization, 'organizations', 'organization');
  await requireOrganization(deps, principal, organizationId, 'organization.read');
  const memberId = await resolveMemberId(deps.store, query.memberId);
  const filters = JSON.stringify(['wildcard-members', memberId, organizationId]);
  const page = pageRequest(query, filters);
  const [afterTime, afterProject] = page.after ? [Number(page.after[0]), String(page.after[1])] : [-1, ''];
  const rows: MembershipRecord[] = [];
  const memberships = memberId ? await deps.store.memberships.listByMember(memberId) : [];
  memberships.sort((a, b) => a.createTime - b.createTime || (a.scopeId < b.scopeId ? -1 : a.scopeId > b.scopeId ? 1 : 0));
  for (const m of memberships) {
    if (rows.length > page.pageSize) break;
    if (m.scopeType !== 'project') continue;
    if (m.createTime < afterTime || (m.createTime === afterTime && m.scopeId <= afterProject)) continue;
    const project = await deps.store.projects.get(m.scopeId);
    if (!project || project.organizationId !== organizationId) continue;
    if (!projectPermissions(principal, project).has('membership.read')) continue;
    rows.push(m);
  }
  const { items, nextPageToken } = toPage(rows, page, (m) => [m.createTime, m.scopeId], filters);
  const members = [];
  for (const m of items) members.push(await presentMember(deps.store, { type: 'project', id: m.scopeId }, m));
  return { members, nextPageToken };
}

/** memberId: a user or service account id, a member name ending in /members/{m}, or an email. */
async function resolveMemberId(repos: Repos, raw: string): Promise<string | null> {
  if (raw.includes('@')) {
    const email = raw.trim().toLowerCase();
    return (await repos.serviceAccounts.getByEmail(email))?.id ?? (await repos.users.getByEmail(email))?.id ?? null;
  }
  return raw.slice(raw.lastIndexOf('/') + 1);
}

export interface BatchCreateItem { project: string; email: string; roles: string[] }

/** POST /projects/-/members:batchCreate: in item order, in one transaction; the first failing item decides. */
export async function batchCreateMembers(deps: Deps, principal: Principal, items: BatchCreateItem[]): Promise<{ members: MemberJson[] }> {
  checkBatchSize(items, 'members');
  return deps.store.transaction(async (tx) => {
    const out: MemberJson[] = [];
    for (const [i, item] of items.entries()) {
      const projectId = concreteProjectId(idFromName(item.project, 'projects', `members[${i}].project`));
      const email = parseEmail(item.email, `members[${i}].email`);
      const roles = parseRoles('project', item.roles, `members[${i}].roles`);
      checkProjectPermission(principal, await tx.projects.get(projectId), 'membership.create');
      const scope: MemberScope = { type: 'project', id: projectId };
      out.push(await presentMember(tx, scope, await createMembership(deps, tx, scope, email, roles, `members[${i}].email`)));
    }
    return { members: out };
  });
}

/** POST /projects/-/members:batchDelete: unknown names (and projects the caller cannot see) are skipped. */
export async function batchDeleteMembers(deps: Deps, principal: Principal, names: string[]): Promise<Record<string, never>> {
  checkBatchSize(names, 'names');
  const parsed = names.map((name, i) => {
    const m = /^projects\/([^/]+)\/members\/([^/]+)$/.exec(name);
    if (!m) throw badRequest(`names[${i}] must be of the form projects/{project}/members/{member}`);
    return { projectId: concreteProjectId(m[1]!), memberId: m[2]! };
  });
  await deps.store.transaction(async (tx) => {
    for (const { projectId, memberId } of parsed) {
      const project = await tx.projects.get(projectId);
      if (!project || projectPermissions(principal, project).size === 0) continue;
      checkProjectPermission(principal, project, 'membership.delete');
      if (!(await tx.memberships.get('project', projectId, memberId))) continue;
      await tx.memberships.delete('project', projectId, memberId);
    }
  });
  return {};
}

const invalidInvite = () => badRequest('the invitation token is invalid, used or expired');

/** The unused, unexpired invitation of a token and its still pending user; 400 for anything else. */
async function openInvite(deps: Deps, repos: Repos, tokenHash: string) {
  const invite = await repos.invites.get(tokenHash);
  if (!invite || invite.usedTime !== null || invite.expireTime <= nowMicros(deps)) throw invalidInvite();
  const user = await repos.users.get(invite.userId);
  // An active user already chose a password: an older, unused link must not reset it.
  if (!user || user.active) throw invalidInvite();
  return { invite, user };
}

export interface InviteJson {
  email: string;
  displayName: string;
  expireTime: string;
  memberships: { parent: string; parentDisplayName: string; roles: string[] }[];
}

/**
 * POST /invites:lookup: whom an invitation link is for and what accepting it grants (every membership of its user),
 * so the invitation page can say so before a password is chosen. The token is the credential, as for accepting.
 */
export async function lookupInvite(deps: Deps, body: { token: string }): Promise<InviteJson> {
  const { invite, user } = await openInvite(deps, deps.store, hashInviteToken(body.token));
  const memberships: InviteJson['memberships'] = [];
  const own = await deps.store.memberships.listByMember(user.id);
  own.sort((a, b) => a.createTime - b.createTime || a.scopeType.localeCompare(b.scopeType) || a.scopeId.localeCompare(b.scopeId));
  for (const m of own) {
    const parent = m.scopeType === 'project' ? await deps.store.projects.get(m.scopeId) : await deps.store.organizations.get(m.scopeId);
    if (!parent) continue;
    memberships.push({ parent: m.scopeType === 'project' ? projectName(m.scopeId) : organizationName(m.scopeId), parentDisplayName: parent.displayName, roles: m.roles });
  }
  return { email: user.email, displayName: user.displayName, expireTime: formatTimestamp(invite.expireTime), memberships };
}

/** POST /invites:accept: sets the password, activates the user and accepts all of its memberships. */
export async function acceptInvite(deps: Deps, body: { token: string; password: string; displayName?: string }): Promise<Record<string, never>> {
  if (body.password.length < MIN_PASSWORD_LENGTH) throw badRequest(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (body.password.length > MAX_PASSWORD_LENGTH) throw badRequest(`password must be at most ${MAX_PASSWORD_LENGTH} characters`);
  if (body.displayName !== undefined && body.displayName.length > 256) throw badRequest('displayName must be at most 256 characters');
  const tokenHash = hashInviteToken(body.token);
  const check = async (repos: Repos) => (await openInvite(deps, repos, tokenHash)).user;
  await check(deps.store);
  const passwordHash = await hashPassword(body.password, deps.random); // slow: outside the transaction
  await deps.store.transaction(async (tx) => {
    const user = await check(tx); // again: another accept may have won the race
    const now = nowMicros(deps);
    // Used meanwhile by another accept of the same link (its check ran before that one committed): that one won.
    if (!(await tx.invites.markUsed(tokenHash, now))) throw invalidInvite();
    await tx.users.update({ ...user, passwordHash, active: true, displayName: body.displayName ?? user.displayName, updateTime: now });
    await tx.memberships.acceptAll(user.id);
  });
  return {};
}
