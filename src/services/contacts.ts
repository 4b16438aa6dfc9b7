// Contact groups and contacts (extensions §X5): the groups an e-mail action of a notification rule names, and the
// people in them. A group belongs to an organization: organization admins change groups, and whoever can read the
// organization (its admins, and members of any of its projects: organization.read) reads them. A contact belongs to
// a project: it is read with project.read and changed with device.update, as the project's rules are. Its group is
// one of the project's organization.
import type { Principal } from '../auth/principal.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { contactGroupName, contactName, parseContactGroupName } from '../domain/names.ts';
import { parseMask } from '../domain/update-mask.ts';
import { afterId, pageRequest, toPage } from '../domain/paging.ts';
import { emailAddressProblem } from '../domain/rule-validation.ts';
import { formatTimestamp } from '../domain/time.ts';
import { nowMicros } from '../runtime/clock.ts';
import type { ContactGroupRecord, ContactRecord } from '../store/contract/alerting.ts';
import type { ProjectRecord } from '../store/contract/records.ts';
import type { Repos } from '../store/contract/store.ts';
import type {
  Contact,
  ContactGroup,
  ContactGroupInput,
  ContactGroupList,
  ContactInput,
  ContactList,
} from '../wire/contacts.ts';
import type { PageQuery } from '../wire/paging.ts';
import { requireOrganization, requireProject } from './access.ts';

export const MAX_CONTACT_GROUPS_PER_ORGANIZATION = 1000;
export const MAX_CONTACTS_PER_PROJECT = 1000;
export const MAX_CONTACT_TEXT_LENGTH = 256;
export const MAX_DESCRIPTION_LENGTH = 1024;

/** E.164: a plus and up to 15 digits, the first not 0. */
const E164 = /^\+[1-9]\d{1,14}$/;

function textOf(v: unknown, field: string, max: number): string {
  if (typeof v !== 'string') throw badRequest(`${field} must be a string`);
  if ([...v].length > max) throw badRequest(`${field} must be at most ${max} characters`);
  return v;
}

// ---- contact groups ----

async function presentGroup(repos: Pick<Repos, 'contacts'>, g: ContactGroupRecord): Promise<ContactGroup> {
  return {
    name: contactGroupName(g.organizationId, g.id),
    displayName: g.displayName,
    description: g.description,
    contactCount: await repos.contacts.countInGroup(g.id),
    createTime: formatTimestamp(g.createTime),
    updateTime: formatTimestamp(g.updateTime),
  };
}

function checkGroupDisplayName(v: unknown): string {
  const name = textOf(v, 'displayName', MAX_CONTACT_TEXT_LENGTH);
  if (name.trim() === '') throw badRequest('displayName must not be empty');
  return name;
}

async function requireGroup(
  deps: Deps,
  principal: Principal,
  organizationId: string,
  groupId: string,
  permission: 'organization.read' | 'organization.update',
): Promise<ContactGroupRecord> {
  await requireOrganization(deps, principal, organizationId, permission);
  const group = await deps.store.contacts.getGroup(groupId);
  if (!group || group.organizationId !== organizationId) throw notFound('contact group not found');
  return group;
}

export async function listContactGroups(
  deps: Deps,
  principal: Principal,
  organizationId: string,
  query: PageQuery,
): Promise<ContactGroupList> {
  await requireOrganization(deps, principal, organizationId, 'organization.read');
  const filters = `contactGroups:${organizationId}`;
  const page = pageRequest(query, filters);
  const after = afterId(page.after);
  const rows = await deps.store.contacts.listGroups(organizationId, { after, limit: page.pageSize + 1 });
  const { items, nextPageToken } = toPage(rows, page, (g) => [g.id], filters);
  const contactGroups: ContactGroup[] = [];
  for (const g of items) contactGroups.push(await presentGroup(deps.store, g));
  return { contactGroups, nextPageToken };
}

