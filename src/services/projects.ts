// Projects (contract §3.2, §4.1): visibility, create, update with field masks, delete with its cascade, label batches.
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { checkBatchSize } from '../domain/batches.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { labelKeyProblem, labelValueProblem } from '../domain/labels.ts';
import { concreteProjectId, idFromName, organizationName, projectName } from '../domain/names.ts';
import { pageRequest, toPage } from '../domain/paging.ts';
import type { Location, ProjectWithCounts } from '../store/contract/records.ts';
import type { Repos } from '../store/contract/store.ts';
import type {
  CreateProjectRequest,
  LocationInput,
  Project,
  ProjectLabelBatch,
  ProjectList,
  ProjectListQuery,
  ProjectPatch,
} from '../wire/projects.ts';
import { readableScopes, requireHoldsRolesOf, requireOrganization, requireProject } from './access.ts';
import type { Principal } from '../auth/principal.ts';

export const UNSET_LOCATION: Location = { latitude: null, longitude: null, timeLocation: '' };
const MAX_DISPLAY_NAME = 256;
const MAX_TIME_LOCATION = 256;
const MAX_LABELS = 100;

/** The wire shape of §3.2, keys in contract order. */
export function presentProject(p: ProjectWithCounts): Project {
  return {
    name: projectName(p.id),
    displayName: p.displayName,
    organization: organizationName(p.organizationId),
    organizationDisplayName: p.organizationDisplayName,
    sensorCount: p.sensorCount,
    cloudConnectorCount: p.cloudConnectorCount,
    inventory: false, // §7 #8: there is no device claiming
    location: { latitude: p.location.latitude, longitude: p.location.longitude, timeLocation: p.location.timeLocation },
    labels: { ...p.labels },
  };
}

function parseDisplayName(value: unknown, field = 'displayName'): string {
  if (typeof value !== 'string' || value.length < 1 || value.length > MAX_DISPLAY_NAME) {
    throw badRequest(`${field} must be a string of 1 to ${MAX_DISPLAY_NAME} characters`);
  }
  return value;
}

function parseCoordinate(value: unknown, field: string, limit: number): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || Math.abs(value) > limit) {
    throw badRequest(`${field} must be a number between -${limit} and ${limit}, or null`);
  }
  return value;
}

function parseTimeLocation(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string' || value.length > MAX_TIME_LOCATION) {
    throw badRequest(`location.timeLocation must be a string of at most ${MAX_TIME_LOCATION} characters`);
  }
  return value;
}

/** A whole location: absent parts are unset (null or ""). */
export function parseLocation(input: LocationInput | undefined): Location {
  if (input === undefined) return { ...UNSET_LOCATION };
  return {
    latitude: parseCoordinate(input.latitude, 'location.latitude', 90),
    longitude: parseCoordinate(input.longitude, 'location.longitude', 180),
    timeLocation: parseTimeLocation(input.timeLocation),
  };
}

async function loadProject(repos: Repos, id: string): Promise<ProjectWithCounts> {
  const p = await repos.projects.getWithCounts(id);
  if (!p) throw notFound('project not found');
  return p;
}

export async function listProjects(deps: Deps, principal: Principal, query: ProjectListQuery): Promise<ProjectList> {
  const organizationId =
    query.organization === undefined ? undefined : idFromName(query.organization, 'organizations', 'organization');
  const filters = JSON.stringify([organizationId ?? '', query.query ?? '']);
  const page = pageRequest(query, filters);
  const after = page.after?.[0] ?? null;
  if (after !== null && typeof after !== 'string') throw badRequest('invalid pageToken'); // a forged key must not reach SQL
  const scopes = readableScopes(principal);
  const rows = await deps.store.projects.list(
    { ...scopes, organizationId, query: query.query },
    { after, limit: page.pageSize + 1 },
  );
  const { items, nextPageToken } = toPage(rows, page, (p) => [p.id], filters);
  return { projects: items.map(presentProject), nextPageToken };
}

