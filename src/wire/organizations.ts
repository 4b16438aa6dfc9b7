// Organizations on the wire (contract §3.1, §4.2).
import { Type, type Static } from 'typebox';

export const OrganizationSchema = Type.Object({ name: Type.String(), displayName: Type.String() });
export type Organization = Static<typeof OrganizationSchema>;

export const OrganizationListSchema = Type.Object({
  organizations: Type.Array(OrganizationSchema),
  nextPageToken: Type.String(),
});
export type OrganizationList = Static<typeof OrganizationListSchema>;
