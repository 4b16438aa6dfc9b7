// Invitations on the wire (contract §2.5): looking up and accepting an invitation link, the token being the
// credential.
import { Type, type Static } from 'typebox';

export const LookupInviteRequestSchema = Type.Object({
  token: Type.String({ description: 'the token of the invitation link' }),
});
export type LookupInviteRequest = Static<typeof LookupInviteRequestSchema>;

export const InvitationSchema = Type.Object({
  email: Type.String({ description: 'the invited user, who signs in with it once the invitation is accepted' }),
  displayName: Type.String({ description: '"" for a user who has an account already' }),
  expireTime: Type.String({ description: 'the link works until then (7 days after it was made), once' }),
  memberships: Type.Array(
    Type.Object({
      parent: Type.String({ description: 'projects/{p} or organizations/{o}' }),
      parentDisplayName: Type.String(),
      roles: Type.Array(Type.String()),
    }),
    { description: "every membership of the user in the link's organization: accepting makes all of them ACCEPTED" },
  ),
});
export type Invitation = Static<typeof InvitationSchema>;

export const AcceptInviteRequestSchema = Type.Object({
  token: Type.String({ description: 'the token of the invitation link' }),
  password: Type.String({
    description: "at least 12 characters; for an email that has an account already, that account's password",
  }),
  displayName: Type.Optional(Type.String({ description: 'ignored for an email that has an account already' })),
});
export type AcceptInviteRequest = Static<typeof AcceptInviteRequestSchema>;
