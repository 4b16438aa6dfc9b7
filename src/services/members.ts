// Project and organization members (contract §2.5-2.7, §3.3, §4.2-4.3): add (with pending invitations for unknown
// emails), roles, removal with the last-organization-admin guard (§7 #9), invite links, the wildcard project
// queries and batches, and looking up and accepting an invitation.
import { createHash } from 'node:crypto';
import { hashPassword } from '../auth/passwords.ts';
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { checkBatchSize } from '../domain/batches.ts';
import { badRequest, conflict, forbidden, notFound } from '../domain/errors.ts';
import {
  concreteProjectId,
  idFromName,
  organizationMemberName,
  organizationName,
  projectMemberName,
  projectName,
} from '../domain/names.ts';
import { pageRequest, toPage } from '../domain/paging.ts';
import {
  PROJECT_ROLES,
  type OrganizationPermission,
  type Permission,
  type ProjectPermission,
  type RoleName,
} from '../domain/roles.ts';
import { formatTimestamp } from '../domain/time.ts';
import { newToken } from '../runtime/random.ts';
import type { MembershipRecord, ProjectRecord, ScopeType, UserRecord } from '../store/contract/records.ts';
import type { Repos } from '../store/contract/store.ts';
import type { AcceptInviteRequest, Invitation, LookupInviteRequest } from '../wire/invites.ts';
import type {
  AddMemberRequest,
  BatchCreateItem,
  BatchCreateMembersResponse,
  InviteUrl,
  Member,
  MemberList,
  MemberPatch,
  MemberProjectsQuery,
} from '../wire/members.ts';
import type { PageQuery } from '../wire/paging.ts';
import { projectPermissions, requireHoldsRolesOf, requireOrganization, requireProject } from './access.ts';
import { checkPassword } from './password-check.ts';
import type { Principal } from '../auth/principal.ts';

export interface MemberScope {
  type: ScopeType;
  id: string;
}

const ORGANIZATION_ADMIN = 'roles/organization.admin';
const INVITE_LIFETIME_MICROS = 7 * 24 * 3600 * 1_000_000;
const MIN_PASSWORD_LENGTH = 12;
const MAX_PASSWORD_LENGTH = 1024;

const memberName = (scope: MemberScope, memberId: string) =>
  scope.type === 'project' ? projectMemberName(scope.id, memberId) : organizationMemberName(scope.id, memberId);

export const hashInviteToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/**
 * The wire shape of §3.3, keys in contract order. A PENDING member shows no display name: it may be an account of
 * another organization that has not accepted, whose name (and whether it exists) is not this scope's to learn.
 */
export async function presentMember(repos: Repos, scope: MemberScope, m: MembershipRecord): Promise<Member> {
  const account =
    m.accountType === 'SERVICE_ACCOUNT'
      ? await repos.serviceAccounts.get(m.memberId)
      : await repos.users.get(m.memberId);
  return {
    name: memberName(scope, m.memberId),
    displayName: m.status === 'PENDING' ? '' : (account?.displayName ?? ''),
    roles: [...m.roles],
    status: m.status,
    email: account?.email ?? '',
    accountType: m.accountType,
    createTime: formatTimestamp(m.createTime),
  };
}

async function requireScope(
  deps: Deps,
  principal: Principal,
  scope: MemberScope,
  permission: ProjectPermission & OrganizationPermission,
): Promise<void> {
  if (scope.type === 'project') await requireProject(deps, principal, scope.id, permission);
  else await requireOrganization(deps, principal, scope.id, permission);
}

