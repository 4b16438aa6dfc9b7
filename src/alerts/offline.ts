// SENSOR_OFFLINE rules (extensions §X5: `trigger.connection: SENSOR_OFFLINE`) are decided by silence: a sensor in the
// rule's scope from which no event has arrived for the rule's triggerDelay (default 45 minutes: three missed
// heartbeats of a sensor's 15) is offline, and the rule triggers an alert for it. The alert resolves with the
// sensor's next event (evaluator.ts). The periodic timers pass (timers.ts) runs this check at most once a minute:
// it reads every enabled rule, and the devices of the projects that have such a rule, a page at a time.
import { deviceInScope } from '../domain/rule-evaluation.ts';
import { durationMicros } from '../domain/rule-spec.ts';
import { deviceName } from '../domain/names.ts';
import type { AlertRecord } from '../store/contract/alerting.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import type { Store } from '../store/contract/store.ts';
import type { IdGenerator } from '../runtime/ids.ts';
import { viewOf } from './rules.ts';
import { triggerAlert, type RuleView } from './transitions.ts';

/** A sensor is offline after this much silence when its rule names no triggerDelay: three 15-minute heartbeats. */
export const DEFAULT_OFFLINE_AFTER = '2700s';
/** Rules and devices read per page. */
const PAGE = 500;
/** A cloud connector reports its own connection (CLOUD_CONNECTOR_OFFLINE); SENSOR_OFFLINE watches sensors. */
const CLOUD_CONNECTOR = 'ccon';

/** When the device was last heard from (micros): its latest event of any type, or its creation. */
export function lastHeard(device: DeviceRecord): number {
  let last = device.createTime;
  for (const [timestamp] of Object.values(device.latestEvents)) if (timestamp > last) last = timestamp;
  return last;
}

/** Triggers an alert for every silent sensor of every SENSOR_OFFLINE rule; returns the alerts it made. */
export async function checkOffline(
  store: Store,
  ids: IdGenerator,
  now: number,
): Promise<Array<{ alert: AlertRecord; device: DeviceRecord }>> {
  const byProject = new Map<string, RuleView[]>();
  for (let after: string | null = null; ; ) {
    const page = await store.rules.listEnabled({ after, limit: PAGE });
    for (const r of page) {
      const rule = viewOf(r);
      if (rule.spec.trigger.connection !== 'SENSOR_OFFLINE') continue;
      byProject.set(rule.projectId, [...(byProject.get(rule.projectId) ?? []), rule]);
    }
    if (page.length < PAGE) break;
    after = page[page.length - 1]!.id;
  }
  const made: Array<{ alert: AlertRecord; device: DeviceRecord }> = [];
  for (const [projectId, rules] of byProject) {
    for (let after = ''; ; ) {
      const devices = await store.devices.listByProject(projectId, { after, limit: PAGE });
      for (const device of devices) {
        if (device.type === CLOUD_CONNECTOR) continue;
        const silentFor = now - lastHeard(device);
        for (const rule of rules) {
          const limit = durationMicros(rule.spec.triggerDelay ?? DEFAULT_OFFLINE_AFTER) ?? 0;
          if (silentFor < limit || !deviceInScope(rule.spec, device.id, device.labels)) continue;
          // triggerAlert writes nothing (null) while the rule has an alert of the device open (createIfNone).
          const alert = await store.transaction(async (tx) => {
            const target = { id: device.id, name: deviceName(projectId, device.id), labels: device.labels };
            return triggerAlert(tx, rule, target, 'OFFLINE', null, ids.next(), now);
          });
          if (alert) made.push({ alert, device });
        }
      }
      if (devices.length < PAGE) break;
      after = devices[devices.length - 1]!.id;
    }
  }
  return made;
}