export async function createContactGroup(
  deps: Deps,
  principal: Principal,
  organizationId: string,
  input: ContactGroupInput,
): Promise<ContactGroup> {
  await requireOrganization(deps, principal, organizationId, 'organization.update');
  if (input.displayName === undefined) throw badRequest('displayName is required');
  const now = nowMicros(deps);
  const group: ContactGroupRecord = {
    id: deps.ids.next(),
    organizationId,
    displayName: checkGroupDisplayName(input.displayName),
    description:
      input.description === undefined ? '' : textOf(input.description, 'description', MAX_DESCRIPTION_LENGTH),
    createTime: now,
    updateTime: now,
  };
  const view = await deps.store.transaction(async (tx) => {
    const existing = await tx.contacts.listGroups(organizationId, {
      after: null,
      limit: MAX_CONTACT_GROUPS_PER_ORGANIZATION,
    });
    if (existing.length >= MAX_CONTACT_GROUPS_PER_ORGANIZATION)
      throw badRequest(
        `an organization has at most ${MAX_CONTACT_GROUPS_PER_ORGANIZATION} contact groups; delete one first`,
      );
    await tx.contacts.createGroup(group);
    return presentGroup(tx, group);
  });
  deps.logger.info({ contactGroup: view.name, by: `${principal.kind}:${principal.id}` }, 'contact group created');
  return view;
}

export async function getContactGroup(
  deps: Deps,
  principal: Principal,
  organizationId: string,
  groupId: string,
): Promise<ContactGroup> {
  return presentGroup(deps.store, await requireGroup(deps, principal, organizationId, groupId, 'organization.read'));
}

/** PATCH: with update_mask only the listed fields apply, otherwise every field present. */
export async function updateContactGroup(
  deps: Deps,
  principal: Principal,
  organizationId: string,
  groupId: string,
  input: ContactGroupInput,
  rawMask: ReadonlySet<string> | null,
): Promise<ContactGroup> {
  await requireGroup(deps, principal, organizationId, groupId, 'organization.update');
  const mask = parseMask(rawMask, ['displayName', 'description'], ['name', 'contactCount', 'createTime', 'updateTime']);
  const wants = (field: string, value: unknown) => (mask === null ? value !== undefined : mask.has(field));
  const displayName = wants('displayName', input.displayName) ? checkGroupDisplayName(input.displayName) : undefined;
  const description = wants('description', input.description)
    ? input.description === undefined
      ? ''
      : textOf(input.description, 'description', MAX_DESCRIPTION_LENGTH)
    : undefined;
  return deps.store.transaction(async (tx) => {
    const before = await tx.contacts.getGroup(groupId);
    if (!before || before.organizationId !== organizationId) throw notFound('contact group not found');
    const next: ContactGroupRecord = { ...before };
    if (displayName !== undefined) next.displayName = displayName;
    if (description !== undefined) next.description = description;
    if (next.displayName === before.displayName && next.description === before.description)
      return presentGroup(tx, before);
    next.updateTime = nowMicros(deps);
    await tx.contacts.updateGroup(next);
    return presentGroup(tx, next);
  });
}

/** DELETE: the group goes; its contacts stay, in no group, and rules naming it mail none of them any more. */
export async function deleteContactGroup(
  deps: Deps,
  principal: Principal,
  organizationId: string,
  groupId: string,
): Promise<void> {
  await requireGroup(deps, principal, organizationId, groupId, 'organization.update');
  await deps.store.transaction(async (tx) => {
    const group = await tx.contacts.getGroup(groupId);
    if (!group || group.organizationId !== organizationId) throw notFound('contact group not found');
    await tx.contacts.deleteGroup(groupId);
  });
  deps.logger.info(
    { contactGroup: contactGroupName(organizationId, groupId), by: `${principal.kind}:${principal.id}` },
    'contact group deleted',
  );
}

// ---- contacts ----

/** Whether a user with this e-mail can read the project: an accepted member of it, or an admin of its organization. */
async function hasProjectAccess(
  repos: Pick<Repos, 'users' | 'memberships'>,
  project: Pick<ProjectRecord, 'id' | 'organizationId'>,
  email: string,
): Promise<boolean> {
  const user = await repos.users.getByEmail(email);
  if (!user?.active) return false;
  const member = await repos.memberships.get('project', project.id, user.id);
  if (member?.status === 'ACCEPTED' && member.roles.length > 0) return true;
  const admin = await repos.memberships.get('organization', project.organizationId, user.id);
  return admin?.status === 'ACCEPTED' && admin.roles.includes('roles/organization.admin');
}

