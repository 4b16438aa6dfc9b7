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

/** A port the composition root attaches the listener to; with none attached, nothing is told. */
export interface HealthPort extends ConnectorHealthListener {
  attach(listener: ConnectorHealthListener | null): void;
}

export function createHealthPort(): HealthPort {
  let current: ConnectorHealthListener | null = null;
  return {
    attach(listener) {
      current = listener;
    },
    failing: (c) => current?.failing(c),
    recovered: (c) => current?.recovered(c),
    disabled: (c) => current?.disabled(c),
    enabled: (c) => current?.enabled(c),
  };
}
