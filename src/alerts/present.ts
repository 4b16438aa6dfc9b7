// An alert as the API, the stream's alertChanged event and a webhook's body show it (wire/alerts.ts).
import { alertName, ruleName } from '../domain/names.ts';
import { formatTimestamp } from '../domain/time.ts';
import type { AlertRecord } from '../store/contract/alerting.ts';
import type { Alert, AlertSummary } from '../wire/alerts.ts';

const time = (micros: number | null) => (micros === null ? '' : formatTimestamp(micros));

export function presentAlertSummary(a: AlertRecord): AlertSummary {
  return {
    name: alertName(a.projectId, a.id),
    rule: ruleName(a.projectId, a.ruleId),
    targetName: a.targetName,
    state: a.state,
    escalationLevel: a.escalationLevel,
    triggerTime: formatTimestamp(a.triggerTime),
    acknowledgeTime: time(a.acknowledgeTime),
    acknowledgedBy: a.acknowledgedBy,
    resolveTime: time(a.resolveTime),
    lastValue: a.lastValue === '' ? null : JSON.parse(a.lastValue),
  };
}

export function presentAlert(a: AlertRecord): Alert {
  return {
    ...presentAlertSummary(a),
    notifications: a.notifications.map((n) => ({
      time: formatTimestamp(n.time),
      level: n.level,
      type: n.type,
      target: n.target,
      outcome: n.outcome,
      error: n.error,
    })),
  };
}
