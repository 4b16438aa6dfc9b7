// What the delivery engine tells of a data connector's health, after the change has committed: the port the alerts'
// connector-health trigger (alerts/connector-health.ts) plugs into in the composition root, so that delivery knows
// nothing of alerts. Each call must return at once (the listener does its work in the background).
import type { DataConnectorRecord } from '../store/contract/connector-repos.ts';

type Connector = Pick<DataConnectorRecord, 'id' | 'projectId'>;

export interface ConnectorHealthListener {
  /** The first failed attempt since the last success (failingSince was just set). */
  failing(connector: Connector): void;
  /** A success after failures (failingSince was just cleared). */
  recovered(connector: Connector): void;
  /** Disabled by the service after 5 days of failures (SYSTEM_DISABLED). */
  disabled(connector: Connector): void;
  /** Enabled again by a user (PATCH status ACTIVE). */
  enabled(connector: Connector): void;
}
