// What the signed-in caller may do, from GET /projects/{p}/permissions and /organizations/{o}/permissions.
// Controls the caller's role does not allow are hidden or disabled with the reason (reasonFor).
import { useEffect, useState } from 'preact/hooks';
import { api, listAll } from './api.ts';

/** The lowest role that holds each permission (contract §2.6), for "needs …" explanations. */
const LOWEST_ROLE: Record<string, string> = {
  'device.update': 'Project developer',
  'dataconnector.create': 'Project developer',
  'dataconnector.update': 'Project developer',
  'dataconnector.delete': 'Project developer',
  'emulator.create': 'Project developer',
  'emulator.update': 'Project developer',
  'emulator.delete': 'Project developer',
  'project.update': 'Project administrator',
  'project.delete': 'Project administrator',
  'membership.create': 'Project administrator',
  'membership.update': 'Project administrator',
  'membership.delete': 'Project administrator',
  'membership.read': 'Project user',
  'serviceaccount.create': 'Project administrator',
  'serviceaccount.read': 'Project administrator',
  'serviceaccount.update': 'Project administrator',
  'serviceaccount.delete': 'Project administrator',
  'serviceaccount.key.create': 'Project administrator',
  'serviceaccount.key.read': 'Project administrator',
  'serviceaccount.key.delete': 'Project administrator',
  'device.transfer': 'Project administrator',
  'project.create': 'Organization administrator',
  'organization.update': 'Organization administrator',
};

export function reasonFor(permission: string): string {
  return `Your role does not include ${permission} (needs ${LOWEST_ROLE[permission] ?? 'a higher role'}).`;
}

export interface Permissions {
  loaded: boolean;
  has(permission: string): boolean;
}

const cache = new Map<string, Promise<Set<string>>>();

function load(parent: string): Promise<Set<string>> {
  let p = cache.get(parent);
  if (!p) {
    p = listAll<string>(`/${parent}/permissions`, 'permissions').then((list) => new Set(list));
    p.catch(() => cache.delete(parent));
    cache.set(parent, p);
  }
  return p;
}

/** Forget cached permissions (after a role change or sign-out). */
export function clearPermissions(): void {
  cache.clear();
}

/** Permissions on `projects/{p}` or `organizations/{o}`. */
export function usePermissions(parent: string | null): Permissions {
  const [set, setSet] = useState<Set<string> | null>(null);
  useEffect(() => {
    setSet(null);
    if (!parent) return;
    let live = true;
    load(parent).then(
      (s) => live && setSet(s),
      () => live && setSet(new Set()),
    );
    return () => void (live = false);
  }, [parent]);
  return { loaded: set !== null, has: (permission) => set?.has(permission) ?? false };
}

/** Reads a project once per screen; used for titles and the organization of a project. */
export function useProject(projectId: string) {
  const [project, setProject] = useState<any>(null);
  useEffect(() => {
    let live = true;
    api('GET', `/projects/${projectId}`).then(
      (p) => live && setProject(p),
      () => undefined,
    );
    return () => void (live = false);
  }, [projectId]);
  return project;
}
