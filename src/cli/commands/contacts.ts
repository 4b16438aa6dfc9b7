// `contacts`: the project's contacts, and `contacts groups`: the organization's contact groups (extensions §X5), whom
// a rule's e-mail action can name (--contact-group): list, get, create, update, delete.
import type { Command } from 'commander';
import type { Contact, ContactGroup } from '../../wire/contacts.ts';
import { action, example, ID, idOf, type Context } from '../context.ts';
import { UsageError } from '../errors.ts';
import type { Column } from '../output.ts';
import { contactGroupName, organizationName } from './resources.ts';

/** --name and --display-name (the same). */
function displayNameOf(o: { name?: string; displayName?: string }): string | undefined {
  if (o.name !== undefined && o.displayName !== undefined)
    throw new UsageError('give --name or --display-name, not both (they are the same)');
  return o.name ?? o.displayName;
}

// ---- contacts ----

const contactColumns: Column<Contact>[] = [
  { header: 'ID', value: (c) => idOf(c.name) },
  { header: 'EMAIL', value: (c) => c.email },
  { header: 'DISPLAY NAME', value: (c) => c.displayName },
  { header: 'GROUP', value: (c) => (c.contactGroup ? idOf(c.contactGroup) : '-') },
  { header: 'PHONE', value: (c) => c.phoneNumber || '-' },
  { header: 'PROJECT ACCESS', value: (c) => (c.hasProjectAccess ? 'yes' : 'no') },
];

function printContact(ctx: Context, c: Contact): void {
  ctx.out.record(
    c,
    [
      ['name', c.name],
      ['email', c.email],
      ['displayName', c.displayName],
      ['contactGroup', c.contactGroup || '(none)'],
      ['phoneNumber', c.phoneNumber],
      ['hasProjectAccess', c.hasProjectAccess ? 'yes' : 'no'],
      ['createTime', c.createTime],
      ['updateTime', c.updateTime],
    ],
    c.name,
  );
}

interface ContactOptions {
  email?: string;
  name?: string;
  displayName?: string;
  /** false: --no-group. */
  group?: string | false;
  phone?: string;
}

/** The body and update_mask of the options given. */
async function contactInput(
  ctx: Context,
  o: ContactOptions,
): Promise<{ body: Record<string, string>; mask: string[] }> {
  const body: Record<string, string> = {};
  const displayName = displayNameOf(o);
  if (o.email !== undefined) body.email = o.email;
  if (displayName !== undefined) body.displayName = displayName;
  if (o.group !== undefined) body.contactGroup = o.group === false ? '' : await contactGroupName(ctx, o.group);
  if (o.phone !== undefined) body.phoneNumber = o.phone;
  return { body, mask: Object.keys(body) };
}

const contactOptions = (command: Command, create: boolean) =>
  (create
    ? command.requiredOption('--email <address>', 'required: the e-mail address')
    : command.option('--email <address>', 'e-mail address')
  )
    .option('--name <text>', 'display name (the same as --display-name)')
    .option('--display-name <text>', 'display name')
    .option('--group <group>', "a contact group of the project's organization (id or name)")
    .option('--phone <number>', 'phone number, E.164 (+4798765432); stored only, nothing calls it');

// ---- contact groups ----

const groupColumns: Column<ContactGroup>[] = [
  { header: 'ID', value: (g) => idOf(g.name) },
  { header: 'DISPLAY NAME', value: (g) => g.displayName },
  { header: 'CONTACTS', value: (g) => String(g.contactCount) },
  { header: 'DESCRIPTION', value: (g) => g.description },
];

function printGroup(ctx: Context, g: ContactGroup): void {
  ctx.out.record(
    g,
    [
      ['name', g.name],
      ['displayName', g.displayName],
      ['description', g.description],
      ['contactCount', String(g.contactCount)],
      ['createTime', g.createTime],
      ['updateTime', g.updateTime],
    ],
    g.name,
  );
}

/** --organization, else the current project's (else the only one visible, when no project can be chosen). */
async function groupsOrganization(ctx: Context, organization: string | undefined): Promise<string> {
  if (organization) return organizationName(ctx, organization);
  try {
    return await ctx.organization();
  } catch (err) {
    if (err instanceof UsageError) return organizationName(ctx, undefined);
    throw err;
  }
}

/** A group's full name: taken as it is, or an id in --organization (default: the project's). */
async function groupName(ctx: Context, input: string, organization: string | undefined): Promise<string> {
  if (input.startsWith('organizations/')) {
    const name = await contactGroupName(ctx, input);
    if (organization && (await organizationName(ctx, organization)) !== name.split('/').slice(0, 2).join('/'))
      throw new UsageError(`${name} is not a contact group of ${await organizationName(ctx, organization)}`);
    return name;
  }
  if (!ID.test(input))
    throw new UsageError(
      `"${input}" is not a contact group id or name (organizations/<organization>/contactGroups/<id>)`,
    );
  return `${await groupsOrganization(ctx, organization)}/contactGroups/${input}`;
}

interface GroupOptions {
  organization?: string;
  name?: string;
  displayName?: string;
  description?: string;
}

const organizationOption = (command: Command) =>
  command.option('--organization <organization>', "the organization (default: the project's)");

const groupOptions = (command: Command) =>
  organizationOption(command)
    .option('--name <text>', 'display name (the same as --display-name)')
    .option('--display-name <text>', 'display name')
    .option('--description <text>', 'description');

