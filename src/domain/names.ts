// Resource names (contract §1.7).
import { badRequest } from './errors.ts';

export const organizationName = (o: string) => `organizations/${o}`;
export const projectName = (p: string) => `projects/${p}`;
export const projectMemberName = (p: string, m: string) => `projects/${p}/members/${m}`;
export const organizationMemberName = (o: string, m: string) => `organizations/${o}/members/${m}`;
export const serviceAccountName = (p: string, sa: string) => `projects/${p}/serviceaccounts/${sa}`;
export const keyName = (p: string, sa: string, k: string) => `projects/${p}/serviceaccounts/${sa}/keys/${k}`;
export const deviceName = (p: string, d: string) => `projects/${p}/devices/${d}`;
/** The key percent-encoded; total, even for a key stored before lone surrogates were refused (they become U+FFFD). */
export const labelName = (p: string, d: string, key: string) =>
  `projects/${p}/devices/${d}/labels/${encodeURIComponent(key.toWellFormed())}`;
export const dataConnectorName = (p: string, dc: string) => `projects/${p}/dataconnectors/${dc}`;
export const ruleName = (p: string, r: string) => `projects/${p}/rules/${r}`;
export const alertName = (p: string, a: string) => `projects/${p}/alerts/${a}`;
export const contactName = (p: string, c: string) => `projects/${p}/contacts/${c}`;
export const contactGroupName = (o: string, g: string) => `organizations/${o}/contactGroups/${g}`;

/** Parses `organizations/{o}/contactGroups/{g}`; null for anything else (a non-string included). */
export function parseContactGroupName(value: unknown): { organization: string; group: string } | null {
  const m = typeof value === 'string' ? /^organizations\/([^/]+)\/contactGroups\/([^/]+)$/.exec(value) : null;
  return m ? { organization: m[1]!, group: m[2]! } : null;
}

/** Accepts `<collection>/<id>` or a bare id; returns the id. */
export function idFromName(value: string, collection: 'organizations' | 'projects', field: string): string {
  const prefix = `${collection}/`;
  const id = value.startsWith(prefix) ? value.slice(prefix.length) : value;
  if (id === '' || id.includes('/')) throw badRequest(`${field} must be of the form ${collection}/<id>`);
  return id;
}

/** Parses `projects/{p}/devices/{d}` (or a bare device id, given the default project). */
export function parseDeviceName(value: string, defaultProject?: string): { project: string; device: string } | null {
  const m = /^projects\/([^/]+)\/devices\/([^/]+)$/.exec(value);
  if (m) return { project: m[1]!, device: m[2]! };
  if (defaultProject !== undefined && value !== '' && !value.includes('/'))
    return { project: defaultProject, device: value };
  return null;
}

export function serviceAccountEmail(sa: string, project: string, domain: string): string {
  return `${sa}@${project}.serviceaccount.${domain}`.toLowerCase();
}

/** The wildcard project `-`: "every project the caller can read" (contract §1.10). */
export const WILDCARD_PROJECT = '-';

/** A `{p}` path segment where the wildcard is not accepted (everywhere but the few wildcard routes): 400 for `-`. */
export function concreteProjectId(raw: string): string {
  if (raw === WILDCARD_PROJECT) throw badRequest("the wildcard project '-' is not allowed here; name the project");
  return raw;
}
