// Organizations (contract §4.2): list, get, permissions. Members live in members.ts.
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { requireOrganization } from '../../services/access.ts';
import { getOrganization, listOrganizations } from '../../services/organizations.ts';
import type { App } from '../types.ts';
import { PagingQuery, principalOf } from '../http.ts';
import { permissionsPage } from './permissions.ts';

export const OrganizationSchema = Type.Object({ name: Type.String(), displayName: Type.String() });

export function registerOrganizationRoutes(app: App, deps: Deps): void {
  app.get('/v2/organizations', {
    schema: { querystring: Type.Object(PagingQuery) },
    config: { summary: 'List organizations the caller can read', response: Type.Object({ organizations: Type.Array(OrganizationSchema), nextPageToken: Type.String() }) },
  }, async (request) => listOrganizations(deps, principalOf(request), request.query));

  app.get('/v2/organizations/:organization', { config: { summary: 'Get an organization', response: OrganizationSchema } }, async (request) =>
    getOrganization(deps, principalOf(request), (request.params as { organization: string }).organization));

  app.get('/v2/organizations/:organization/permissions', {
    schema: { querystring: Type.Object(PagingQuery) },
    config: { summary: "The caller's permissions on the organization" },
  }, async (request) => {
    const { permissions } = await requireOrganization(deps, principalOf(request), (request.params as { organization: string }).organization, 'organization.read');
    return permissionsPage(permissions, request.query);
  });
}
