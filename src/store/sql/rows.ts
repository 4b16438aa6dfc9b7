// Rows as both SQL backends return them, and the records made from them. The two schemas name and shape these
// columns alike: JSON settings are text, times are integers. Booleans arrive as 0/1 from SQLite and as booleans
// from PostgreSQL.
import type { ConnectorStatus } from '../../domain/connector-status.ts';
import type { DataConnectorRecord, DeliveryRecord, SyncRecord } from '../contract/connector-repos.ts';
import { triggerOf } from './delivery-log-rows.ts';
import type {
  AccountType,
  EventRecord,
  InviteRecord,
  KeyRecord,
  Location,
  MembershipRecord,
  MembershipStatus,
  OrganizationRecord,
  ProjectRecord,
  ProjectWithCounts,
  ScopeType,
  ServiceAccountRecord,
  UserRecord,
} from '../contract/records.ts';

export interface OrgRow {
  id: string;
  display_name: string;
  create_time: number;
}
export const toOrg = (r: OrgRow): OrganizationRecord => ({
  id: r.id,
  displayName: r.display_name,
  createTime: r.create_time,
});

export interface ProjectRow {
  id: string;
  organization_id: string;
  display_name: string;
  location: string;
  labels: string;
  create_time: number;
  update_time: number;
}
export interface ProjectCountsRow extends ProjectRow {
  organization_display_name: string;
  sensor_count: number;
  ccon_count: number;
}
export const toProject = (r: ProjectRow): ProjectRecord => ({
  id: r.id,
  organizationId: r.organization_id,
  displayName: r.display_name,
  location: JSON.parse(r.location) as Location,
  labels: JSON.parse(r.labels) as Record<string, string>,
  createTime: r.create_time,
  updateTime: r.update_time,
});
export const toProjectWithCounts = (r: ProjectCountsRow): ProjectWithCounts => ({
  ...toProject(r),
  organizationDisplayName: r.organization_display_name,
  sensorCount: r.sensor_count,
  cloudConnectorCount: r.ccon_count,
});

export interface UserRow {
  id: string;
  email: string;
  display_name: string;
  password_hash: string | null;
  active: number | boolean;
  create_time: number;
  update_time: number;
  token_generation: number;
}
export const toUser = (r: UserRow): UserRecord => ({
  id: r.id,
  email: r.email,
  displayName: r.display_name,
  passwordHash: r.password_hash,
  active: Boolean(r.active),
  createTime: r.create_time,
  updateTime: r.update_time,
  tokenGeneration: r.token_generation,
});

export interface SaRow {
  id: string;
  project_id: string;
  email: string;
  display_name: string;
  enable_basic_auth: number | boolean;
  create_time: number;
  update_time: number;
}
export const toSa = (r: SaRow): ServiceAccountRecord => ({
  id: r.id,
  projectId: r.project_id,
  email: r.email,
  displayName: r.display_name,
  enableBasicAuth: Boolean(r.enable_basic_auth),
  createTime: r.create_time,
  updateTime: r.update_time,
});

export interface KeyRow {
  id: string;
  service_account_id: string;
  secret_enc: string;
  create_time: number;
}
export const toKey = (r: KeyRow): KeyRecord => ({
  id: r.id,
  serviceAccountId: r.service_account_id,
  secretEnc: r.secret_enc,
  createTime: r.create_time,
});

export interface InviteRow {
  token_hash: string;
  user_id: string;
  organization_id: string | null;
  expire_time: number;
  used_time: number | null;
}
export const toInvite = (r: InviteRow): InviteRecord => ({
  tokenHash: r.token_hash,
  userId: r.user_id,
  organizationId: r.organization_id,
  expireTime: r.expire_time,
  usedTime: r.used_time,
});

export interface MembershipRow {
  scope_type: ScopeType;
  scope_id: string;
  member_id: string;
  account_type: AccountType;
  roles: string;
  status: MembershipStatus;
  create_time: number;
}
export const toMembership = (r: MembershipRow): MembershipRecord => ({
  scopeType: r.scope_type,
  scopeId: r.scope_id,
  memberId: r.member_id,
  accountType: r.account_type,
  roles: JSON.parse(r.roles) as string[],
  status: r.status,
  createTime: r.create_time,
});

export interface EventRow {
  id: string;
  project_id: string;
  device_id: string;
  event_type: string;
  timestamp: number;
  create_time: number;
  body: string;
}
export const toEvent = (r: EventRow): EventRecord => ({
  id: r.id,
  projectId: r.project_id,
  deviceId: r.device_id,
  eventType: r.event_type,
  timestamp: r.timestamp,
  createTime: r.create_time,
  body: r.body,
});

export interface ConnectorRow {
  id: string;
  project_id: string;
  display_name: string;
  status: string;
  events: string;
  labels: string;
  url: string;
  headers: string;
  signature_secret: string;
  previous_signature_secret: string;
  previous_signature_secret_expire_time: number | null;
  max_concurrency: number;
  max_rate: number;
  label_filters: string;
  /** SQLite: 0 or 1; PostgreSQL: a boolean. */
  paused: number | boolean;
  failing_since: number | null;
  create_time: number;
  update_time: number;
}
export const toConnector = (r: ConnectorRow): DataConnectorRecord => ({
  id: r.id,
  projectId: r.project_id,
  displayName: r.display_name,
  status: r.status as ConnectorStatus,
  events: JSON.parse(r.events) as string[],
  labels: JSON.parse(r.labels) as string[],
  url: r.url,
  headers: JSON.parse(r.headers) as Record<string, string>,
  signatureSecretSealed: r.signature_secret,
  previousSignatureSecretSealed: r.previous_signature_secret,
  previousSignatureSecretExpireTime: r.previous_signature_secret_expire_time,
  deliveryConfig: {
    maxConcurrency: r.max_concurrency,
    maxRate: r.max_rate,
    labelFilters: JSON.parse(r.label_filters) as Record<string, string>,
    paused: r.paused === true || r.paused === 1,
  },
  failingSince: r.failing_since,
  createTime: r.create_time,
  updateTime: r.update_time,
});

export interface DeliveryRow {
  id: number;
  connector_id: string;
  event_id: string;
  body: Buffer;
  enqueue_time: number;
  due_time: number;
  attempts: number;
  lease_until: number | null;
  /** The trigger's code (delivery-log-rows.ts); 0, a published event's, is left out of the record. */
  trigger: number;
}
export const toDelivery = (r: DeliveryRow): DeliveryRecord => {
  const d: DeliveryRecord = {
    id: r.id,
    connectorId: r.connector_id,
    eventId: r.event_id,
    body: r.body,
    enqueueTime: r.enqueue_time,
    dueTime: r.due_time,
    attempts: r.attempts,
    leaseUntil: r.lease_until,
  };
  if (r.trigger) d.trigger = triggerOf(r.trigger);
  return d;
};

export interface SyncRow {
  connector_id: string;
  first_id: number;
  last_id: number;
  enqueue_time: number;
  scope: string;
}
export const toSync = (r: SyncRow): SyncRecord => ({
  connectorId: r.connector_id,
  firstId: r.first_id,
  lastId: r.last_id,
  enqueueTime: r.enqueue_time,
  scope: r.scope,
});
