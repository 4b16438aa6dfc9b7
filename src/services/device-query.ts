// Device lists (contract §4.6, §1.5, §1.10): the scope (one project, or `-` with organization/projects), list
// filters, order_by, and keyset page tokens that carry the sort key and a fingerprint of the filters.
import type { Deps } from '../deps.ts';
import { badRequest } from '../domain/errors.ts';
import { labelKeyProblem, parseLabelFilter } from '../domain/labels.ts';
import { idFromName } from '../domain/names.ts';
import { MAX_PAGE_BYTES, pageRequest, toPage } from '../domain/paging.ts';
import { sha256 } from '../runtime/sha256.ts';
import type { ProjectRecord } from '../store/contract/records.ts';
import type { DeviceListingRow, DeviceQuery, DeviceSort, DeviceSortValue } from '../store/contract/store.ts';
import type { DeviceListParams } from '../wire/devices.ts';
import { projectPermissions, readableScopes, requireProject } from './access.ts';
import type { Principal } from '../auth/principal.ts';

export interface DeviceOrder {
  sort: DeviceSort;
  descending: boolean;
}

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** order_by: name|id, type, productNumber, labels.<key>, reported.<eventType>.<field>…; '-' prefix = descending. */
export function parseOrderBy(raw: string | undefined): DeviceOrder {
  let path = (raw ?? '').trim();
  const descending = path.startsWith('-');
  if (descending) path = path.slice(1);
  if (path === '' || path === 'name' || path === 'id') return { sort: { kind: 'id' }, descending };
  if (path === 'type') return { sort: { kind: 'type' }, descending };
  if (path === 'productNumber' || path === 'product_number') return { sort: { kind: 'productNumber' }, descending };
  const dot = path.indexOf('.');
  const root = dot < 0 ? path : path.slice(0, dot);
  const rest = dot < 0 ? '' : path.slice(dot + 1);
  if (root === 'labels') {
    // Label keys may contain dots: everything after "labels." is the key.
    if (rest === '') throw badRequest('order_by: labels needs a key, e.g. labels.room');
    const problem = labelKeyProblem(rest);
    if (problem) throw badRequest(`order_by: ${problem}`);
    return { sort: { kind: 'label', key: rest }, descending };
  }
  if (root === 'reported') {
    const [eventType, ...fields] = rest.split('.');
    if (!eventType || fields.length === 0 || ![eventType, ...fields].every((f) => FIELD.test(f))) {
      throw badRequest('order_by: reported needs an event type and a field, e.g. reported.temperature.value');
    }
    return { sort: { kind: 'reported', eventType, fields }, descending };
  }
  throw badRequest(
    `order_by: unknown field ${root}; use name, id, type, productNumber, labels.<key> or reported.<eventType>.<field>`,
  );
}

/** Fingerprint of everything that shapes the result order and membership; a token only works with the same. */
function fingerprint(projectParam: string, params: DeviceListParams, order: DeviceOrder): string {
  const sorted = (a: string[] | undefined) => [...(a ?? [])].sort();
  const material = JSON.stringify([
    projectParam,
    params.organization ?? '',
    sorted(params.projects),
    sorted(params.deviceIds),
    sorted(params.deviceTypes),
    sorted(params.productNumbers),
    sorted(params.labelFilters),
    params.query ?? '',
    order,
  ]);
  return sha256(material, 'base64url').slice(0, 16);
}

/** The page token's key back to a store cursor; anything malformed is a bad token (400). */
function cursorOf(key: unknown[] | null, order: DeviceOrder): DeviceQuery['after'] {
  if (key === null) return null;
  if (order.sort.kind === 'id') {
    if (key.length === 1 && typeof key[0] === 'string') return { value: null, id: key[0] };
  } else if (
    key.length === 2 &&
    typeof key[1] === 'string' &&
    (key[0] === null || typeof key[0] === 'string' || typeof key[0] === 'number')
  ) {
    return { value: key[0] as DeviceSortValue, id: key[1] };
  }
  throw badRequest('invalid pageToken');
}

/** Projects whose devices a wildcard list covers: readable (device.read) and inside the requested scope. */
async function wildcardProjects(deps: Deps, principal: Principal, params: DeviceListParams): Promise<string[]> {
  const requested = (params.projects ?? []).map((p) => idFromName(p, 'projects', 'projects'));
  const organizationId =
    params.organization === undefined ? undefined : idFromName(params.organization, 'organizations', 'organization');
  if (requested.length === 0 && organizationId === undefined) {
    throw badRequest("the wildcard project '-' needs organization=organizations/{o} or projects=projects/{p}");
  }
  const readable = (p: ProjectRecord) => projectPermissions(principal, p).has('device.read');
  if (requested.length > 0) {
    const out: string[] = [];
    for (const id of new Set(requested)) {
      const p = await deps.store.projects.get(id);
      if (p && readable(p) && (organizationId === undefined || p.organizationId === organizationId)) out.push(p.id);
    }
    return out;
  }
  const scopes = readableScopes(principal);
  const out: string[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await deps.store.projects.list({ ...scopes, organizationId }, { after, limit: 1000 });
    for (const p of page) if (readable(p)) out.push(p.id);
    if (page.length < 1000) return out;
    after = page[page.length - 1]!.id;
  }
}

/**
 * One page of the device list (filters, order, wildcard scope), as listing rows with unparsed JSON columns (for
 * devicePageBody in device-json.ts), at most MAX_PAGE_BYTES of them.
 */
export async function listDeviceListing(
  deps: Deps,
  principal: Principal,
  projectParam: string,
  params: DeviceListParams,
): Promise<{ items: DeviceListingRow[]; nextPageToken: string }> {
  const order = parseOrderBy(params.orderBy);
  const labelFilters = (params.labelFilters ?? []).map(parseLabelFilter);
  let projectIds: string[];
  if (projectParam === '-') {
    projectIds = await wildcardProjects(deps, principal, params);
  } else {
    await requireProject(deps, principal, projectParam, 'device.read');
    projectIds = [projectParam];
  }
  const filters = fingerprint(projectParam, params, order);
  const page = pageRequest(params, filters);
  const after = cursorOf(page.after, order);
  if (projectIds.length === 0) return { items: [], nextPageToken: '' };
  const rows = await deps.store.devices.queryListing({
    projectIds,
    deviceIds: params.deviceIds ?? [],
    deviceTypes: params.deviceTypes ?? [],
    productNumbers: params.productNumbers ?? [],
    labelFilters,
    query: params.query === undefined ? null : params.query.toLowerCase(),
    sort: order.sort,
    descending: order.descending,
    after,
    limit: page.pageSize + 1,
    maxBytes: MAX_PAGE_BYTES,
  });
  const keyOf =
    order.sort.kind === 'id' ? (r: DeviceListingRow) => [r.id] : (r: DeviceListingRow) => [r.sortValue, r.id];
  return toPage(rows, page, keyOf, filters, (r) => r.labelsJson.length + r.reportedJson.length);
}
