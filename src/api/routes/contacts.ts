// Contact groups (of an organization) and contacts (of a project), for the contactGroups of notification rules'
// e-mail actions (extensions §X5). Also reached under /v2alpha/ (verbs.ts).
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import * as service from '../../services/contacts.ts';
import {
  ContactGroupInputSchema,
  ContactGroupListSchema,
  ContactGroupSchema,
  ContactInputSchema,
  ContactListSchema,
  ContactSchema,
} from '../../wire/contacts.ts';
import { PageQuerySchema, UpdateMaskQuerySchema } from '../../wire/paging.ts';
import type { App } from '../types.ts';
import { noBodyIsEmpty, parseUpdateMask, principalOf } from '../http.ts';

type GroupParams = { organization: string; contactGroup: string };
type ContactParams = { project: string; contact: string };
const groupParams = (request: FastifyRequest) => request.params as GroupParams;
const contactParams = (request: FastifyRequest) => request.params as ContactParams;
const GROUPS_PATH = '/v2/organizations/:organization/contactGroups';
const GROUP_PATH = `${GROUPS_PATH}/:contactGroup`;
const CONTACTS_PATH = '/v2/projects/:project/contacts';
const CONTACT_PATH = `${CONTACTS_PATH}/:contact`;

export function registerContactRoutes(app: App, deps: Deps): void {
  app.get(
    GROUPS_PATH,
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: 'List the contact groups of an organization', response: ContactGroupListSchema },
    },
    async (request) =>
      service.listContactGroups(deps, principalOf(request), groupParams(request).organization, request.query),
  );

  app.post(
    GROUPS_PATH,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: ContactGroupInputSchema },
      config: { summary: 'Create a contact group (organization admins)', response: ContactGroupSchema },
    },
    async (request) =>
      service.createContactGroup(deps, principalOf(request), groupParams(request).organization, request.body),
  );

  app.get(GROUP_PATH, { config: { summary: 'Get a contact group', response: ContactGroupSchema } }, async (request) => {
    const { organization, contactGroup } = groupParams(request);
    return service.getContactGroup(deps, principalOf(request), organization, contactGroup);
  });

  app.patch(
    GROUP_PATH,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: ContactGroupInputSchema, querystring: UpdateMaskQuerySchema },
      config: { summary: 'Update a contact group (organization admins)', response: ContactGroupSchema },
    },
    async (request) => {
      const { organization, contactGroup } = groupParams(request);
      const mask = parseUpdateMask(request.query.updateMask);
      return service.updateContactGroup(deps, principalOf(request), organization, contactGroup, request.body, mask);
    },
  );

  app.delete(
    GROUP_PATH,
    {
      config: {
        summary: 'Delete a contact group; its contacts stay, in no group (organization admins)',
        response: Type.Object({}),
      },
    },
    async (request) => {
      const { organization, contactGroup } = groupParams(request);
      await service.deleteContactGroup(deps, principalOf(request), organization, contactGroup);
      return {};
    },
  );

  app.get(
    CONTACTS_PATH,
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: 'List the contacts of a project', response: ContactListSchema },
    },
    async (request) => service.listContacts(deps, principalOf(request), contactParams(request).project, request.query),
  );

  app.post(
    CONTACTS_PATH,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: ContactInputSchema },
      config: { summary: 'Create a contact, optionally in a contact group', response: ContactSchema },
    },
    async (request) => service.createContact(deps, principalOf(request), contactParams(request).project, request.body),
  );

  app.get(CONTACT_PATH, { config: { summary: 'Get a contact', response: ContactSchema } }, async (request) => {
    const { project, contact } = contactParams(request);
    return service.getContact(deps, principalOf(request), project, contact);
  });

  app.patch(
    CONTACT_PATH,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: ContactInputSchema, querystring: UpdateMaskQuerySchema },
      config: { summary: 'Update a contact', response: ContactSchema },
    },
    async (request) => {
      const { project, contact } = contactParams(request);
      const mask = parseUpdateMask(request.query.updateMask);
      return service.updateContact(deps, principalOf(request), project, contact, request.body, mask);
    },
  );

  app.delete(CONTACT_PATH, { config: { summary: 'Delete a contact', response: Type.Object({}) } }, async (request) => {
    const { project, contact } = contactParams(request);
    await service.deleteContact(deps, principalOf(request), project, contact);
    return {};
  });
}
