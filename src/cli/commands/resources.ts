// What several command groups show and resolve alike: members (of projects and organizations), organization
// names, contact groups, and devices. A module of its own, so the command groups import it instead of each other.
import type { Device } from '../../wire/devices.ts';
import type { InviteUrl, Member } from '../../wire/members.ts';
import type { OrganizationList } from '../../wire/organizations.ts';
import { ID, idOf, type Context } from '../context.ts';
import { UsageError } from '../errors.ts';
import type { Column } from '../output.ts';

export const memberColumns: Column<Member>[] = [
  { header: 'ID', value: (m) => idOf(m.name) },
  { header: 'EMAIL', value: (m) => m.email },
  { header: 'TYPE', value: (m) => m.accountType },
  { header: 'STATUS', value: (m) => m.status, paint: (t, m, out) => (m.status === 'PENDING' ? out.yellow(t) : t) },
  { header: 'ROLES', value: (m) => m.roles.join(',') },
];

export const memberFields = (m: Member): Array<[string, string]> => [
  ['name', m.name],
  ['email', m.email],
  ['displayName', m.displayName],
  ['accountType', m.accountType],
  ['status', m.status],
  ['roles', m.roles.join(', ')],
  ['createTime', m.createTime],
];

/**
 * A member's full name under `parent` (`projects/p` or `organizations/o`): a full name as it is, an email
 * looked up among the members, else an id.
 */
export async function resolveMember(ctx: Context, parent: string, input: string): Promise<string> {
  if (input.startsWith('projects/') || input.startsWith('organizations/')) return input;
  if (input.includes('@')) {
    const email = input.toLowerCase();
    for await (const m of ctx.client.pages<Member>(`${parent}/members`, 'members'))
      if (m.email === email) return m.name;
    throw new UsageError(`no member with email ${input} in ${parent}`);
  }
  if (!/^[A-Za-z0-9_-]+$/.test(input)) throw new UsageError(`"${input}" is not a member id, name or email`);
  return `${parent}/members/${input}`;
}

export function printInviteUrl(ctx: Context, response: InviteUrl): void {
  if (ctx.out.json) return ctx.out.printJson(response);
  ctx.out.line(response.inviteUrl);
}

/** `organizations/o` or `o`; when omitted, the only organization the credentials see. */
export async function organizationName(ctx: Context, input: string | undefined): Promise<string> {
  if (input) {
    const id = input.startsWith('organizations/') ? input.slice('organizations/'.length) : input;
    if (!/^[A-Za-z0-9_.~-]+$/.test(id)) throw new UsageError(`"${input}" is not an organization id or name`);
    return `organizations/${id}`;
  }
  const page = await ctx.client.call<OrganizationList>('GET', 'organizations', { query: { pageSize: 2 } });
  if (page.organizations.length === 1) return page.organizations[0]!.name;
  throw new UsageError(
    page.organizations.length === 0
      ? 'the credentials see no organization'
      : 'the credentials see several organizations: name one',
  );
}

/**
 * A contact group's full name (extensions §X5): `organizations/<o>/contactGroups/<g>` as it is, an id in the current
 * project's organization (a bare id is looked up there only: contacts and rules may name only its groups).
 */
export async function contactGroupName(ctx: Context, input: string): Promise<string> {
  if (input.startsWith('organizations/')) {
    const parts = input.split('/');
    if (parts.length !== 4 || parts[2] !== 'contactGroups' || !ID.test(parts[1]!) || !ID.test(parts[3]!))
      throw new UsageError(`"${input}" is not a contact group name (organizations/<organization>/contactGroups/<id>)`);
    return input;
  }
  if (!ID.test(input))
    throw new UsageError(
      `"${input}" is not a contact group id or name (organizations/<organization>/contactGroups/<id>)`,
    );
  return `${await ctx.organization()}/contactGroups/${input}`;
}

const labelsText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => (v === '' ? k : `${k}=${v}`))
    .join(', ');

export const deviceColumns: Column<Device>[] = [
  { header: 'ID', value: (d) => idOf(d.name) },
  { header: 'TYPE', value: (d) => d.type },
  { header: 'PRODUCT', value: (d) => d.productNumber },
  { header: 'NAME', value: (d) => d.labels.name ?? '' },
  {
    header: 'LABELS',
    value: (d) => labelsText(Object.fromEntries(Object.entries(d.labels).filter(([k]) => k !== 'name'))),
  },
];

/** One line per reported type: the value fields of its latest data, without timestamps. */
function reportedText(data: unknown): string {
  if (data === null || data === undefined) return '—';
  if (typeof data !== 'object') return String(data);
  const d = data as Record<string, unknown>;
  const parts = Object.entries(d)
    .filter(
      ([k, v]) =>
        k !== 'updateTime' && k !== 'samples' && k !== 'cloudConnectors' && !(Array.isArray(v) && v.length === 0),
    )
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
  return `${parts.join(' ')}${typeof d.updateTime === 'string' ? `  (${d.updateTime})` : ''}`;
}

export function printDevice(ctx: Context, d: Device): void {
  ctx.out.record(
    d,
    [
      ['name', d.name],
      ['type', d.type],
      ['productNumber', d.productNumber],
      ['labels', labelsText(d.labels)],
      ...Object.entries(d.reported).map(([type, data]) => [`reported.${type}`, reportedText(data)] as [string, string]),
    ],
    d.name,
  );
}
