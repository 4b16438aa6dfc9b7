// Stored records, as the services see them. Times are integer microseconds since the epoch.

export interface OrganizationRecord {
  id: string;
  displayName: string;
  createTime: number;
}

export interface Location {
  latitude: number | null;
  longitude: number | null;
  timeLocation: string;
}

export interface ProjectRecord {
  id: string;
  organizationId: string;
  displayName: string;
  location: Location;
  labels: Record<string, string>;
  createTime: number;
  updateTime: number;
}

/** A project with its counters, as listed. */
export interface ProjectWithCounts extends ProjectRecord {
  organizationDisplayName: string;
  sensorCount: number;
  cloudConnectorCount: number;
}

export interface UserRecord {
  id: string;
  email: string;
  displayName: string;
  passwordHash: string | null;
  active: boolean;
  createTime: number;
  updateTime: number;
  /**
   * Moves each time the user's sessions end (sign-out, a password reset): an access token carries the generation it
   * was minted under and is refused once this has moved on (auth/authenticate.ts). 0 for a new user; only
   * UserRepo.endSessions changes it.
   */
  tokenGeneration: number;
}

export interface ServiceAccountRecord {
  id: string;
  projectId: string;
  email: string;
  displayName: string;
  enableBasicAuth: boolean;
  createTime: number;
  updateTime: number;
}

export interface KeyRecord {
  id: string;
  serviceAccountId: string;
  secretEnc: string;
  createTime: number;
}

export type ScopeType = 'project' | 'organization';
export type AccountType = 'USER' | 'SERVICE_ACCOUNT';
export type MembershipStatus = 'ACCEPTED' | 'PENDING';

export interface MembershipRecord {
  scopeType: ScopeType;
  scopeId: string;
  memberId: string;
  accountType: AccountType;
  roles: string[];
  status: MembershipStatus;
  createTime: number;
}

export interface InviteRecord {
  tokenHash: string;
  userId: string;
  /**
   * The organization whose memberships of the user the link accepts (the one of the member it was made for): one
   * organization's link never accepts, nor is revoked by, another's. null: a link made before links were scoped,
   * which accepts every membership of its user.
   */
  organizationId: string | null;
  expireTime: number;
  usedTime: number | null;
}

/** [event time (micros), event id] */
export type LatestEvent = [timestamp: number, eventId: string];

export interface DeviceRecord {
  id: string;
  projectId: string;
  type: string;
  productNumber: string;
  labels: Record<string, string>;
  /** Latest data per event type (the inner data[type] shape). */
  reported: Record<string, unknown>;
  /**
   * The device's latest event of each type, labelsChanged included: its time (micros) and id. Latest means by
   * event time, then id; `reported` holds the data of these events. The event itself may have been deleted by
   * retention since.
   */
  latestEvents: Record<string, LatestEvent>;
  emulated: boolean;
  createTime: number;
  updateTime: number;
}

export interface EventRecord {
  id: string;
  /**
   * The device's project when the event was stored, as in the body's targetName. A transfer leaves it: rewriting a
   * moved device's whole history (up to 31 days of events) took 10.9 s per million events on PostgreSQL, holding
   * the device, and the history is read by device, wherever the device is now.
   */
  projectId: string;
  deviceId: string;
  eventType: string;
  /** Event time (micros). */
  timestamp: number;
  /** When stored (micros); drives retention. */
  createTime: number;
  /** The event JSON exactly as served. */
  body: string;
}
