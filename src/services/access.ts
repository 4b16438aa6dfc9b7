// Authorisation (contract §2.6-2.7): deny by default; 404 when the caller holds nothing on the parent,
// 403 when it holds something but not the permission needed.
import type { Deps } from '../deps.ts';
import { forbidden, notFound } from '../domain/errors.ts';
import { concreteProjectId, organizationName, projectName } from '../domain/names.ts';
import {
  ORGANIZATION_ADMIN_PERMISSIONS,
  PROJECT_ADMIN_PERMISSIONS,
  projectPermissionsOf,
  type OrganizationPermission,
  type Permission,
  type ProjectPermission,
} from '../domain/roles.ts';
import type { MembershipRecord, OrganizationRecord, ProjectRecord } from '../store/contract/records.ts';
import type { Repos } from '../store/contract/store.ts';
import type { Principal } from '../auth/principal.ts';

const accepted = (p: Principal) => p.memberships.filter((m) => m.status === 'ACCEPTED');

export function isOrganizationAdmin(principal: Principal, organizationId: string): boolean {
  return accepted(principal).some(
    (m) =>
      m.scopeType === 'organization' && m.scopeId === organizationId && m.roles.includes('roles/organization.admin'),
  );
}

// Permissions of a cached (frozen) principal by project: every publish asks, and building the set from the roles
// was ~2 % of the main thread under load. A principal is frozen by the auth cache and replaced when a membership
// changes, so the entries go with it.
const permissionsByPrincipal = new WeakMap<Principal, Map<string, ReadonlySet<Permission>>>();

/** Effective permissions on a project: its membership roles, plus project admin for organization admins. */
export function projectPermissions(
  principal: Principal,
  project: Pick<ProjectRecord, 'id' | 'organizationId'>,
): ReadonlySet<Permission> {
  if (!Object.isFrozen(principal)) return computeProjectPermissions(principal, project);
  let byProject = permissionsByPrincipal.get(principal);
  if (byProject === undefined) permissionsByPrincipal.set(principal, (byProject = new Map()));
  const key = `${project.id}/${project.organizationId}`;
  let perms = byProject.get(key);
  if (perms === undefined) {
    perms = computeProjectPermissions(principal, project);
    if (byProject.size < 1000) byProject.set(key, perms);
  }
  return perms;
}

function computeProjectPermissions(
  principal: Principal,
  project: Pick<ProjectRecord, 'id' | 'organizationId'>,
): ReadonlySet<Permission> {
  const roles = accepted(principal)
    .filter((m) => m.scopeType === 'project' && m.scopeId === project.id)
    .flatMap((m) => m.roles);
  const perms = projectPermissionsOf(roles);
  if (isOrganizationAdmin(principal, project.organizationId)) for (const p of PROJECT_ADMIN_PERMISSIONS) perms.add(p);
  return perms;
}

/** Effective permissions on an organization: admin permissions, or organization.read for any project role in it. */
export async function organizationPermissions(
  repos: Repos,
  principal: Principal,
  organizationId: string,
): Promise<Set<Permission>> {
  if (isOrganizationAdmin(principal, organizationId)) return new Set(ORGANIZATION_ADMIN_PERMISSIONS);
  for (const m of accepted(principal)) {
    if (m.scopeType !== 'project' || m.roles.length === 0) continue;
    const project = await repos.projects.get(m.scopeId);
    if (project?.organizationId === organizationId) return new Set(['organization.read']);
  }
  return new Set();
}

/** Ids of the projects the principal can read directly, and of the organizations whose projects it can read. */
export function readableScopes(principal: Principal): { projectIds: string[]; organizationIds: string[] } {
  const ms = accepted(principal);
  return {
    projectIds: ms.filter((m) => m.scopeType === 'project' && m.roles.length > 0).map((m) => m.scopeId),
    organizationIds: ms
      .filter((m) => m.scopeType === 'organization' && m.roles.includes('roles/organization.admin'))
      .map((m) => m.scopeId),
  };
}

/**
 * Loads the project and checks the permission: 400 for the wildcard `-` (only the wildcard routes accept it, and they
 * do not come here), 404 if unknown or invisible, 403 if visible but not allowed.
 */
export async function requireProject(
  deps: Pick<Deps, 'store'>,
  principal: Principal,
  projectId: string,
  permission: ProjectPermission,
): Promise<{ project: ProjectRecord; permissions: ReadonlySet<Permission> }> {
  const project = await deps.store.projects.get(concreteProjectId(projectId));
  if (!project) throw notFound('project not found');
  const permissions = projectPermissions(principal, project);
  if (permissions.size === 0) throw notFound('project not found');
  if (!permissions.has(permission)) throw forbidden(`permission ${permission} required on projects/${projectId}`);
  return { project, permissions };
}

export async function requireOrganization(
  deps: Pick<Deps, 'store'>,
  principal: Principal,
  organizationId: string,
  permission: OrganizationPermission,
): Promise<{ organization: OrganizationRecord; permissions: Set<Permission> }> {
  const organization = await deps.store.organizations.get(organizationId);
  if (!organization) throw notFound('organization not found');
  const permissions = await organizationPermissions(deps.store, principal, organizationId);
  if (permissions.size === 0) throw notFound('organization not found');
  if (!permissions.has(permission))
    throw forbidden(`permission ${permission} required on organizations/${organizationId}`);
  return { organization, permissions };
}

/**
 * No escalation through an account (contract §2.6): acting as another principal — creating a key for a service
 * account, changing or deleting it or one of its keys, handing out an invitation link that sets a user's password —
 * requires the caller to hold at least every role that principal holds in `organizationId`, pending memberships
 * included (an invitation accepted later makes them count). Otherwise 403, naming what the caller lacks. An
 * organization admin holds every project role in its organization, so it passes for any account that holds roles
 * only there.
 *
 * Only the one organization counts: the one that owns the service account, or the one whose memberships an
 * invitation link accepts. Another organization's memberships of a service account exist only because the owner
 * accepted them (its roles there are that organization's offer to whoever the owner lets hold a key), and must not
 * let that organization block the owner from managing its own account; another organization's memberships of a user
 * are not accepted by this organization's link.
 */
export async function requireHoldsRolesOf(
  repos: Repos,
  principal: Principal,
  memberId: string,
  organizationId: string,
  action: string,
): Promise<void> {
  const lacking = await rolesNotHeld(repos, principal, organizationId, await repos.memberships.listByMember(memberId));
  if (lacking !== null) throw forbidden(`${action} requires holding every role the account holds; you lack ${lacking}`);
}

/** The first membership in the organization whose roles the principal does not hold, described; null when it holds them all. */
async function rolesNotHeld(
  repos: Repos,
  principal: Principal,
  organizationId: string,
  memberships: readonly MembershipRecord[],
): Promise<string | null> {
  for (const m of memberships) {
    if (m.scopeType === 'organization') {
      if (
        m.scopeId === organizationId &&
        m.roles.includes('roles/organization.admin') &&
        !isOrganizationAdmin(principal, m.scopeId)
      ) {
        return `roles/organization.admin on ${organizationName(m.scopeId)}`;
      }
      continue;
    }
    const project = await repos.projects.get(m.scopeId);
    if (!project || project.organizationId !== organizationId) continue;
    const held = projectPermissions(principal, project);
    for (const p of projectPermissionsOf(m.roles)) {
      // A project the caller holds nothing in stays unnamed: its id is not the caller's to learn.
      if (!held.has(p))
        return `${m.roles.join(', ')} on ${held.size > 0 ? projectName(m.scopeId) : 'a project you cannot see'}`;
    }
  }
  return null;
}
