// Who is calling: a service account (through one of its keys) or a console user, with the memberships
// loaded once per request so permission checks need no further reads.
import type { MembershipRecord } from '../store/contract/records.ts';

export type Principal =
  | {
      kind: 'serviceAccount';
      id: string;
      email: string;
      projectId: string;
      keyId: string;
      memberships: MembershipRecord[];
    }
  | { kind: 'user'; id: string; email: string; memberships: MembershipRecord[] };

/** The rate-limit bucket key of a principal (a key for service accounts, the user otherwise). */
export const principalBucket = (p: Principal): string =>
  p.kind === 'serviceAccount' ? `key:${p.keyId}` : `user:${p.id}`;
