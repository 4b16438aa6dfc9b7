// Organizations (contract §3.1, §4.2): the ones a caller can read, and one of them. There is no create or delete
// through the API: organizations come from the bootstrap.
import type { Principal } from '../auth/principal.ts';
import type { Deps } from '../deps.ts';
import { badRequest } from '../domain/errors.ts';
import { organizationName } from '../domain/names.ts';
import { pageRequest, toPage } from '../domain/paging.ts';
import type { Organization, OrganizationList } from '../wire/organizations.ts';
import type { PageQuery } from '../wire/paging.ts';
import type { OrganizationRecord } from '../store/contract/records.ts';
import { readableScopes, requireOrganization } from './access.ts';

/** The wire shape of §3.1. */
export const presentOrganization = (o: OrganizationRecord): Organization => ({
  name: organizationName(o.id),
  displayName: o.displayName,
});

/** Readable: organizations where the caller is admin, or holds a role in one of its projects. */
export async function listOrganizations(deps: Deps, principal: Principal, query: PageQuery): Promise<OrganizationList> {
  const page = pageRequest(query);
  const scopes = readableScopes(principal);
  const ids = new Set(scopes.organizationIds);
  for (const projectId of scopes.projectIds) {
    const p = await deps.store.projects.get(projectId);
    if (p) ids.add(p.organizationId);
  }
  const after = page.after?.[0] ?? null;
  if (after !== null && typeof after !== 'string') throw badRequest('invalid pageToken'); // a forged key must not reach SQL
  const rows = await deps.store.organizations.list([...ids], { after, limit: page.pageSize + 1 });
  const { items, nextPageToken } = toPage(rows, page, (o) => [o.id]);
  return { organizations: items.map(presentOrganization), nextPageToken };
}

export async function getOrganization(deps: Deps, principal: Principal, organizationId: string): Promise<Organization> {
  const { organization } = await requireOrganization(deps, principal, organizationId, 'organization.read');
  return presentOrganization(organization);
}
