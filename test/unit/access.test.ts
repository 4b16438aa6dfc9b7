// Effective project permissions (src/services/access.ts), and their memo for principals shared through the auth cache.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { projectPermissions } from '../../src/services/access.ts';
import type { Principal } from '../../src/auth/principal.ts';
import type { MembershipRecord } from '../../src/store/contract/records.ts';

const membership = (scopeType: 'project' | 'organization', scopeId: string, roles: string[]): MembershipRecord => ({
  scopeType,
  scopeId,
  memberId: 'u1',
  accountType: 'USER',
  roles,
  status: 'ACCEPTED',
  createTime: 0,
});
const user = (memberships: MembershipRecord[]): Principal => ({
  kind: 'user',
  id: 'u1',
  email: 'u1@example.com',
  memberships,
});

describe('projectPermissions', () => {
  it('a project role gives its permissions on that project only; an organization admin gets project admin in its organization', () => {
    const p = user([
      membership('project', 'p1', ['roles/project.user']),
      membership('organization', 'o2', ['roles/organization.admin']),
    ]);
    assert.ok(projectPermissions(p, { id: 'p1', organizationId: 'o1' }).has('device.read'));
    assert.ok(!projectPermissions(p, { id: 'p1', organizationId: 'o1' }).has('dataconnector.update'));
    assert.equal(projectPermissions(p, { id: 'p3', organizationId: 'o1' }).size, 0);
    assert.ok(projectPermissions(p, { id: 'p3', organizationId: 'o2' }).has('dataconnector.update'));
  });

  it('is remembered for a frozen (cached) principal, per project and organization', () => {
    const p = Object.freeze(user([membership('organization', 'o1', ['roles/organization.admin'])]));
    const first = projectPermissions(p, { id: 'p1', organizationId: 'o1' });
    assert.equal(projectPermissions(p, { id: 'p1', organizationId: 'o1' }), first, 'the same set, not built again');
    assert.equal(
      projectPermissions(p, { id: 'p1', organizationId: 'o9' }).size,
      0,
      'a project moved out of the organization',
    );
    // A changed membership comes as a new principal (the auth cache drops the old one): nothing is carried over.
    const lowered = Object.freeze(user([]));
    assert.equal(projectPermissions(lowered, { id: 'p1', organizationId: 'o1' }).size, 0);
  });

  it('is computed afresh for a principal that is not frozen', () => {
    const p = user([membership('project', 'p1', ['roles/project.user'])]);
    const first = projectPermissions(p, { id: 'p1', organizationId: 'o1' });
    p.memberships = [];
    assert.notEqual(projectPermissions(p, { id: 'p1', organizationId: 'o1' }), first);
    assert.equal(projectPermissions(p, { id: 'p1', organizationId: 'o1' }).size, 0);
  });
});
