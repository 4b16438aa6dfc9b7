// Project and organization members on the wire (contract §3.3, §4.2-4.3, §1.10): the member, its lists, the bodies
// of add, patch and the wildcard project's batches, and invite links (§2.5).
import { Type, type Static } from 'typebox';
import { PagingQuery } from './paging.ts';

/**
 * Keys in contract order. A PENDING member shows no display name: it may be an account of another organization
 * that has not accepted, whose name (and whether it exists) is not this scope's to learn.
 */
export const MemberSchema = Type.Object({
  name: Type.String(),
  displayName: Type.String(),
  roles: Type.Array(Type.String()),
  status: Type.Union([Type.Literal('ACCEPTED'), Type.Literal('PENDING')]),
  email: Type.String(),
  accountType: Type.Union([Type.Literal('USER'), Type.Literal('SERVICE_ACCOUNT')]),
  createTime: Type.String(),
});
export type Member = Static<typeof MemberSchema>;

export const MemberListSchema = Type.Object({ members: Type.Array(MemberSchema), nextPageToken: Type.String() });
export type MemberList = Static<typeof MemberListSchema>;

/** GET /projects/-/members: one member's project memberships in an organization. */
export const MemberProjectsQuerySchema = Type.Object({
  ...PagingQuery,
  memberId: Type.Optional(Type.String({ description: 'user or service account id (required)' })),
  organization: Type.Optional(Type.String({ description: 'organizations/{o} (required)' })),
});
export type MemberProjectsQuery = Static<typeof MemberProjectsQuerySchema>;

export const AddMemberRequestSchema = Type.Object({
  email: Type.String({
    description:
      'user or service account email; one that is not a member of the organization yet gets a PENDING membership (an invitation)',
  }),
  roles: Type.Array(Type.String(), { description: 'roles/<role>' }),
});
export type AddMemberRequest = Static<typeof AddMemberRequestSchema>;

export const MemberPatchSchema = Type.Object({ roles: Type.Optional(Type.Array(Type.String())) });
export type MemberPatch = Static<typeof MemberPatchSchema>;

export const InviteUrlSchema = Type.Object({ inviteUrl: Type.String() });
export type InviteUrl = Static<typeof InviteUrlSchema>;

export const BatchCreateItemSchema = Type.Object({
  project: Type.String(),
  email: Type.String(),
  roles: Type.Array(Type.String()),
});
export type BatchCreateItem = Static<typeof BatchCreateItemSchema>;

/** POST /projects/-/members:batchCreate. */
export const BatchCreateMembersRequestSchema = Type.Object({ members: Type.Array(BatchCreateItemSchema) });
export type BatchCreateMembersRequest = Static<typeof BatchCreateMembersRequestSchema>;

export const BatchCreateMembersResponseSchema = Type.Object({ members: Type.Array(MemberSchema) });
export type BatchCreateMembersResponse = Static<typeof BatchCreateMembersResponseSchema>;

/** POST /projects/-/members:batchDelete. */
export const BatchDeleteMembersRequestSchema = Type.Object({
  names: Type.Array(Type.String(), { description: 'projects/{p}/members/{m}' }),
});
export type BatchDeleteMembersRequest = Static<typeof BatchDeleteMembersRequestSchema>;
