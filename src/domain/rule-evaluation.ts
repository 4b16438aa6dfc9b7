// What a notification rule (extensions §X5) makes of one event, pure: which value of the event its trigger reads,
// whether the condition holds, whether the device is in the rule's scope, and whether an instant lies in the rule's
// schedule (in its IANA time zone, so daylight saving time is the zone's). The alerts engine (alerts/) applies it.
import { carriesLabels } from './labels.ts';
import type { RuleSpec, ScheduleSpec, TriggerSpec } from './rule-spec.ts';

/** The event type each trigger field reads, and where its value is in the event's data. */
const VALUE_OF: Readonly<Record<string, (data: Record<string, any>) => number | string | undefined>> = {
  temperature: (d) => d.temperature?.value,
  humidity: (d) => d.humidity?.relativeHumidity,
  relativeHumidity: (d) => d.humidity?.relativeHumidity,
  co2: (d) => d.co2?.ppm,
  pressure: (d) => d.pressure?.pascal,
  objectPresent: (d) => d.objectPresent?.state,
  waterPresent: (d) => d.waterPresent?.state,
  motion: (d) => d.motion?.state,
  deskOccupancy: (d) => d.deskOccupancy?.state,
  contact: (d) => d.contact?.state,
  touch: () => 'TOUCHED',
  connectionStatus: (d) => d.connectionStatus?.connection,
};

/** Trigger fields named otherwise than the event type they read. */
const EVENT_TYPE_OF: Readonly<Record<string, string>> = { relativeHumidity: 'humidity' };
/** The event type a trigger field reads (relativeHumidity reads humidity events). */
export const eventTypeOfField = (field: string): string => EVENT_TYPE_OF[field] ?? field;

/** The value of the event the trigger reads; undefined when the event is not of the trigger's type. */
export function triggerValue(
  trigger: TriggerSpec,
  eventType: string,
  data: Record<string, unknown>,
): number | string | undefined {
  if (eventType !== eventTypeOfField(trigger.field)) return undefined;
  return VALUE_OF[trigger.field]?.(data as Record<string, any>);
}

/**
 * Whether the condition holds for a value (the alert condition: a fridge's rule {lower 2, upper 8, OUTSIDE} holds at
 * 9 °C). A range holds within [lower, upper] for WITHIN, outside it for OUTSIDE; states hold when equal (presence
 * PRESENT/ABSENT against the event's PRESENT/NOT_PRESENT); a touch always holds; CLOUD_CONNECTOR_OFFLINE holds while
 * the connection is OFFLINE. SENSOR_OFFLINE is decided by silence (alerts/offline.ts): no event makes it hold.
 */
export function conditionHolds(trigger: TriggerSpec, value: number | string): boolean {
  if (trigger.range) {
    if (typeof value !== 'number') return false;
    const { lower, upper } = trigger.range;
    const within = (lower === undefined || value >= lower) && (upper === undefined || value <= upper);
    return trigger.range.type === 'OUTSIDE' ? !within : within;
  }
  if (trigger.presence) return value === (trigger.presence === 'PRESENT' ? 'PRESENT' : 'NOT_PRESENT');
  if (trigger.motion) return value === trigger.motion;
  if (trigger.occupancy) return value === trigger.occupancy;
  if (trigger.contact) return value === trigger.contact;
  if (trigger.connection === 'CLOUD_CONNECTOR_OFFLINE') return value === 'OFFLINE';
  if (trigger.connection === 'SENSOR_OFFLINE') return false;
  return trigger.field === 'touch';
}

/** Whether the device is one the rule watches: listed (or none listed), and carrying every label of deviceLabels. */
export function deviceInScope(
  spec: Pick<RuleSpec, 'devices' | 'deviceLabels'>,
  deviceId: string,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (spec.devices.length > 0 && !spec.devices.includes(deviceId)) return false;
  return carriesLabels(labels, spec.deviceLabels);
}

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'] as const;
const formats = new Map<string, Intl.DateTimeFormat>();

/** The weekday and minute of the day at `ms` in the zone. */
function localTime(ms: number, timeZone: string): { day: string; minute: number } {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'long',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formats.set(timeZone, f);
  }
  const parts = f.formatToParts(new Date(ms));
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return { day: get('weekday'), minute: Number(get('hour')) * 60 + Number(get('minute')) };
}

/**
 * Whether an event at `micros` is evaluated under the schedule: inside one of its slots (a slot's days, from start
 * up to, not including, end; an end at or before the start runs past midnight into the next day), or outside all of
 * them when `inverse`. No schedule: always.
 */
export function inSchedule(schedule: ScheduleSpec | undefined, micros: number): boolean {
  if (!schedule || schedule.slots.length === 0) return true;
  const { day, minute } = localTime(micros / 1000, schedule.timezone);
  const yesterday = DAYS[(DAYS.indexOf(day as (typeof DAYS)[number]) + 6) % 7]!;
  let inside = false;
  for (const slot of schedule.slots) {
    for (const t of slot.times) {
      const start = t.start.hour * 60 + t.start.minute;
      const end = t.end.hour * 60 + t.end.minute;
      const on = (d: string) => slot.days.length === 0 || (slot.days as string[]).includes(d);
      if (end > start) {
        if (on(day) && minute >= start && minute < end) inside = true;
      } else if ((on(day) && minute >= start) || (on(yesterday) && minute < end)) {
        inside = true;
      }
    }
  }
  return schedule.inverse ? !inside : inside;
}
