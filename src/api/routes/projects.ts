// Projects (contract §4.1): list, create, get, patch, delete, permissions and the label batch.
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { requireProject } from '../../services/access.ts';
import {
  batchUpdateProjectLabels, createProject, deleteProject, getProject, listProjects, updateProject,
  type LocationInput, type ProjectLabelBatch, type ProjectPatch,
} from '../../services/projects.ts';
import type { App } from '../types.ts';
import { PagingQuery, UpdateMaskQuery, noBodyIsEmpty, parseUpdateMask, principalOf } from '../http.ts';
import { permissionsPage } from './permissions.ts';

const LocationSchema = Type.Object({
  latitude: Type.Optional(Type.Number()),
  longitude: Type.Optional(Type.Number()),
  timeLocation: Type.Optional(Type.String()),
});
const LocationOut = Type.Object({
  latitude: Type.Union([Type.Number(), Type.Null()]), longitude: Type.Union([Type.Number(), Type.Null()]), timeLocation: Type.String(),
});

export const ProjectSchema = Type.Object({
  name: Type.String(),
  displayName: Type.String(),
  organization: Type.String(),
  organizationDisplayName: Type.String(),
  sensorCount: Type.Integer(),
  cloudConnectorCount: Type.Integer(),
  inventory: Type.Boolean(),
  location: LocationOut,
  labels: Type.Record(Type.String(), Type.String()),
});

const CreateBody = Type.Object({
  organization: Type.String({ description: 'organizations/{o}' }),
  displayName: Type.String({ description: '1 to 256 characters' }),
  location: Type.Optional(LocationSchema),
});
const PatchBody = Type.Object({
  displayName: Type.Optional(Type.String()),
  organization: Type.Optional(Type.String({ description: 'immutable; a differing value is a 400' })),
  location: Type.Optional(LocationSchema),
});
const BatchUpdateBody = Type.Object({
  projects: Type.Array(Type.String(), { description: 'projects/{p} names' }),
  addLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
  removeLabels: Type.Optional(Type.Array(Type.String())),
});

type ProjectParams = { project: string };

export function registerProjectRoutes(app: App, deps: Deps): void {
  app.get('/v2/projects', {
    schema: {
      querystring: Type.Object({
        ...PagingQuery,
        organization: Type.Optional(Type.String({ description: 'organizations/{o}: only its projects' })),
        query: Type.Optional(Type.String({ description: 'case-insensitive substring of displayName' })),
      }),
    },
    config: { summary: 'List the projects the caller can read', response: Type.Object({ projects: Type.Array(ProjectSchema), nextPageToken: Type.String() }) },
  }, async (request) => listProjects(deps, principalOf(request), request.query as Record<string, string>));

  app.post('/v2/projects', {
    schema: { body: CreateBody },
    config: { summary: 'Create a project in an organization', response: ProjectSchema },
  }, async (request) => createProject(deps, principalOf(request), request.body as { organization: string; displayName: string; location?: LocationInput }));

  app.post('/v2/projects/@batchUpdate', {
    schema: { body: BatchUpdateBody },
    config: { summary: 'Add or remove labels on many projects, all or nothing', response: Type.Object({}) },
  }, async (request) => batchUpdateProjectLabels(deps, principalOf(request), request.body as ProjectLabelBatch));

  app.get('/v2/projects/:project', { config: { summary: 'Get a project', response: ProjectSchema } }, async (request) =>
    getProject(deps, principalOf(request), (request.params as ProjectParams).project));

  app.patch('/v2/projects/:project', {
    preValidation: noBodyIsEmpty,
    schema: { body: PatchBody, querystring: Type.Object(UpdateMaskQuery) },
    config: { summary: 'Update displayName and location', response: ProjectSchema },
  }, async (request) => updateProject(
    deps, principalOf(request), (request.params as ProjectParams).project, request.body as ProjectPatch,
    parseUpdateMask((request.query as { updateMask?: string }).updateMask),
  ));

  app.delete('/v2/projects/:project', {
    config: { summary: 'Delete a project without devices or data connectors', response: Type.Object({}) },
  }, async (request) => deleteProject(deps, principalOf(request), (request.params as ProjectParams).project));

  app.get('/v2/projects/:project/permissions', {
    schema: { querystring: Type.Object(PagingQuery) },
    config: { summary: "The caller's permissions on the project", response: Type.Object({ permissions: Type.Array(Type.String()), nextPageToken: Type.String() }) },
  }, async (request) => {
    const projectId = (request.params as ProjectParams).project;
    const { permissions } = await requireProject(deps, principalOf(request), projectId, 'project.read');
    return permissionsPage(permissions, request.query as { pageSize?: string; pageToken?: string });
  });
}