/** The 404/403 rule of §2.7 for a project already read (inside a transaction, where requireProject cannot run). */
function checkProjectPermission(
  principal: Principal,
  project: ProjectRecord | null,
  permission: ProjectPermission,
): void {
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
    if (list?.length !== 1 || list[0] !== ORGANIZATION_ADMIN)
      throw badRequest(`${field} must be exactly ["${ORGANIZATION_ADMIN}"]`);
    return [ORGANIZATION_ADMIN];
  }
  if (!list || list.length === 0 || !list.every((r) => PROJECT_ROLES.includes(r as RoleName))) {
    throw badRequest(`${field} must be a non-empty list of ${PROJECT_ROLES.join(', ')}`);
  }
  return [...new Set(list)];
}

/** The organization of a member scope: the project's, or the organization itself; null for a deleted project. */
export async function scopeOrganization(repos: Repos, scope: MemberScope): Promise<string | null> {
  return scope.type === 'organization' ? scope.id : ((await repos.projects.get(scope.id))?.organizationId ?? null);
}

const scopeOf = (m: MembershipRecord): MemberScope => ({ type: m.scopeType, id: m.scopeId });

/** Whether the account holds an ACCEPTED membership of the organization or of one of its projects. */
async function isAcceptedMemberOf(repos: Repos, memberId: string, organizationId: string): Promise<boolean> {
  for (const m of await repos.memberships.listByMember(memberId)) {
    if (m.status === 'ACCEPTED' && (await scopeOrganization(repos, scopeOf(m))) === organizationId) return true;
  }
  return false;
}

/**
 * Adds one membership inside a transaction. Joining an organization takes the member's consent, so an account joins
 * at once only where it belongs already: a service account in its own organization, a user in an organization it
 * is an accepted member of. Anyone else gets a PENDING membership, which grants nothing until accepted: a user
 * through this organization's invitation link, another organization's service account by an admin of its owner
 * (…/serviceaccounts/{sa}/memberships/…:accept). An unknown email becomes a pending user. The answer for a user
 * outside the organization is the same whether or not the email has an account (PENDING, no display name): adding
 * an email does not tell who has one.
 *
 * An invitation link accepts every membership its user holds in its organization, so the user's unused links of
 * this organization are revoked when it gains a pending membership (or a role) here: a link handed out earlier, by
 * someone who may not hold the new roles, must not grant them (see requireHoldsRolesOf). The new one comes from
 * whoever may hand it out now. Other organizations' links stay: this one cannot block their invitations.
 */
async function createMembership(
  deps: Deps,
  tx: Repos,
  scope: MemberScope,
  email: string,
  roles: string[],
  field = 'email',
): Promise<MembershipRecord> {
  const now = nowMicros(deps);
  const organizationId = await scopeOrganization(tx, scope);
  if (organizationId === null) throw notFound('project not found'); // deleted since the permission check
  let memberId: string;
  let accountType: MembershipRecord['accountType'];
  let status: MembershipRecord['status'];
  const sa = await tx.serviceAccounts.getByEmail(email);
  const user = sa ? null : await tx.users.getByEmail(email);
  if (sa) {
    const home = await tx.projects.get(sa.projectId);
    [memberId, accountType, status] = [
      sa.id,
      'SERVICE_ACCOUNT',
      home?.organizationId === organizationId ? 'ACCEPTED' : 'PENDING',
    ];
  } else if (user) {
    const member = user.active && (await isAcceptedMemberOf(tx, user.id, organizationId));
    [memberId, accountType, status] = [user.id, 'USER', member ? 'ACCEPTED' : 'PENDING'];
  } else {
    if (email.endsWith(`.serviceaccount.${deps.config.emailDomain}`))
      throw badRequest(`${field}: no service account has the email ${email}`);
    memberId = deps.ids.next();
    await tx.users.create({
      id: memberId,
      email,
      displayName: '',
      passwordHash: null,
      active: false,
      createTime: now,
      updateTime: now,
    });
    [accountType, status] = ['USER', 'PENDING'];
  }
  if (await tx.memberships.get(scope.type, scope.id, memberId)) throw conflict('member already exists');
  const m: MembershipRecord = {
    scopeType: scope.type,
    scopeId: scope.id,
    memberId,
    accountType,
    roles,
    status,
    createTime: now,
  };
  await tx.memberships.create(m);
  if (status === 'PENDING' && accountType === 'USER') await tx.invites.revokeUnused(memberId, organizationId, now);
  return m;
}

