// Roles and permissions (contract §2.6). Pure data and rules; the access service applies them.

export type RoleName =
  | 'roles/project.user'
  | 'roles/project.developer'
  | 'roles/project.admin'
  | 'roles/organization.admin';

const USER = [
  'project.read',
  'membership.read',
  'sensor.read',
  'device.read',
  'dataconnector.read',
  'emulator.read',
] as const;
const DEVELOPER = [
  ...USER,
  'sensor.update',
  'device.update',
  'dataconnector.create',
  'dataconnector.update',
  'dataconnector.delete',
  'emulator.create',
  'emulator.update',
  'emulator.delete',
] as const;
const ADMIN = [
  ...DEVELOPER,
  'project.update',
  'project.delete',
  'membership.create',
  'membership.update',
  'membership.delete',
  'serviceaccount.create',
  'serviceaccount.read',
  'serviceaccount.update',
  'serviceaccount.delete',
  'serviceaccount.key.create',
  'serviceaccount.key.read',
  'serviceaccount.key.delete',
  'device.transfer',
] as const;
/** What an organization admin holds on the organization itself. */
export const ORGANIZATION_ADMIN_PERMISSIONS = [
  'organization.read',
  'organization.update',
  'project.create',
  'membership.create',
  'membership.read',
  'membership.update',
  'membership.delete',
] as const;

/** A permission on a project: a misspelt one does not compile. */
export type ProjectPermission = (typeof ADMIN)[number];
/** A permission on an organization. */
export type OrganizationPermission = (typeof ORGANIZATION_ADMIN_PERMISSIONS)[number];
export type Permission = ProjectPermission | OrganizationPermission;

export interface Role {
  name: RoleName;
  displayName: string;
  description: string;
  permissions: readonly Permission[];
}

/** In the fixed order of GET /roles. */
export const ROLES: readonly Role[] = [
  {
    name: 'roles/project.user',
    displayName: 'Project user',
    description: 'Read-only access to the project',
    permissions: USER,
  },
  {
    name: 'roles/project.developer',
    displayName: 'Project developer',
    description: 'Read access plus devices, emulated devices and data connectors',
    permissions: DEVELOPER,
  },
  {
    name: 'roles/project.admin',
    displayName: 'Project administrator',
    description: 'Full control of the project, its members and service accounts',
    permissions: ADMIN,
  },
  {
    name: 'roles/organization.admin',
    displayName: 'Organization administrator',
    description: 'Project administrator in every project of the organization, and manages the organization',
    permissions: ORGANIZATION_ADMIN_PERMISSIONS,
  },
];

export const PROJECT_ROLES: readonly RoleName[] = [
  'roles/project.user',
  'roles/project.developer',
  'roles/project.admin',
];
export const PROJECT_ADMIN_PERMISSIONS: readonly ProjectPermission[] = ADMIN;

export function findRole(name: string): Role | undefined {
  return ROLES.find((r) => r.name === name);
}

/** Union of the project permissions of the given roles. */
export function projectPermissionsOf(roles: readonly string[]): Set<Permission> {
  const out = new Set<Permission>();
  for (const r of roles) {
    if (!PROJECT_ROLES.includes(r as RoleName)) continue;
    for (const p of findRole(r)!.permissions) out.add(p);
  }
  return out;
}