export async function createProject(deps: Deps, principal: Principal, body: CreateProjectRequest): Promise<Project> {
  const organizationId = idFromName(body.organization, 'organizations', 'organization');
  await requireOrganization(deps, principal, organizationId, 'project.create');
  const displayName = parseDisplayName(body.displayName);
  const location = parseLocation(body.location);
  const id = deps.ids.next();
  const now = nowMicros(deps);
  // No membership for the creator: organization admins already see every project of their organization.
  await deps.store.projects.create({
    id,
    organizationId,
    displayName,
    location,
    labels: {},
    createTime: now,
    updateTime: now,
  });
  return presentProject(await loadProject(deps.store, id));
}

export async function getProject(deps: Deps, principal: Principal, projectId: string): Promise<Project> {
  await requireProject(deps, principal, projectId, 'project.read');
  return presentProject(await loadProject(deps.store, projectId));
}

/** Mask paths that name read-only fields: accepted and ignored, like the fields themselves (§1.2). */
const READ_ONLY_PATHS = new Set([
  'name',
  'organization',
  'organizationDisplayName',
  'sensorCount',
  'cloudConnectorCount',
  'inventory',
  'labels',
  'createTime',
  'updateTime',
]);
const UPDATABLE_PATHS = new Set([
  'displayName',
  'location',
  'location.latitude',
  'location.longitude',
  'location.timeLocation',
]);
const camel = (path: string) => path.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

export async function updateProject(
  deps: Deps,
  principal: Principal,
  projectId: string,
  body: ProjectPatch,
  mask: Set<string> | null,
): Promise<Project> {
  const { project } = await requireProject(deps, principal, projectId, 'project.update');
  if (
    body.organization !== undefined &&
    idFromName(body.organization, 'organizations', 'organization') !== project.organizationId
  ) {
    throw badRequest('organization is immutable; a project cannot move to another organization');
  }
  const paths = mask ? [...mask].map(camel) : null;
  for (const path of paths ?? []) {
    if (!UPDATABLE_PATHS.has(path) && !READ_ONLY_PATHS.has(path))
      throw badRequest(`update_mask: unknown field "${path}"`);
  }
  // Parsed outside the transaction, applied to the row read inside it (a concurrent label batch is kept).
  const applies = (path: string) => (paths ? paths.includes(path) : false);
  const displayName = (paths ? applies('displayName') : body.displayName !== undefined)
    ? parseDisplayName(body.displayName)
    : undefined;
  const location = (paths ? applies('location') : body.location !== undefined)
    ? parseLocation(body.location)
    : undefined;
  const latitude = applies('location.latitude')
    ? parseCoordinate(body.location?.latitude, 'location.latitude', 90)
    : undefined;
  const longitude = applies('location.longitude')
    ? parseCoordinate(body.location?.longitude, 'location.longitude', 180)
    : undefined;
  const timeLocation = applies('location.timeLocation') ? parseTimeLocation(body.location?.timeLocation) : undefined;
  return deps.store.transaction(async (tx) => {
    const current = await tx.projects.getForUpdate(project.id);
    if (!current) throw notFound('project not found');
    const next = { ...current, location: { ...(location ?? current.location) }, updateTime: nowMicros(deps) };
    if (displayName !== undefined) next.displayName = displayName;
    if (latitude !== undefined) next.location.latitude = latitude;
    if (longitude !== undefined) next.location.longitude = longitude;
    if (timeLocation !== undefined) next.location.timeLocation = timeLocation;
    await tx.projects.update(next);
    return presentProject(await loadProject(tx, project.id));
  });
}

/** Deletes an empty project; its service accounts (with keys and memberships everywhere) and memberships go too. */
export async function deleteProject(
  deps: Deps,
  principal: Principal,
  projectId: string,
): Promise<Record<string, never>> {
  const { project } = await requireProject(deps, principal, projectId, 'project.delete');
  await deps.store.transaction(async (tx) => {
    const contents = await tx.projects.countContents(projectId);
    if (contents.devices > 0 || contents.dataConnectors > 0) {
      throw badRequest(
        `project still has ${contents.devices} device(s) and ${contents.dataConnectors} data connector(s); remove them first`,
      );
    }
    await guardOwnedAccounts(tx, principal, project.id, project.organizationId);
    // Its notification rules (with their alerts, pending conditions and queued notifications) and its contacts go
    // with it: none of them means anything without the project (at most 100 rules and 1,000 contacts).
    for (const r of await tx.rules.listByProject(project.id, { after: null, limit: 1000 })) await tx.rules.delete(r.id);
    for (let page; (page = await tx.contacts.listByProject(project.id, { after: null, limit: 500 })).length > 0; )
      for (const c of page) await tx.contacts.delete(c.id);
    await tx.projects.delete(projectId);
  });
  return {};
}

