// Projects (contract §4.1): list, create, get, patch, delete, permissions and the label batch.
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { requireProject } from '../../services/access.ts';
import {
  batchUpdateProjectLabels,
  createProject,
  deleteProject,
  getProject,
  listProjects,
  updateProject,
} from '../../services/projects.ts';
import { PageQuerySchema, UpdateMaskQuerySchema } from '../../wire/paging.ts';
import {
  CreateProjectRequestSchema,
  ProjectLabelBatchSchema,
  ProjectListQuerySchema,
  ProjectListSchema,
  ProjectPatchSchema,
  ProjectSchema,
} from '../../wire/projects.ts';
import { PermissionListSchema } from '../../wire/roles.ts';
import type { App } from '../types.ts';
import { noBodyIsEmpty, parseUpdateMask, principalOf } from '../http.ts';
import { permissionsPage } from './permissions.ts';

type ProjectParams = { project: string };

export function registerProjectRoutes(app: App, deps: Deps): void {
  app.get(
    '/v2/projects',
    {
      schema: { querystring: ProjectListQuerySchema },
      config: { summary: 'List the projects the caller can read', response: ProjectListSchema },
    },
    async (request) => listProjects(deps, principalOf(request), request.query),
  );

  app.post(
    '/v2/projects',
    {
      schema: { body: CreateProjectRequestSchema },
      config: { summary: 'Create a project in an organization', response: ProjectSchema },
    },
    async (request) => createProject(deps, principalOf(request), request.body),
  );

  app.post(
    '/v2/projects/@batchUpdate',
    {
      schema: { body: ProjectLabelBatchSchema },
      config: { summary: 'Add or remove labels on many projects, all or nothing', response: Type.Object({}) },
    },
    async (request) => batchUpdateProjectLabels(deps, principalOf(request), request.body),
  );

  app.get('/v2/projects/:project', { config: { summary: 'Get a project', response: ProjectSchema } }, async (request) =>
    getProject(deps, principalOf(request), (request.params as ProjectParams).project),
  );

  app.patch(
    '/v2/projects/:project',
    {
      preValidation: noBodyIsEmpty,
      schema: { body: ProjectPatchSchema, querystring: UpdateMaskQuerySchema },
      config: { summary: 'Update displayName and location', response: ProjectSchema },
    },
    async (request) =>
      updateProject(
        deps,
        principalOf(request),
        (request.params as ProjectParams).project,
        request.body,
        parseUpdateMask(request.query.updateMask),
      ),
  );

  app.delete(
    '/v2/projects/:project',
    {
      config: { summary: 'Delete a project without devices or data connectors', response: Type.Object({}) },
    },
    async (request) => deleteProject(deps, principalOf(request), (request.params as ProjectParams).project),
  );

  app.get(
    '/v2/projects/:project/permissions',
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: "The caller's permissions on the project", response: PermissionListSchema },
    },
    async (request) => {
      const projectId = (request.params as ProjectParams).project;
      const { permissions } = await requireProject(deps, principalOf(request), projectId, 'project.read');
      return permissionsPage(permissions, request.query);
    },
  );
}