async function presentContact(
  repos: Pick<Repos, 'users' | 'memberships'>,
  project: Pick<ProjectRecord, 'id' | 'organizationId'>,
  c: ContactRecord,
): Promise<Contact> {
  return {
    name: contactName(c.projectId, c.id),
    contactGroup: c.contactGroupId === '' ? '' : contactGroupName(project.organizationId, c.contactGroupId),
    displayName: c.displayName,
    email: c.email,
    phoneNumber: c.phoneNumber,
    hasProjectAccess: await hasProjectAccess(repos, project, c.email),
    createTime: formatTimestamp(c.createTime),
    updateTime: formatTimestamp(c.updateTime),
  };
}

function checkContactEmail(v: unknown): string {
  const problem = emailAddressProblem(v);
  if (problem) throw badRequest(`email ${problem}`);
  return (v as string).toLowerCase();
}

function checkPhoneNumber(v: unknown): string {
  if (typeof v !== 'string' || (v !== '' && !E164.test(v)))
    throw badRequest('phoneNumber must be in E.164 form, such as +4798765432, or ""');
  return v;
}

/** The group id of a contact's contactGroup ('' for none); the group's existence is checked in the write. */
function checkContactGroup(v: unknown, organizationId: string): string {
  if (v === '') return '';
  const parsed = parseContactGroupName(v);
  if (!parsed) throw badRequest('contactGroup must be a contact group name organizations/{o}/contactGroups/{g}, or ""');
  if (parsed.organization !== organizationId)
    throw badRequest(`contactGroup: ${v} is not a contact group of this project's organization`);
  return parsed.group;
}

/** 400 unless the group exists in the organization ('' is none). */
async function requireGroupFor(repos: Pick<Repos, 'contacts'>, organizationId: string, groupId: string) {
  if (groupId === '') return;
  const group = await repos.contacts.getGroup(groupId);
  if (!group || group.organizationId !== organizationId)
    throw badRequest(`contactGroup: no contact group ${contactGroupName(organizationId, groupId)}`);
}

async function requireContact(
  deps: Deps,
  principal: Principal,
  projectId: string,
  contactId: string,
  permission: 'project.read' | 'device.update',
) {
  const { project } = await requireProject(deps, principal, projectId, permission);
  const contact = await deps.store.contacts.get(contactId);
  if (!contact || contact.projectId !== projectId) throw notFound('contact not found');
  return { project, contact };
}

export async function listContacts(
  deps: Deps,
  principal: Principal,
  projectId: string,
  query: PageQuery,
): Promise<ContactList> {
  const { project } = await requireProject(deps, principal, projectId, 'project.read');
  const filters = `contacts:${projectId}`;
  const page = pageRequest(query, filters);
  const after = afterId(page.after);
  const rows = await deps.store.contacts.listByProject(projectId, { after, limit: page.pageSize + 1 });
  const { items, nextPageToken } = toPage(rows, page, (c) => [c.id], filters);
  const contacts: Contact[] = [];
  for (const c of items) contacts.push(await presentContact(deps.store, project, c));
  return { contacts, nextPageToken };
}