async function loadMembership(repos: Repos, scope: MemberScope, memberId: string): Promise<MembershipRecord> {
  const m = await repos.memberships.get(scope.type, scope.id, memberId);
  if (!m) throw notFound('member not found');
  return m;
}

const isAcceptedAdmin = (m: MembershipRecord) => m.status === 'ACCEPTED' && m.roles.includes(ORGANIZATION_ADMIN);

/** §7 #9: an organization keeps at least one ACCEPTED administrator. */
async function guardLastOrganizationAdmin(
  tx: Repos,
  scope: MemberScope,
  m: MembershipRecord,
  action: string,
): Promise<void> {
  if (scope.type !== 'organization' || !isAcceptedAdmin(m)) return;
  if ((await tx.memberships.countAcceptedOrganizationAdmins(scope.id)) <= 1) {
    throw badRequest(`cannot ${action} the last organization administrator`);
  }
}

export async function listMembers(
  deps: Deps,
  principal: Principal,
  scope: MemberScope,
  query: PageQuery,
): Promise<MemberList> {
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

export async function addMember(
  deps: Deps,
  principal: Principal,
  scope: MemberScope,
  body: AddMemberRequest,
): Promise<Member> {
  await requireScope(deps, principal, scope, 'membership.create');
  const email = parseEmail(body.email);
  const roles = parseRoles(scope.type, body.roles);
  return deps.store.transaction(async (tx) =>
    presentMember(tx, scope, await createMembership(deps, tx, scope, email, roles)),
  );
}

export async function getMember(
  deps: Deps,
  principal: Principal,
  scope: MemberScope,
  memberId: string,
): Promise<Member> {
  await requireScope(deps, principal, scope, 'membership.read');
  return presentMember(deps.store, scope, await loadMembership(deps.store, scope, memberId));
}

/** Mask paths naming read-only member fields: accepted and ignored (§1.2). */
const MEMBER_READ_ONLY_PATHS = new Set([
  'name',
  'displayName',
  'display_name',
  'status',
  'email',
  'accountType',
  'account_type',
  'createTime',
  'create_time',
]);

export async function updateMember(
  deps: Deps,
  principal: Principal,
  scope: MemberScope,
  memberId: string,
  body: MemberPatch,
  mask: Set<string> | null,
): Promise<Member> {
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
      const organizationId = await scopeOrganization(tx, scope);
      if (m.status === 'PENDING' && m.accountType === 'USER' && organizationId !== null)
        await tx.invites.revokeUnused(memberId, organizationId, nowMicros(deps));
    }
    return presentMember(tx, scope, { ...m, roles: roles ?? m.roles });
  });
}

export async function removeMember(
  deps: Deps,
  principal: Principal,
  scope: MemberScope,
  memberId: string,
): Promise<Record<string, never>> {
  await requireScope(deps, principal, scope, 'membership.delete');
  await deps.store.transaction(async (tx) => {
    const m = await loadMembership(tx, scope, memberId);
    await guardLastOrganizationAdmin(tx, scope, m, 'remove');
    await tx.memberships.delete(scope.type, scope.id, memberId);
  });
  return {};
}

