// Project and organization members (contract §4.2-4.3), the wildcard project `-` queries and batches (§1.10),
// and invite links (§2.5).
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import {
  addMember, batchCreateMembers, batchDeleteMembers, createInviteUrl, getMember, listMemberProjects, listMembers, removeMember,
  updateMember, type BatchCreateItem, type MemberScope,
} from '../../services/members.ts';
import type { App } from '../types.ts';
import { PagingQuery, UpdateMaskQuery, noBodyIsEmpty, parseUpdateMask, principalOf } from '../http.ts';

export const MemberSchema = Type.Object({
  name: Type.String(),
  displayName: Type.String(),
  roles: Type.Array(Type.String()),
  status: Type.Union([Type.Literal('ACCEPTED'), Type.Literal('PENDING')]),
  email: Type.String(),
  accountType: Type.Union([Type.Literal('USER'), Type.Literal('SERVICE_ACCOUNT')]),
  createTime: Type.String(),
});
const MemberList = Type.Object({ members: Type.Array(MemberSchema), nextPageToken: Type.String() });
const AddBody = Type.Object({
  email: Type.String({ description: 'user or service account email; one that is not a member of the organization yet gets a PENDING membership (an invitation)' }),
  roles: Type.Array(Type.String(), { description: 'roles/<role>' }),
});
const PatchBody = Type.Object({ roles: Type.Optional(Type.Array(Type.String())) });
const InviteUrl = Type.Object({ inviteUrl: Type.String() });

type MemberParams = { project?: string; organization?: string; member: string };

/** The two member collections differ only in their parent. */
const COLLECTIONS = [
  { prefix: '/v2/projects/:project/members', noun: 'project', scope: (p: MemberParams): MemberScope => ({ type: 'project', id: p.project! }) },
  { prefix: '/v2/organizations/:organization/members', noun: 'organization', scope: (p: MemberParams): MemberScope => ({ type: 'organization', id: p.organization! }) },
] as const;

export function registerMemberRoutes(app: App, deps: Deps): void {
  // Static `-` routes first in intent; the router prefers static segments over `:project` anyway.
  app.get('/v2/projects/-/members', {
    schema: {
      querystring: Type.Object({
        ...PagingQuery,
        memberId: Type.Optional(Type.String({ description: 'user or service account id (required)' })),
        organization: Type.Optional(Type.String({ description: 'organizations/{o} (required)' })),
      }),
    },
    config: { summary: "One member's project memberships in an organization", response: MemberList },
  }, async (request) => listMemberProjects(deps, principalOf(request), request.query as Record<string, string>));

  app.post('/v2/projects/-/members/@batchCreate', {
    schema: {
      body: Type.Object({ members: Type.Array(Type.Object({ project: Type.String(), email: Type.String(), roles: Type.Array(Type.String()) })) }),
    },
    config: { summary: 'Add members to several projects, all or nothing', response: Type.Object({ members: Type.Array(MemberSchema) }) },
  }, async (request) => batchCreateMembers(deps, principalOf(request), (request.body as { members: BatchCreateItem[] }).members));

  app.post('/v2/projects/-/members/@batchDelete', {
    schema: { body: Type.Object({ names: Type.Array(Type.String(), { description: 'projects/{p}/members/{m}' }) }) },
    config: { summary: 'Remove members from several projects; unknown names are skipped', response: Type.Object({}) },
  }, async (request) => batchDeleteMembers(deps, principalOf(request), (request.body as { names: string[] }).names));

  for (const c of COLLECTIONS) {
    const scopeOf = (params: unknown) => c.scope(params as MemberParams);
    const memberOf = (params: unknown) => (params as MemberParams).member;

    app.get(c.prefix, {
      schema: { querystring: Type.Object(PagingQuery) },
      config: { summary: `List ${c.noun} members`, response: MemberList },
    }, async (request) => listMembers(deps, principalOf(request), scopeOf(request.params), request.query as Record<string, string>));

    app.post(c.prefix, {
      schema: { body: AddBody },
      config: { summary: `Add a ${c.noun} member (unknown emails are invited)`, response: MemberSchema },
    }, async (request) => addMember(deps, principalOf(request), scopeOf(request.params), request.body as { email: string; roles: string[] }));

    app.get(`${c.prefix}/:member`, { config: { summary: `Get a ${c.noun} member`, response: MemberSchema } }, async (request) =>
      getMember(deps, principalOf(request), scopeOf(request.params), memberOf(request.params)));

    app.patch(`${c.prefix}/:member`, {
      preValidation: noBodyIsEmpty,
      schema: { body: PatchBody, querystring: Type.Object(UpdateMaskQuery) },
      config: { summary: `Change the roles of a ${c.noun} member`, response: MemberSchema },
    }, async (request) => updateMember(
      deps, principalOf(request), scopeOf(request.params), memberOf(request.params), request.body as { roles?: string[] },
      parseUpdateMask((request.query as { updateMask?: string }).updateMask),
    ));

    app.delete(`${c.prefix}/:member`, { config: { summary: `Remove a ${c.noun} member`, response: Type.Object({}) } }, async (request) =>
      removeMember(deps, principalOf(request), scopeOf(request.params), memberOf(request.params)));

    app.get(`${c.prefix}/:member/@getInviteUrl`, {
      config: { summary: `Invitation link for a pending ${c.noun} member`, response: InviteUrl },
    }, async (request) => createInviteUrl(deps, principalOf(request), scopeOf(request.params), memberOf(request.params)));
  }
}
