// What an operator sees of a data connector's deliveries in the default log (info and above): the first failure
// after a success (warn, with the reason: TLS, timeout, refused, refused address, HTTP status), the recovery (info),
// a connector turning suspect because an attempt hangs (warn), and an automatic disable (warn). Each push attempt
// is logged at debug only. At most one failure or hang line per connector per minute, so a flapping endpoint cannot
// flood the log; the recovery after a logged failure and the disable are always logged, so the log never ends on a
// failure that is over. Never a secret: outcome messages hold none.
import { dataConnectorName } from '../domain/names.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import type { DataConnectorRecord } from '../store/contract/connector-repos.ts';
import type { AttemptOutcome } from './types.ts';

export const CONNECTOR_LOG_INTERVAL_MS = 60_000;

type Connector = Pick<DataConnectorRecord, 'id' | 'projectId'>;

export interface ConnectorLog {
  /** An attempt failed and the connector had no failure since its last success (failingSince was just set). */
  failing(connector: Connector, outcome: AttemptOutcome): void;
  /** An attempt succeeded after failures (failingSince was just cleared). */
  recovered(connector: Connector): void;
  /** The connectors with an attempt in flight for too long, now; logs the ones that just became so. */
  hanging(connectors: ReadonlyArray<Connector>): void;
  /** 5 days of failures: SYSTEM_DISABLED, its queue dropped. */
  disabled(connector: Connector, failingSince: number | null, dropped: number): void;
}

/** The reason of a failed attempt, as an operator reads it. */
export function failureReason(outcome: AttemptOutcome): string {
  switch (outcome.reason) {
    case 'http_status':
      return `HTTP ${outcome.status ?? '?'}`;
    case 'timeout':
      return 'timeout (no response headers within 10 s)';
    case 'tls':
      return 'TLS';
    case 'connection':
      return 'connection refused or failed';
    case 'refused_address':
      return 'refused address (SSRF guard)';
    default:
      return outcome.reason;
  }
}

export function createConnectorLog(logger: Logger, clock: Clock): ConnectorLog {
  const lastLine = new Map<string, number>();
  const hangingNow = new Set<string>();
  // Connectors whose last line said they fail (or hang) and that have not been said to recover since.
  const saidFailing = new Set<string>();
  /** Whether this connector may have a line now (and counts it). */
  const mayLog = (id: string): boolean => {
    const now = clock.now();
    const last = lastLine.get(id);
    if (last !== undefined && now - last < CONNECTOR_LOG_INTERVAL_MS) return false;
    if (lastLine.size >= 10_000) {
      lastLine.clear();
      saidFailing.clear();
    }
    lastLine.set(id, now);
    return true;
  };
  const name = (c: Connector) => dataConnectorName(c.projectId, c.id);

  return {
    failing(c, outcome) {
      if (!mayLog(c.id)) return;
      saidFailing.add(c.id);
      logger.warn(
        { connector: name(c), reason: failureReason(outcome), status: outcome.status, detail: outcome.message },
        'data connector: pushes are failing; retried on the schedule, disabled after 5 days without a success',
      );
    },
    recovered(c) {
      if (!saidFailing.delete(c.id)) return;
      lastLine.set(c.id, clock.now());
      logger.info({ connector: name(c) }, 'data connector: pushes succeed again');
    },
    hanging(connectors) {
      const now = new Set(connectors.map((c) => c.id));
      for (const c of connectors) {
        if (hangingNow.has(c.id)) continue;
        hangingNow.add(c.id);
        if (mayLog(c.id)) {
          saidFailing.add(c.id);
          logger.warn(
            { connector: name(c) },
            'data connector: an attempt has had no answer for over a second; the connector gets 2 attempts at a time until it answers',
          );
        }
      }
      for (const id of hangingNow) if (!now.has(id)) hangingNow.delete(id);
    },
    disabled(c, failingSince, dropped) {
      lastLine.set(c.id, clock.now());
      saidFailing.delete(c.id);
      logger.warn(
        { connector: name(c), from: 'ACTIVE', to: 'SYSTEM_DISABLED', failingSince, droppedDeliveries: dropped },
        'data connector disabled by the service: every push attempt failed for 5 days; PATCH status ACTIVE to enable it again',
      );
    },
  };
}