function groupInput(o: GroupOptions): { body: Record<string, string>; mask: string[] } {
  const body: Record<string, string> = {};
  const displayName = displayNameOf(o);
  if (displayName !== undefined) body.displayName = displayName;
  if (o.description !== undefined) body.description = o.description;
  return { body, mask: Object.keys(body) };
}

function registerGroupCommands(contacts: Command): void {
  const groups = contacts
    .command('groups')
    .description("contact groups of the organization: whom a rule's e-mail action can name");

  example(
    organizationOption(groups.command('list'))
      .description('contact groups of the organization')
      .action(
        action(async (ctx: Context, o: GroupOptions) => {
          const org = await groupsOrganization(ctx, o.organization);
          ctx.out.list(
            await ctx.client.list<ContactGroup>(`${org}/contactGroups`, 'contactGroups'),
            groupColumns,
            (g) => g.name,
            'contact groups',
          );
        }),
      ),
    'sensorcloud contacts groups list',
  );

  example(
    organizationOption(groups.command('get <group>'))
      .description('one contact group')
      .action(
        action(async (ctx: Context, group: string, o: GroupOptions) => {
          printGroup(ctx, await ctx.client.call<ContactGroup>('GET', await groupName(ctx, group, o.organization)));
        }),
      ),
    'sensorcloud contacts groups get cvq2b1r0l4l9s3f2a9g0',
  );

  example(
    groupOptions(groups.command('create'))
      .description('create a contact group (organization admins)')
      .action(
        action(async (ctx: Context, o: GroupOptions) => {
          const { body } = groupInput(o);
          if (body.displayName === undefined) throw new UsageError("required option '--name <text>' not specified");
          const org = await groupsOrganization(ctx, o.organization);
          printGroup(ctx, await ctx.client.call<ContactGroup>('POST', `${org}/contactGroups`, { body }));
        }),
      ),
    'sensorcloud contacts groups create --name Facilities --description "Building staff"',
  );

  example(
    groupOptions(groups.command('update <group>'))
      .description('change a contact group; only the options given change')
      .action(
        action(async (ctx: Context, group: string, o: GroupOptions) => {
          const { body, mask } = groupInput(o);
          if (mask.length === 0)
            throw new UsageError('nothing to change: see `sensorcloud contacts groups update --help`');
          const name = await groupName(ctx, group, o.organization);
          printGroup(
            ctx,
            await ctx.client.call<ContactGroup>('PATCH', name, { query: { updateMask: mask.join(',') }, body }),
          );
        }),
      ),
    'sensorcloud contacts groups update cvq2b1r0l4l9s3f2a9g0 --description "Building and kitchen staff"',
  );

  example(
    organizationOption(groups.command('delete <group>'))
      .description('delete a contact group (its contacts stay, in no group)')
      .action(
        action(async (ctx: Context, group: string, o: GroupOptions) => {
          const name = await groupName(ctx, group, o.organization);
          ctx.out.done(await ctx.client.call('DELETE', name), `Deleted ${name}.`);
        }),
      ),
    'sensorcloud contacts groups delete cvq2b1r0l4l9s3f2a9g0',
  );
}

export function registerContactCommands(program: Command): void {
  const contacts = program
    .command('contacts')
    .description("contacts of the project and contact groups of its organization, for rules' e-mail actions");

  example(
    contacts
      .command('list')
      .description('contacts of the project')
      .action(
        action(async (ctx: Context) => {
          ctx.out.list(
            await ctx.client.list<Contact>(`projects/${await ctx.project()}/contacts`, 'contacts'),
            contactColumns,
            (c) => c.name,
            'contacts',
          );
        }),
      ),
    'sensorcloud contacts list',
  );

  example(
    contacts
      .command('get <contact>')
      .description('one contact')
      .action(
        action(async (ctx: Context, contact: string) => {
          printContact(ctx, await ctx.client.call<Contact>('GET', await ctx.name(contact, 'contacts')));
        }),
      ),
    'sensorcloud contacts get cvq2b1r0l4l9s3f2a9c0',
  );

  example(
    contactOptions(contacts.command('create'), true)
      .description('add a contact to the project')
      .action(
        action(async (ctx: Context, o: ContactOptions) => {
          const { body } = await contactInput(ctx, o);
          const c = await ctx.client.call<Contact>('POST', `projects/${await ctx.project()}/contacts`, { body });
          printContact(ctx, c);
        }),
      ),
    'sensorcloud contacts create --email kari@example.org --name Kari --group cvq2b1r0l4l9s3f2a9g0',
  );

  example(
    contactOptions(contacts.command('update <contact>'), false)
      .description('change a contact; only the options given change')
      .option('--no-group', 'in no contact group')
      .action(
        action(async (ctx: Context, contact: string, o: ContactOptions) => {
          const { body, mask } = await contactInput(ctx, o);
          if (mask.length === 0) throw new UsageError('nothing to change: see `sensorcloud contacts update --help`');
          const c = await ctx.client.call<Contact>('PATCH', await ctx.name(contact, 'contacts'), {
            query: { updateMask: mask.join(',') },
            body,
          });
          printContact(ctx, c);
        }),
      ),
    'sensorcloud contacts update cvq2b1r0l4l9s3f2a9c0 --phone +4798765432 --no-group',
  );

  example(
    contacts
      .command('delete <contact>')
      .description('remove a contact from the project')
      .action(
        action(async (ctx: Context, contact: string) => {
          const name = await ctx.name(contact, 'contacts');
          ctx.out.done(await ctx.client.call('DELETE', name), `Deleted ${name}.`);
        }),
      ),
    'sensorcloud contacts delete cvq2b1r0l4l9s3f2a9c0',
  );

  registerGroupCommands(contacts);
}
