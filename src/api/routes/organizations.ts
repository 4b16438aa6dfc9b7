// Organizations (contract §4.2): list, get, permissions. Members live in members.ts.
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { badRequest } from '../../domain/errors.ts';
import { pageRequest, toPage } from '../../domain/paging.ts';
import { organizationName } from '../../domain/names.ts';
import { readableScopes, requireOrganization } from '../../services/access.ts';
import type { OrganizationRecord } from '../../store/records.ts';
import type { App } from '../app.ts';
import { PagingQuery, principalOf } from '../http.ts';
import { permissionsPage } from './permissions.ts';

export const OrganizationSchema = Type.Object({ name: Type.String(), displayName: Type.String() });
export const presentOrganization = (o: OrganizationRecord) => ({ name: organizationName(o.id), displayName: o.displayName });

export function registerOrganizationRoutes(app: App, deps: Deps): void {
  app.get('/v2/organizations', {
    schema: { querystring: Type.Object(PagingQuery) },
    config: { summary: 'List organizations the caller can read', response: Type.Object({ organizations: Type.Array(OrganizationSchema), nextPageToken: Type.String() }) },
  }, async (request) => {
    const principal = principalOf(request);
    const page = pageRequest(request.query);
    // Readable: organizations where the caller is admin, or holds a role in one of its projects.
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
  });

  app.get('/v2/organizations/:organization', { config: { summary: 'Get an organization', response: OrganizationSchema } }, async (request) => {
    const { organization } = await requireOrganization(deps, principalOf(request), (request.params as { organization: string }).organization, 'organization.read');
    return presentOrganization(organization);
  });

  app.get('/v2/organizations/:organization/permissions', {
    schema: { querystring: Type.Object(PagingQuery) },
    config: { summary: "The caller's permissions on the organization" },
  }, async (request) => {
    const { permissions } = await requireOrganization(deps, principalOf(request), (request.params as { organization: string }).organization, 'organization.read');
    return permissionsPage(permissions, request.query);
  });
}
