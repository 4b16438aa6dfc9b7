// Roles and a caller's permissions on the wire (contract §2.6, §4.4).
import { Type, type Static } from 'typebox';

export const RoleSchema = Type.Object({
  name: Type.String(),
  displayName: Type.String(),
  description: Type.String(),
  permissions: Type.Array(Type.String()),
});
export type Role = Static<typeof RoleSchema>;

export const RoleListSchema = Type.Object({ roles: Type.Array(RoleSchema), nextPageToken: Type.String() });
export type RoleList = Static<typeof RoleListSchema>;

/** GET …/permissions: the caller's effective permissions, sorted, paged like any list. */
export const PermissionListSchema = Type.Object({
  permissions: Type.Array(Type.String()),
  nextPageToken: Type.String(),
});
export type PermissionList = Static<typeof PermissionListSchema>;
