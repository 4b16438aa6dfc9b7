// Organizations (contract §4.2): list, get, permissions. Members live in members.ts.
import type { Deps } from '../../deps.ts';
import { requireOrganization } from '../../services/access.ts';
import { getOrganization, listOrganizations } from '../../services/organizations.ts';
import { OrganizationListSchema, OrganizationSchema } from '../../wire/organizations.ts';
import { PageQuerySchema } from '../../wire/paging.ts';
import type { App } from '../types.ts';
import { principalOf } from '../http.ts';
import { permissionsPage } from './permissions.ts';

export function registerOrganizationRoutes(app: App, deps: Deps): void {
  app.get(
    '/v2/organizations',
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: 'List organizations the caller can read', response: OrganizationListSchema },
    },
    async (request) => listOrganizations(deps, principalOf(request), request.query),
  );

  app.get(
    '/v2/organizations/:organization',
    { config: { summary: 'Get an organization', response: OrganizationSchema } },
    async (request) =>
      getOrganization(deps, principalOf(request), (request.params as { organization: string }).organization),
  );

  app.get(
    '/v2/organizations/:organization/permissions',
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: "The caller's permissions on the organization" },
    },
    async (request) => {
      const { permissions } = await requireOrganization(
        deps,
        principalOf(request),
        (request.params as { organization: string }).organization,
        'organization.read',
      );
      return permissionsPage(permissions, request.query);
    },
  );
}
