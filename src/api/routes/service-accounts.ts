// Service accounts and keys (contract §3.5, §3.6, §4.5). Secrets appear only in the key-create response.
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.ts';
import { notFound } from '../../domain/errors.ts';
import { keyName, serviceAccountName } from '../../domain/names.ts';
import { formatTimestamp } from '../../domain/time.ts';
import type { MemberScope } from '../../services/members.ts';
import * as service from '../../services/service-accounts.ts';
import type { KeyRecord, ServiceAccountRecord } from '../../store/contract/records.ts';
import { MemberListSchema, MemberSchema } from '../../wire/members.ts';
import { PageQuerySchema, UpdateMaskQuerySchema } from '../../wire/paging.ts';
import {
  CreateKeyResponseSchema,
  KeyListSchema,
  KeySchema,
  ServiceAccountInputSchema,
  ServiceAccountListSchema,
  ServiceAccountSchema,
  type Key,
  type ServiceAccount,
} from '../../wire/service-accounts.ts';
import type { App } from '../types.ts';
import { noBodyIsEmpty, parseUpdateMask, principalOf } from '../http.ts';

export const presentServiceAccount = (sa: ServiceAccountRecord): ServiceAccount => ({
  name: serviceAccountName(sa.projectId, sa.id),
  email: sa.email,
  displayName: sa.displayName,
  enableBasicAuth: sa.enableBasicAuth,
  createTime: formatTimestamp(sa.createTime),
  updateTime: formatTimestamp(sa.updateTime),
});

const presentKey = (projectId: string, k: KeyRecord): Key => ({
  name: keyName(projectId, k.serviceAccountId, k.id),
  id: k.id,
  createTime: formatTimestamp(k.createTime),
});

type Params = { project: string; serviceAccount: string; key: string; parentType: string; parent: string };
const paramsOf = (request: FastifyRequest) => request.params as Params;

const SA_PATH = '/v2/projects/:project/serviceaccounts/:serviceAccount';
/** A membership of the account in another organization, named by its parent: …/memberships/projects/{q} or …/memberships/organizations/{o}. */
const MEMBERSHIP_PATH = `${SA_PATH}/memberships/:parentType/:parent`;

function parentOf(params: Params): MemberScope {
  if (params.parentType === 'projects') return { type: 'project', id: params.parent };
  if (params.parentType === 'organizations') return { type: 'organization', id: params.parent };
  throw notFound('membership not found');
}

export function registerServiceAccountRoutes(app: App, deps: Deps): void {
  app.get(
    '/v2/projects/:project/serviceaccounts',
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: 'List the service accounts owned by the project', response: ServiceAccountListSchema },
    },
    async (request) => {
      const { items, nextPageToken } = await service.listServiceAccounts(
        deps,
        principalOf(request),
        paramsOf(request).project,
        request.query,
      );
      return { serviceAccounts: items.map(presentServiceAccount), nextPageToken };
    },
  );

  app.post(
    '/v2/projects/:project/serviceaccounts',
    {
      preValidation: noBodyIsEmpty,
      schema: { body: ServiceAccountInputSchema },
      config: {
        summary: 'Create a service account (no rights until added as a member)',
        response: ServiceAccountSchema,
      },
    },
    async (request) => {
      const sa = await service.createServiceAccount(
        deps,
        principalOf(request),
        paramsOf(request).project,
        request.body,
      );
      return presentServiceAccount(sa);
    },
  );

  app.get(
    SA_PATH,
    { config: { summary: 'Get a service account', response: ServiceAccountSchema } },
    async (request) => {
      const { project, serviceAccount } = paramsOf(request);
      return presentServiceAccount(
        await service.getServiceAccount(deps, principalOf(request), project, serviceAccount),
      );
    },
  );

  app.patch(
    SA_PATH,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: ServiceAccountInputSchema, querystring: UpdateMaskQuerySchema },
      config: {
        summary: 'Update displayName and enableBasicAuth of a service account',
        response: ServiceAccountSchema,
      },
    },
    async (request) => {
      const { project, serviceAccount } = paramsOf(request);
      const sa = await service.updateServiceAccount(
        deps,
        principalOf(request),
        project,
        serviceAccount,
        request.body,
        parseUpdateMask(request.query.updateMask),
      );
      return presentServiceAccount(sa);
    },
  );

  app.delete(
    SA_PATH,
    { config: { summary: 'Delete a service account, its keys and its memberships', response: Type.Object({}) } },
    async (request) => {
      const { project, serviceAccount } = paramsOf(request);
      await service.deleteServiceAccount(deps, principalOf(request), project, serviceAccount);
      return {};
    },
  );

  app.get(
    `${SA_PATH}/memberships`,
    {
      schema: { querystring: PageQuerySchema },
      config: {
        summary:
          "The service account's memberships in other organizations: PENDING until accepted here, granting nothing until then",
        response: MemberListSchema,
      },
    },
    async (request) => {
      const { project, serviceAccount } = paramsOf(request);
      return service.listForeignMemberships(deps, principalOf(request), project, serviceAccount, request.query);
    },
  );

  // No body is expected and any body is ignored, as for creating a key.
  app.post(
    `${MEMBERSHIP_PATH}/@accept`,
    {
      config: {
        rawBody: true,
        summary: "Accept another organization's membership of the service account",
        response: MemberSchema,
      },
    },
    async (request) => {
      const params = paramsOf(request);
      return service.acceptForeignMembership(
        deps,
        principalOf(request),
        params.project,
        params.serviceAccount,
        parentOf(params),
      );
    },
  );

  app.delete(
    MEMBERSHIP_PATH,
    {
      config: {
        summary: "Decline or leave another organization's membership of the service account",
        response: Type.Object({}),
      },
    },
    async (request) => {
      const params = paramsOf(request);
      return service.removeForeignMembership(
        deps,
        principalOf(request),
        params.project,
        params.serviceAccount,
        parentOf(params),
      );
    },
  );

  app.get(
    `${SA_PATH}/keys`,
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: 'List the keys of a service account (never their secrets)', response: KeyListSchema },
    },
    async (request) => {
      const { project, serviceAccount } = paramsOf(request);
      const { items, nextPageToken } = await service.listKeys(
        deps,
        principalOf(request),
        project,
        serviceAccount,
        request.query,
      );
      return { keys: items.map((k) => presentKey(project, k)), nextPageToken };
    },
  );

  // No body is expected and any body is ignored, malformed or not: rawBody keeps the JSON parser out of it.
  app.post(
    `${SA_PATH}/keys`,
    {
      config: {
        rawBody: true,
        summary: 'Create a key; the secret is returned only in this response',
        response: CreateKeyResponseSchema,
      },
    },
    async (request) => {
      const { project, serviceAccount } = paramsOf(request);
      const { key, secret } = await service.createKey(deps, principalOf(request), project, serviceAccount);
      return { key: presentKey(project, key), secret };
    },
  );

  app.get(
    `${SA_PATH}/keys/:key`,
    { config: { summary: 'Get a key (never its secret)', response: KeySchema } },
    async (request) => {
      const { project, serviceAccount, key } = paramsOf(request);
      return presentKey(project, await service.getKey(deps, principalOf(request), project, serviceAccount, key));
    },
  );

  app.delete(
    `${SA_PATH}/keys/:key`,
    { config: { summary: 'Delete a key; tokens minted with it die', response: Type.Object({}) } },
    async (request) => {
      const { project, serviceAccount, key } = paramsOf(request);
      await service.deleteKey(deps, principalOf(request), project, serviceAccount, key);
      return {};
    },
  );
}
