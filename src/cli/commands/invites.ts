// `invites accept`: what an invited person does with the link from `members invite-url` (POST /v2/invites:accept,
// the API's only call without credentials). The password is asked, never an option.
import type { Command } from 'commander';
import type { AcceptInviteRequest } from '../../wire/invites.ts';
import { action, example, type Context } from '../context.ts';
import { ApiClient } from '../client.ts';
import { UsageError } from '../errors.ts';
import { normaliseServerUrl } from '../profiles.ts';
import { createPrompter } from '../prompt.ts';

/** The server and token of `<PUBLIC_URL>/invite/<token>`; a bare token goes to the profile's server. */
export function parseInvite(input: string): { server: string | null; token: string } {
  const match = /^(https?:\/\/.+?)\/invite\/([^/?#]+)/.exec(input.trim());
  const token = match ? decodeURIComponent(match[2]!) : input.trim();
  if (token === '' || token.includes('/')) throw new UsageError(`"${input}" is not an invitation link or token`);
  return { server: match ? normaliseServerUrl(match[1]!) : null, token };
}

export function registerInviteCommands(program: Command): void {
  const invites = program.command('invites').description('accept an invitation to a project or organization');
  example(
    invites
      .command('accept <invite-url>')
      .description('set a password (at least 12 characters, asked) and activate the invited user')
      .option('--display-name <name>', 'your display name')
      .action(
        action(async (ctx: Context, url: string, o: { displayName?: string }) => {
          const { server, token } = parseInvite(url);
          // The invited person has no key: the call carries no credentials, only the server is needed.
          const client = new ApiClient({
            url: server ?? ctx.settings().url,
            credentials: { keyId: '', secret: '', email: null },
          });
          const prompter = createPrompter();
          let password: string;
          try {
            password = await prompter.ask('New password', { secret: true });
          } finally {
            prompter.close();
          }
          const body: AcceptInviteRequest = {
            token,
            password,
            ...(o.displayName ? { displayName: o.displayName } : {}),
          };
          ctx.out.done(
            await client.call('POST', 'invites:accept', { body, anonymous: true }),
            'Invitation accepted: sign in to the console with your email and this password.',
          );
        }),
      ),
    'sensorcloud invites accept http://127.0.0.1:8080/invite/3f9c…',
  );
}
