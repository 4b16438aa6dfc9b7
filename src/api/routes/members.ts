// Project and organization members (contract §4.2-4.3), the wildcard project `-` queries and batches (§1.10),
// and invite links (§2.5).
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import {
  addMember,
  batchCreateMembers,
  batchDeleteMembers,
  createInviteUrl,
  getMember,
  listMemberProjects,
  listMembers,
  removeMember,
  updateMember,
  type MemberScope,
} from '../../services/members.ts';
import {
  AddMemberRequestSchema,
  BatchCreateMembersRequestSchema,
  BatchCreateMembersResponseSchema,
  BatchDeleteMembersRequestSchema,
  InviteUrlSchema,
  MemberListSchema,
  MemberPatchSchema,
  MemberProjectsQuerySchema,
  MemberSchema,
} from '../../wire/members.ts';
import { PageQuerySchema, UpdateMaskQuerySchema } from '../../wire/paging.ts';
import type { App } from '../types.ts';
import { noBodyIsEmpty, parseUpdateMask, principalOf } from '../http.ts';

type MemberParams = { project?: string; organization?: string; member: string };

/** The two member collections differ only in their parent. */
const COLLECTIONS = [
  {
    prefix: '/v2/projects/:project/members',
    noun: 'project',
    scope: (p: MemberParams): MemberScope => ({ type: 'project', id: p.project! }),
  },
  {
    prefix: '/v2/organizations/:organization/members',
    noun: 'organization',
    scope: (p: MemberParams): MemberScope => ({ type: 'organization', id: p.organization! }),
  },
] as const;

export function registerMemberRoutes(app: App, deps: Deps): void {
  // Static `-` routes first in intent; the router prefers static segments over `:project` anyway.
  app.get(
    '/v2/projects/-/members',
    {
      schema: { querystring: MemberProjectsQuerySchema },
      config: { summary: "One member's project memberships in an organization", response: MemberListSchema },
    },
    async (request) => listMemberProjects(deps, principalOf(request), request.query),
  );

  app.post(
    '/v2/projects/-/members/@batchCreate',
    {
      schema: { body: BatchCreateMembersRequestSchema },
      config: {
        summary: 'Add members to several projects, all or nothing',
        response: BatchCreateMembersResponseSchema,
      },
    },
    async (request) => batchCreateMembers(deps, principalOf(request), request.body.members),
  );

  app.post(
    '/v2/projects/-/members/@batchDelete',
    {
      schema: { body: BatchDeleteMembersRequestSchema },
      config: { summary: 'Remove members from several projects; unknown names are skipped', response: Type.Object({}) },
    },
    async (request) => batchDeleteMembers(deps, principalOf(request), request.body.names),
  );

  for (const c of COLLECTIONS) {
    const scopeOf = (params: unknown) => c.scope(params as MemberParams);
    const memberOf = (params: unknown) => (params as MemberParams).member;

    app.get(
      c.prefix,
      {
        schema: { querystring: PageQuerySchema },
        config: { summary: `List ${c.noun} members`, response: MemberListSchema },
      },
      async (request) => listMembers(deps, principalOf(request), scopeOf(request.params), request.query),
    );

    app.post(
      c.prefix,
      {
        schema: { body: AddMemberRequestSchema },
        config: { summary: `Add a ${c.noun} member (unknown emails are invited)`, response: MemberSchema },
      },
      async (request) => addMember(deps, principalOf(request), scopeOf(request.params), request.body),
    );

    app.get(
      `${c.prefix}/:member`,
      { config: { summary: `Get a ${c.noun} member`, response: MemberSchema } },
      async (request) => getMember(deps, principalOf(request), scopeOf(request.params), memberOf(request.params)),
    );

    app.patch(
      `${c.prefix}/:member`,
      {
        preValidation: noBodyIsEmpty,
        schema: { body: MemberPatchSchema, querystring: UpdateMaskQuerySchema },
        config: { summary: `Change the roles of a ${c.noun} member`, response: MemberSchema },
      },
      async (request) =>
        updateMember(
          deps,
          principalOf(request),
          scopeOf(request.params),
          memberOf(request.params),
          request.body,
          parseUpdateMask(request.query.updateMask),
        ),
    );

    app.delete(
      `${c.prefix}/:member`,
      { config: { summary: `Remove a ${c.noun} member`, response: Type.Object({}) } },
      async (request) => removeMember(deps, principalOf(request), scopeOf(request.params), memberOf(request.params)),
    );

    app.get(
      `${c.prefix}/:member/@getInviteUrl`,
      {
        config: { summary: `Invitation link for a pending ${c.noun} member`, response: InviteUrlSchema },
      },
      async (request) => createInviteUrl(deps, principalOf(request), scopeOf(request.params), memberOf(request.params)),
    );
  }
}
