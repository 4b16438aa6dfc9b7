// GET …/permissions (contract §2.6): the caller's effective permissions, sorted, paged like any list.
import { badRequest } from '../../domain/errors.ts';
import { pageRequest, toPage } from '../../domain/paging.ts';
import type { PageQuery } from '../../wire/paging.ts';
import type { PermissionList } from '../../wire/roles.ts';

export function permissionsPage(permissions: ReadonlySet<string>, query: PageQuery): PermissionList {
  const page = pageRequest(query, 'permissions');
  const sorted = [...permissions].sort();
  const after = page.after?.[0];
  if (after !== undefined && typeof after !== 'string') throw badRequest('invalid pageToken');
  const rest = after === undefined ? sorted : sorted.filter((p) => p > after);
  const { items, nextPageToken } = toPage(rest.slice(0, page.pageSize + 1), page, (p) => [p], 'permissions');
  return { permissions: items, nextPageToken };
}
