// Our own trigger (extensions §X5): `field: "dataConnector"` fires while a data connector of the project has had only
// failed attempts for the rule's triggerDelay (default 15 minutes), or at once when it is SYSTEM_DISABLED, and
// resolves on its next success or when it is enabled again. The delivery engine reports each change of a connector's
// health after it commits (delivery/engine.ts `health`); the failing period is a pending condition whose delay the
// timers (timers.ts) see out, so it survives a restart like a device rule's.
import { DEFAULT_CONNECTOR_TRIGGER_DELAY, durationMicros } from '../domain/rule-spec.ts';
import { dataConnectorName } from '../domain/names.ts';
import { nowMicros, type Clock } from '../runtime/clock.ts';
import type { IdGenerator } from '../runtime/ids.ts';
import type { Logger } from '../runtime/logger.ts';
import type { AlertRecord } from '../store/contract/alerting.ts';
import type { Repos, Store } from '../store/contract/store.ts';
import type { ConnectorHealthListener } from '../delivery/health.ts';
import { enabledRules } from './rules.ts';
import type { AnnounceAlert } from './stream.ts';
import { resolveAlert, triggerAlert, type RuleView } from './transitions.ts';

export interface ConnectorHealthDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  ids: IdGenerator;
  announce: AnnounceAlert;
  notify(): void;
}

type Connector = { id: string; projectId: string };

const connectorRules = async (tx: Repos, projectId: string): Promise<RuleView[]> =>
  (await enabledRules(tx, projectId)).filter((r) => r.spec.trigger.field === 'dataConnector');

/** The listener the delivery engine calls (composition root). Each change is a transaction of its own. */
export function createConnectorHealth(deps: ConnectorHealthDeps): ConnectorHealthListener {
  const target = (c: Connector) => ({ id: c.id, name: dataConnectorName(c.projectId, c.id), labels: {} });

  /** Runs `change` for the connector's rules in one transaction, then announces and notifies. */
  function apply(
    c: Connector,
    what: string,
    change: (tx: Repos, rule: RuleView, now: number) => Promise<AlertRecord | null>,
  ) {
    const now = nowMicros(deps);
    deps.store
      .transaction(async (tx) => {
        const changed: AlertRecord[] = [];
        for (const rule of await connectorRules(tx, c.projectId)) {
          const alert = await change(tx, rule, now);
          if (alert) changed.push(alert);
        }
        return changed;
      })
      .then((changed) => {
        if (changed.length === 0) return;
        for (const a of changed) deps.announce(a, null);
        deps.notify();
      })
      .catch((err) =>
        deps.logger.error({ err, connector: target(c).name }, `alerts: a data connector ${what} was not evaluated`),
      );
  }

  const resolve = async (tx: Repos, rule: RuleView, c: Connector, now: number) => {
    await tx.conditions.delete(rule.id, c.id);
    const open = await tx.alerts.openFor(rule.id, c.id);
    return open ? resolveAlert(tx, open, rule, null, now) : null;
  };

  return {
    failing(c) {
      apply(c, 'failing', async (tx, rule, now) => {
        if (await tx.alerts.openFor(rule.id, c.id)) return null;
        const delay = durationMicros(rule.spec.triggerDelay ?? DEFAULT_CONNECTOR_TRIGGER_DELAY) ?? 0;
        if (delay === 0) return triggerAlert(tx, rule, target(c), 'FAILING', null, deps.ids.next(), now);
        if (await tx.conditions.get(rule.id, c.id)) return null;
        await tx.conditions.put({
          ruleId: rule.id,
          targetId: c.id,
          projectId: c.projectId,
          since: now,
          count: 1,
          due: now + delay,
          lastValue: JSON.stringify('FAILING'),
        });
        return null;
      });
    },
    recovered(c) {
      apply(c, 'recovery', (tx, rule, now) => resolve(tx, rule, c, now));
    },
    enabled(c) {
      apply(c, 'enabling', (tx, rule, now) => resolve(tx, rule, c, now));
    },
    disabled(c) {
      apply(c, 'automatic disabling', async (tx, rule, now) => {
        await tx.conditions.delete(rule.id, c.id);
        const open = await tx.alerts.openFor(rule.id, c.id);
        if (open) {
          open.lastValue = JSON.stringify('SYSTEM_DISABLED');
          open.updateTime = now;
          await tx.alerts.update(open);
          return open;
        }
        return triggerAlert(tx, rule, target(c), 'SYSTEM_DISABLED', null, deps.ids.next(), now);
      });
    },
  };
}