export async function createContact(
  deps: Deps,
  principal: Principal,
  projectId: string,
  input: ContactInput,
): Promise<Contact> {
  const { project } = await requireProject(deps, principal, projectId, 'device.update');
  if (input.email === undefined) throw badRequest('email is required');
  const now = nowMicros(deps);
  const contact: ContactRecord = {
    id: deps.ids.next(),
    projectId,
    contactGroupId:
      input.contactGroup === undefined ? '' : checkContactGroup(input.contactGroup, project.organizationId),
    displayName:
      input.displayName === undefined ? '' : textOf(input.displayName, 'displayName', MAX_CONTACT_TEXT_LENGTH),
    email: checkContactEmail(input.email),
    phoneNumber: input.phoneNumber === undefined ? '' : checkPhoneNumber(input.phoneNumber),
    createTime: now,
    updateTime: now,
  };
  const view = await deps.store.transaction(async (tx) => {
    if (!(await tx.projects.get(projectId))) throw notFound('project not found');
    await requireGroupFor(tx, project.organizationId, contact.contactGroupId);
    const existing = await tx.contacts.listByProject(projectId, { after: null, limit: MAX_CONTACTS_PER_PROJECT });
    if (existing.length >= MAX_CONTACTS_PER_PROJECT)
      throw badRequest(`a project has at most ${MAX_CONTACTS_PER_PROJECT} contacts; delete one first`);
    await tx.contacts.create(contact);
    return presentContact(tx, project, contact);
  });
  deps.logger.info({ contact: view.name, by: `${principal.kind}:${principal.id}` }, 'contact created');
  return view;
}

export async function getContact(
  deps: Deps,
  principal: Principal,
  projectId: string,
  contactId: string,
): Promise<Contact> {
  const { project, contact } = await requireContact(deps, principal, projectId, contactId, 'project.read');
  return presentContact(deps.store, project, contact);
}

/** PATCH: with update_mask only the listed fields apply (a listed field the body lacks is cleared), else every field present. */
export async function updateContact(
  deps: Deps,
  principal: Principal,
  projectId: string,
  contactId: string,
  input: ContactInput,
  rawMask: ReadonlySet<string> | null,
): Promise<Contact> {
  const { project } = await requireContact(deps, principal, projectId, contactId, 'device.update');
  const mask = parseMask(
    rawMask,
    ['contactGroup', 'displayName', 'email', 'phoneNumber'],
    ['name', 'hasProjectAccess', 'createTime', 'updateTime'],
  );
  const wants = (field: string, value: unknown) => (mask === null ? value !== undefined : mask.has(field));
  if (mask?.has('email') && input.email === undefined) throw badRequest('email is required: a contact has one');
  const contactGroupId = wants('contactGroup', input.contactGroup)
    ? checkContactGroup(input.contactGroup ?? '', project.organizationId)
    : undefined;
  const displayName = wants('displayName', input.displayName)
    ? textOf(input.displayName ?? '', 'displayName', MAX_CONTACT_TEXT_LENGTH)
    : undefined;
  const email = wants('email', input.email) ? checkContactEmail(input.email) : undefined;
  const phoneNumber = wants('phoneNumber', input.phoneNumber) ? checkPhoneNumber(input.phoneNumber ?? '') : undefined;
  return deps.store.transaction(async (tx) => {
    const before = await tx.contacts.get(contactId);
    if (!before || before.projectId !== projectId) throw notFound('contact not found');
    const next: ContactRecord = { ...before };
    if (contactGroupId !== undefined) {
      if (contactGroupId !== before.contactGroupId) await requireGroupFor(tx, project.organizationId, contactGroupId);
      next.contactGroupId = contactGroupId;
    }
    if (displayName !== undefined) next.displayName = displayName;
    if (email !== undefined) next.email = email;
    if (phoneNumber !== undefined) next.phoneNumber = phoneNumber;
    if (JSON.stringify({ ...next, updateTime: 0 }) === JSON.stringify({ ...before, updateTime: 0 }))
      return presentContact(tx, project, before);
    next.updateTime = nowMicros(deps);
    await tx.contacts.update(next);
    return presentContact(tx, project, next);
  });
}

export async function deleteContact(
  deps: Deps,
  principal: Principal,
  projectId: string,
  contactId: string,
): Promise<void> {
  await requireContact(deps, principal, projectId, contactId, 'device.update');
  await deps.store.transaction(async (tx) => {
    const c = await tx.contacts.get(contactId);
    if (!c || c.projectId !== projectId) throw notFound('contact not found');
    await tx.contacts.delete(contactId);
  });
  deps.logger.info(
    { contact: contactName(projectId, contactId), by: `${principal.kind}:${principal.id}` },
    'contact deleted',
  );
}
