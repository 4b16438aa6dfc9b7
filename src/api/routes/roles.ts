// Roles (contract §4.4): any authenticated caller may read them.
import type { Deps } from '../../deps.ts';
import { badRequest, notFound } from '../../domain/errors.ts';
import { pageRequest, toPage } from '../../domain/paging.ts';
import { ROLES, findRole } from '../../domain/roles.ts';
import { PageQuerySchema } from '../../wire/paging.ts';
import { RoleListSchema, RoleSchema } from '../../wire/roles.ts';
import type { App } from '../types.ts';

export function registerRoleRoutes(app: App, _deps: Deps): void {
  app.get(
    '/v2/roles',
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: 'List roles', response: RoleListSchema },
    },
    async (request) => {
      const page = pageRequest(request.query, 'roles');
      const index = page.after ? ROLES.findIndex((r) => r.name === page.after![0]) : -1;
      if (page.after && index < 0) throw badRequest('invalid pageToken');
      const start = index + 1;
      const { items, nextPageToken } = toPage(
        ROLES.slice(start, start + page.pageSize + 1),
        page,
        (r) => [r.name],
        'roles',
      );
      return { roles: items, nextPageToken };
    },
  );

  app.get('/v2/roles/:role', { config: { summary: 'Get a role', response: RoleSchema } }, async (request) => {
    const { role } = request.params as { role: string };
    const found = findRole(`roles/${role}`);
    if (!found) throw notFound('role not found');
    return found;
  });
}
