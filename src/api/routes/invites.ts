// POST /v2/invites:accept (contract §2.5) and POST /v2/invites:lookup (what a link is for, shown on the console's
// invitation page before accepting): the console's only unauthenticated calls; the token is the credential.
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { acceptInvite, lookupInvite } from '../../services/members.ts';
import type { App } from '../types.ts';

const AcceptBody = Type.Object({
  token: Type.String({ description: 'the token of the invitation link' }),
  password: Type.String({ description: "at least 12 characters; for an email that has an account already, that account's password" }),
  displayName: Type.Optional(Type.String({ description: 'ignored for an email that has an account already' })),
});

const LookupBody = Type.Object({ token: Type.String({ description: 'the token of the invitation link' }) });
const Invitation = Type.Object({
  email: Type.String({ description: 'the invited user, who signs in with it once the invitation is accepted' }),
  displayName: Type.String({ description: '"" for a user who has an account already' }),
  expireTime: Type.String({ description: 'the link works until then (7 days after it was made), once' }),
  memberships: Type.Array(Type.Object({
    parent: Type.String({ description: 'projects/{p} or organizations/{o}' }),
    parentDisplayName: Type.String(),
    roles: Type.Array(Type.String()),
  }), { description: "every membership of the user in the link's organization: accepting makes all of them ACCEPTED" }),
});

export function registerInviteRoutes(app: App, deps: Deps): void {
  app.post('/v2/invites/@lookup', {
    schema: { body: LookupBody },
    config: { auth: false, summary: 'Look up an invitation: the e-mail it is for and the memberships accepting it grants', response: Invitation },
  }, async (request) => lookupInvite(deps, request.body as { token: string }));
  app.post('/v2/invites/@accept', {
    schema: { body: AcceptBody },
    config: { auth: false, summary: 'Accept an invitation: set a password and activate the user (or give the password of an existing account)', response: Type.Object({}) },
  }, async (request) => acceptInvite(deps, request.body as { token: string; password: string; displayName?: string }, request.ip));
}