/**
 * Deleting the project deletes its service accounts, so it needs what deleting each of them needs: every role the
 * account holds in the project's organization (no escalation through an account, §2.6), and none may be the last
 * ACCEPTED admin of that organization (§7 #9). Other organizations' memberships of the accounts go with them and
 * never block the delete (requireHoldsRolesOf).
 */
async function guardOwnedAccounts(
  tx: Repos,
  principal: Principal,
  projectId: string,
  organizationId: string,
): Promise<void> {
  const owned = new Set<string>();
  let after: string | null = null;
  for (;;) {
    const batch = await tx.serviceAccounts.listByProject(projectId, { after, limit: 500 });
    for (const sa of batch) owned.add(sa.id);
    if (batch.length < 500) break;
    after = batch[batch.length - 1]!.id;
  }
  for (const id of owned)
    await requireHoldsRolesOf(
      tx,
      principal,
      id,
      organizationId,
      'deleting this project, which deletes its service accounts,',
    );
  let removedAdmins = 0;
  for (const id of owned) {
    for (const m of await tx.memberships.listByMember(id)) {
      if (
        m.scopeType === 'organization' &&
        m.scopeId === organizationId &&
        m.status === 'ACCEPTED' &&
        m.roles.includes('roles/organization.admin')
      )
        removedAdmins++;
    }
  }
  if (removedAdmins > 0 && (await tx.memberships.countAcceptedOrganizationAdmins(organizationId)) <= removedAdmins) {
    throw badRequest(
      `deleting this project would remove the last organization administrator of ${organizationName(organizationId)} (one of its service accounts)`,
    );
  }
}

function checkLabelKey(key: string, field: string): void {
  const problem = labelKeyProblem(key);
  if (problem) throw badRequest(`${field}: ${problem} (${JSON.stringify(key.slice(0, 130))})`);
}

/** POST /projects:batchUpdate: labels on many projects, all or nothing; removals apply before additions. */
export async function batchUpdateProjectLabels(
  deps: Deps,
  principal: Principal,
  body: ProjectLabelBatch,
): Promise<Record<string, never>> {
  if (body.addLabels === undefined && body.removeLabels === undefined)
    throw badRequest('addLabels or removeLabels is required');
  if (body.projects.length === 0) throw badRequest('projects must name at least one project');
  checkBatchSize(body.projects, 'projects');
  for (const [key, value] of Object.entries(body.addLabels ?? {})) {
    checkLabelKey(key, 'addLabels');
    const problem = labelValueProblem(value);
    if (problem) throw badRequest(`addLabels.${key}: ${problem}`);
  }
  for (const key of body.removeLabels ?? []) checkLabelKey(key, 'removeLabels');
  // Sorted: two batches lock the projects they share in the same order, so they never deadlock.
  const ids = [
    ...new Set(body.projects.map((name, i) => concreteProjectId(idFromName(name, 'projects', `projects[${i}]`)))),
  ].sort();
  for (const id of ids) await requireProject(deps, principal, id, 'project.update');
  const now = nowMicros(deps);
  await deps.store.transaction(async (tx) => {
    for (const id of ids) {
      const project = await tx.projects.getForUpdate(id);
      if (!project) throw notFound('project not found');
      const labels = { ...project.labels };
      for (const key of body.removeLabels ?? []) delete labels[key];
      for (const [key, value] of Object.entries(body.addLabels ?? {})) labels[key] = value;
      if (Object.keys(labels).length > MAX_LABELS)
        throw badRequest(`${projectName(id)} would hold more than ${MAX_LABELS} labels`);
      await tx.projects.update({ ...project, labels, updateTime: now });
    }
  });
  return {};
}
