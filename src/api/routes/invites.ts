// POST /v2/invites:accept (contract §2.5) and POST /v2/invites:lookup (what a link is for, shown on the console's
// invitation page before accepting): the console's only unauthenticated calls; the token is the credential.
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { acceptInvite, lookupInvite } from '../../services/members.ts';
import { AcceptInviteRequestSchema, InvitationSchema, LookupInviteRequestSchema } from '../../wire/invites.ts';
import type { App } from '../types.ts';

export function registerInviteRoutes(app: App, deps: Deps): void {
  app.post(
    '/v2/invites/@lookup',
    {
      schema: { body: LookupInviteRequestSchema },
      config: {
        auth: false,
        summary: 'Look up an invitation: the e-mail it is for and the memberships accepting it grants',
        response: InvitationSchema,
      },
    },
    async (request) => lookupInvite(deps, request.body),
  );
  app.post(
    '/v2/invites/@accept',
    {
      schema: { body: AcceptInviteRequestSchema },
      config: {
        auth: false,
        summary:
          'Accept an invitation: set a password and activate the user (or give the password of an existing account)',
        response: Type.Object({}),
      },
    },
    async (request) => acceptInvite(deps, request.body, request.ip),
  );
}
