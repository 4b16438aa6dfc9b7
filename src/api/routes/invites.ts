// POST /v2/invites:accept (contract §2.5): the console's only unauthenticated call; the token is the credential.
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { acceptInvite } from '../../services/members.ts';
import type { App } from '../types.ts';

const AcceptBody = Type.Object({
  token: Type.String({ description: 'the token of the invitation link' }),
  password: Type.String({ description: 'at least 12 characters' }),
  displayName: Type.Optional(Type.String()),
});

export function registerInviteRoutes(app: App, deps: Deps): void {
  app.post('/v2/invites/@accept', {
    schema: { body: AcceptBody },
    config: { auth: false, summary: 'Accept an invitation: set a password and activate the user', response: Type.Object({}) },
  }, async (request) => acceptInvite(deps, request.body as { token: string; password: string; displayName?: string }));
}