/** A random single-use link valid 7 days; only the token's SHA-256 is stored. */
export async function createInviteUrl(
  deps: Deps,
  principal: Principal,
  scope: MemberScope,
  memberId: string,
): Promise<InviteUrl> {
  await requireScope(deps, principal, scope, 'membership.create');
  const token = newToken(deps.random, 32);
  await deps.store.transaction(async (tx) => {
    const m = await loadMembership(tx, scope, memberId);
    if (m.status === 'ACCEPTED') throw badRequest('the member has already accepted; there is nothing to invite');
    if (m.accountType === 'SERVICE_ACCOUNT') {
      throw badRequest(
        'a service account has no invitation link: an admin of the organization that owns it accepts the membership',
      );
    }
    const organizationId = await scopeOrganization(tx, scope);
    if (organizationId === null) throw notFound('project not found');
    // Whoever holds the link of a pending user sets its password and becomes the user, with its memberships in this
    // organization (the ones the link accepts).
    await requireHoldsRolesOf(tx, principal, m.memberId, organizationId, 'creating an invitation link for this user');
    await tx.invites.create({
      tokenHash: hashInviteToken(token),
      userId: m.memberId,
      organizationId,
      expireTime: nowMicros(deps) + INVITE_LIFETIME_MICROS,
      usedTime: null,
    });
  });
  return { inviteUrl: `${deps.config.publicUrl}/invite/${token}` };
}

