// Contact groups and contacts on the wire (extensions §X5): a contact group belongs to an organization, a contact to
// a project; an e-mail action of a notification rule names groups, whose contacts in the rule's project it mails.
// Every key is always present on a read; the create and update bodies are types only (the service checks meaning and
// names the field).
import { Type, type Static } from 'typebox';

export const ContactGroupSchema = Type.Object({
  name: Type.String({ description: 'organizations/{o}/contactGroups/{g}' }),
  displayName: Type.String(),
  description: Type.String(),
  contactCount: Type.Integer({ description: 'contacts in the group, in every project of the organization' }),
  createTime: Type.String(),
  updateTime: Type.String(),
});
export type ContactGroup = Static<typeof ContactGroupSchema>;

export const ContactGroupListSchema = Type.Object({
  contactGroups: Type.Array(ContactGroupSchema),
  nextPageToken: Type.String(),
});
export type ContactGroupList = Static<typeof ContactGroupListSchema>;

export const ContactGroupInputSchema = Type.Object({
  displayName: Type.Optional(Type.String({ description: 'required on create; 1 to 256 characters' })),
  description: Type.Optional(Type.String({ description: 'at most 1024 characters' })),
});
/** The body of create and PATCH, null-valued keys already dropped (contract §1.2); other keys pass unchecked. */
export type ContactGroupInput = Static<typeof ContactGroupInputSchema> & { [other: string]: unknown };

export const ContactSchema = Type.Object({
  name: Type.String({ description: 'projects/{p}/contacts/{c}' }),
  contactGroup: Type.String({ description: 'organizations/{o}/contactGroups/{g}; "" = in no group' }),
  displayName: Type.String(),
  email: Type.String({ description: 'in lower case' }),
  phoneNumber: Type.String({ description: 'E.164 (+4798765432), stored only; "" = none' }),
  hasProjectAccess: Type.Boolean({ description: 'whether a user with this e-mail can read the project' }),
  createTime: Type.String(),
  updateTime: Type.String(),
});
export type Contact = Static<typeof ContactSchema>;

export const ContactListSchema = Type.Object({ contacts: Type.Array(ContactSchema), nextPageToken: Type.String() });
export type ContactList = Static<typeof ContactListSchema>;

export const ContactInputSchema = Type.Object({
  contactGroup: Type.Optional(
    Type.String({ description: 'a contact group of the project\'s organization; "" = in no group' }),
  ),
  displayName: Type.Optional(Type.String({ description: 'at most 256 characters' })),
  email: Type.Optional(Type.String({ description: 'required on create' })),
  phoneNumber: Type.Optional(Type.String({ description: 'E.164, such as +4798765432; "" = none' })),
});
export type ContactInput = Static<typeof ContactInputSchema> & { [other: string]: unknown };