/** GET /projects/-/members: one member's project memberships in an organization, where the caller holds membership.read. */
export async function listMemberProjects(
  deps: Deps,
  principal: Principal,
  query: MemberProjectsQuery,
): Promise<MemberList> {
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
  memberships.sort(
    (a, b) => a.createTime - b.createTime || (a.scopeId < b.scopeId ? -1 : a.scopeId > b.scopeId ? 1 : 0),
  );
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

/** POST /projects/-/members:batchCreate: in item order, in one transaction; the first failing item decides. */
export async function batchCreateMembers(
  deps: Deps,
  principal: Principal,
  items: BatchCreateItem[],
): Promise<BatchCreateMembersResponse> {
  checkBatchSize(items, 'members');
  return deps.store.transaction(async (tx) => {
    const out: Member[] = [];
    for (const [i, item] of items.entries()) {
      const projectId = concreteProjectId(idFromName(item.project, 'projects', `members[${i}].project`));
      const email = parseEmail(item.email, `members[${i}].email`);
      const roles = parseRoles('project', item.roles, `members[${i}].roles`);
      checkProjectPermission(principal, await tx.projects.get(projectId), 'membership.create');
      const scope: MemberScope = { type: 'project', id: projectId };
      out.push(
        await presentMember(tx, scope, await createMembership(deps, tx, scope, email, roles, `members[${i}].email`)),
      );
    }
    return { members: out };
  });
}

/** POST /projects/-/members:batchDelete: unknown names (and projects the caller cannot see) are skipped. */
export async function batchDeleteMembers(
  deps: Deps,
  principal: Principal,
  names: string[],
): Promise<Record<string, never>> {
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

/**
 * The unused, unexpired invitation of a token, its user and the memberships it accepts (the user's memberships in
 * the link's organization; every membership for a link made before links were scoped); 400 for anything else.
 */
async function openInvite(deps: Deps, repos: Repos, tokenHash: string) {
  const invite = await repos.invites.get(tokenHash);
  if (!invite || invite.usedTime !== null || invite.expireTime <= nowMicros(deps)) throw invalidInvite();
  const user = await repos.users.get(invite.userId);
  if (!user) throw invalidInvite();
  const memberships: MembershipRecord[] = [];
  for (const m of await repos.memberships.listByMember(user.id)) {
    if (invite.organizationId === null || (await scopeOrganization(repos, scopeOf(m))) === invite.organizationId)
      memberships.push(m);
  }
  // An active user already chose a password, and a link never sets it again. An unscoped link was made for a user
  // still pending, and an active user with nothing pending in the link's organization has nothing left to accept.
  if (user.active && (invite.organizationId === null || !memberships.some((m) => m.status === 'PENDING')))
    throw invalidInvite();
  return { invite, user, memberships };
}

/**
 * POST /invites:lookup: whom an invitation link is for and what accepting it grants (the user's memberships in the
 * link's organization), so the invitation page can say so before a password is chosen. The token is the
 * credential, as for accepting, and whoever made the link holds it too: so the answer names no other organization's
 * project, and no display name of a user who has an account already (the same answer as for a new email).
 */
export async function lookupInvite(deps: Deps, body: LookupInviteRequest): Promise<Invitation> {
  const { invite, user, memberships: own } = await openInvite(deps, deps.store, hashInviteToken(body.token));
  const memberships: Invitation['memberships'] = [];
  own.sort(
    (a, b) =>
      a.createTime - b.createTime || a.scopeType.localeCompare(b.scopeType) || a.scopeId.localeCompare(b.scopeId),
  );
  for (const m of own) {
    const parent =
      m.scopeType === 'project'
        ? await deps.store.projects.get(m.scopeId)
        : await deps.store.organizations.get(m.scopeId);
    if (!parent) continue;
    memberships.push({
      parent: m.scopeType === 'project' ? projectName(m.scopeId) : organizationName(m.scopeId),
      parentDisplayName: parent.displayName,
      roles: m.roles,
    });
  }
  return {
    email: user.email,
    displayName: user.active ? '' : user.displayName,
    expireTime: formatTimestamp(invite.expireTime),
    memberships,
  };
}

/**
 * POST /invites:accept: accepts the user's memberships in the link's organization. A pending user sets its
 * password (and name) and becomes active, as before. A user who is active already (it accepted an invitation
 * before, maybe another organization's) proves with its password that it is the one accepting: the link alone is
 * also in the hands of whoever made it, who must not accept for the user, and a link never changes an active user's
 * password or name. That check is a password login's (checkOwnPassword). `client`: the caller's address.
 */
export async function acceptInvite(
  deps: Deps,
  body: AcceptInviteRequest,
  client: string,
): Promise<Record<string, never>> {
  if (body.password.length < MIN_PASSWORD_LENGTH)
    throw badRequest(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (body.password.length > MAX_PASSWORD_LENGTH)
    throw badRequest(`password must be at most ${MAX_PASSWORD_LENGTH} characters`);
  if (body.displayName !== undefined && body.displayName.length > 256)
    throw badRequest('displayName must be at most 256 characters');
  const tokenHash = hashInviteToken(body.token);
  const { user: found } = await openInvite(deps, deps.store, tokenHash);
  let passwordHash: string | null = null; // slow either way: outside the transaction
  if (found.active) await checkOwnPassword(deps, found, body.password, client);
  else passwordHash = await hashPassword(body.password, deps.random);
  await deps.store.transaction(async (tx) => {
    const { invite, user, memberships } = await openInvite(deps, tx, tokenHash); // again: another accept may have won the race
    // Activated meanwhile through another organization's link: its password is set, and not by this link.
    if (user.active !== found.active) throw invalidInvite();
    const now = nowMicros(deps);
    // Used meanwhile by another accept of the same link (its check ran before that one committed): that one won.
    if (!(await tx.invites.markUsed(tokenHash, now))) throw invalidInvite();
    if (passwordHash !== null) {
      await tx.users.update({
        ...user,
        passwordHash,
        active: true,
        displayName: body.displayName ?? user.displayName,
        updateTime: now,
      });
    }
    if (invite.organizationId === null) await tx.memberships.acceptAll(user.id);
    else
      for (const m of memberships)
        if (m.status === 'PENDING') await tx.memberships.accept(m.scopeType, m.scopeId, user.id);
  });
  return {};
}

/**
 * The password of an active user, checked as a login (password-check.ts: bounded and counted by the login
 * throttle), so that a link's holder cannot guess the password here faster than at the login.
 */
async function checkOwnPassword(deps: Deps, user: UserRecord, password: string, client: string): Promise<void> {
  const right = await checkPassword(deps, user.email, client, password, async () => {
    const now = await deps.store.users.get(user.id);
    return now?.active ? now.passwordHash : null;
  });
  if (!right) throw badRequest('password: this email has an account already; accepting needs its password');
}
