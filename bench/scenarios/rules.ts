// Notification rules and alerts (extensions §X5, docs/alerts.md): their two speed goals on the real service.
//
// End-to-end with rules: the end-to-end scenario's closed-loop publish load and its measure (pushes acknowledged
// per second at the receiver, end-to-end.ts) on two services side by side, one with 100 enabled rules of a realistic
// mix in its project (range rules on temperature, humidity and co2 scoped by labels, by device or to every device;
// state rules; some with a trigger delay or count; half with resolved notifications), the other with none, in
// alternating rounds of equal length (as the delivery log's on/off, delivery-log.ts), so a slow phase of the machine
// falls on both. The fleet publishes readings of the types the rules read, in range but for a rare excursion (one in
// 1,000 of a fridge's and a co2 sensor's readings), so every rule is evaluated and few trigger. The rules' webhooks go
// to a receiver of their own, so they never count as pushes. The service's CPU per event is reported beside the rates
// (steadier on a busy machine). Goal: with rules ≥ 90 % of without.
//
// Publish → webhook: on the service with the rules, one of them is replaced by a rule on 10 probes whose readings
// alternate out of and back into range, published at a steady 100 events/s: every reading triggers or resolves an
// alert, and each transition sends one webhook (TRIGGERED, or RESOLVED with resolvedNotifications). Each webhook is
// matched to the publish that caused it by the eventId of the event in its body: the connector's push of the same
// event carries that eventId with the reading's unique updateTime, the publish's key (the webhook's own event data
// carries it too, the fallback and a cross-check). The time from the publish's intended send to the webhook's arrival
// (CLOCK_MONOTONIC in both processes). Goal: p99 ≤ 1 s, every expected notification arrived.
import { call, createConnectors, Skip } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { openLoop, type Req } from '../lib/loadgen.ts';
import { assertFound, measureThroughput } from '../lib/measure.ts';
import { Receiver, type RecordedEvents } from '../lib/receiver.ts';
import { cpuTimes } from '../lib/procs.ts';
import type { ServiceProcess } from '../lib/service.ts';
import { fmtInt, fmtMs, fmtPct, formatMicros, nowMs, round, sleep, summarize, uniqueMicros } from '../lib/stats.ts';

/** Connector paths at the shared receiver. */
const ON = '/rules/on';
const OFF = '/rules/off';
/** Webhook paths at the rules' own receiver: the 100 background rules', and the latency rule's. */
const QUIET = '/rules/quiet/';
const HOT = '/rules/hot';
const SECRET = 'bench-signature-secret';
/** One in this many of a fridge's and a co2 sensor's readings is out of range. */
const EXCURSION_EVERY = 1000;
const RULE_COUNT = 100;
const LATENCY_RATE = 100;
const PROBES = 10;

type Kind = 'fridge' | 'freezer' | 'server' | 'humidity' | 'co2' | 'door' | 'desk';

/** The fleet of both services: ten sensors of the types the rules read, labelled by site, room and purpose. */
const FLEET: Array<{ kind: Kind; type: string; labels: Record<string, string> }> = [
  { kind: 'fridge', type: 'temperature', labels: { name: 'fridge 1', site: 'oslo', fridge: '' } },
  { kind: 'fridge', type: 'temperature', labels: { name: 'fridge 2', site: 'bergen', fridge: '' } },
  { kind: 'freezer', type: 'temperature', labels: { name: 'freezer 1', site: 'bergen', freezer: '' } },
  { kind: 'server', type: 'temperature', labels: { name: 'server room', site: 'oslo', room: 'server' } },
  { kind: 'humidity', type: 'humidity', labels: { name: 'archive', site: 'oslo', room: 'archive' } },
  { kind: 'humidity', type: 'humidity', labels: { name: 'lab', site: 'bergen', room: 'lab' } },
  { kind: 'co2', type: 'co2', labels: { name: 'meeting room', site: 'oslo', room: 'meeting' } },
  { kind: 'co2', type: 'co2', labels: { name: 'office', site: 'bergen', room: 'office' } },
  { kind: 'door', type: 'contact', labels: { name: 'back door', site: 'oslo', door: '' } },
  { kind: 'desk', type: 'deskOccupancy', labels: { name: 'desk 12', site: 'bergen', desk: '' } },
];

async function createFleet(
  svc: ServiceProcess,
  specs: Array<{ type: string; labels: Record<string, string> }>,
): Promise<string[]> {
  const made = await Promise.all(
    specs.map((d) =>
      call<{ name: string }>(svc.pool, svc.basicAuth, 'POST', `/v2/${svc.project}/devices`, {
        type: d.type,
        labels: d.labels,
      }),
    ),
  );
  return made.map((d) => d.name);
}

/** The event body of reading `n` of a sensor of `kind` (in range but for the rare excursion). */
function reading(kind: Kind, n: number, key: string): string {
  const excursion = n % EXCURSION_EVERY === EXCURSION_EVERY / 2;
  const wobble = (n * 7919) % 40; // 0-39, spread without a pattern of period 10
  switch (kind) {
    case 'fridge':
      return `{"temperature":{"value":${excursion ? 9.5 : 3 + wobble / 10},"updateTime":"${key}"}}`;
    case 'freezer':
      return `{"temperature":{"value":${-20 + wobble / 10},"updateTime":"${key}"}}`;
    case 'server':
      return `{"temperature":{"value":${20 + wobble / 10},"updateTime":"${key}"}}`;
    case 'humidity':
      return `{"humidity":{"temperature":${19 + wobble / 20},"relativeHumidity":${40 + wobble / 4},"updateTime":"${key}"}}`;
    case 'co2':
      return `{"co2":{"ppm":${excursion ? 1400 : 500 + wobble * 10},"updateTime":"${key}"}}`;
    case 'door':
      return `{"contact":{"state":"CLOSED","updateTime":"${key}"}}`;
    case 'desk':
      // Empty now and then: the 1-hour NOT_OCCUPIED rules keep a pending condition until the next reading.
      return `{"deskOccupancy":{"state":"${n % 10 === 9 ? 'NOT_OCCUPIED' : 'OCCUPIED'}","updateTime":"${key}"}}`;
  }
}

/** The publish load: readings round-robin over the fleet, each with a unique updateTime (the correlation key). */
function readingRequests(devices: string[], auth: string): { make: (i: number) => Req; excursions: () => number } {
  let excursions = 0;
  const headers = { 'content-type': 'application/json', authorization: auth };
  return {
    make: (i) => {
      const d = i % devices.length;
      const n = Math.floor(i / devices.length);
      const kind = FLEET[d]!.kind;
      if ((kind === 'fridge' || kind === 'co2') && n % EXCURSION_EVERY === EXCURSION_EVERY / 2) excursions++;
      const key = formatMicros(uniqueMicros());
      return { method: 'POST', path: `/v2/${devices[d]}:publish`, headers, body: reading(kind, n, key), key };
    },
    excursions: () => excursions,
  };
}

const webhook = (url: string) => ({ type: 'WEBHOOK', webhook: { url, signatureSecret: SECRET } });

/**
 * The 100 background rules, all enabled, each with a webhook to its own path at `url(path)`. Against the fleet's
 * readings: a fridge excursion (9.5 °C) triggers the fridge rules with an upper bound of 8 or 9 whose scope holds
 * the fridge (those with a trigger delay only start a pending condition), a co2 excursion (1400 ppm) the co2 rules
 * from 1000 to 1400 ppm (those with a count or a delay pend); nothing else ever holds.
 */
function backgroundRules(fridges: string[], url: (path: string) => string): Array<Record<string, unknown>> {
  const rules: Array<Record<string, unknown>> = [];
  const add = (displayName: string, scope: Record<string, unknown>, trigger: Record<string, unknown>, more = {}) => {
    const i = rules.length;
    const levels: Array<Record<string, unknown>> = [
      {
        displayName: 'on call',
        actions: [webhook(url(`${QUIET}${i}`))],
        ...(i % 3 === 0 ? { escalateAfter: '3600s' } : {}),
      },
    ];
    if (i % 3 === 0)
      levels.push({
        displayName: 'facilities',
        actions: [webhook(url(`${QUIET}${i}/a`)), webhook(url(`${QUIET}${i}/b`))],
      });
    rules.push({
      displayName,
      enabled: true,
      ...scope,
      trigger,
      escalationLevels: levels,
      resolvedNotifications: i % 2 === 0,
      ...more,
    });
  };
  const range = (field: string, lower: number | null, upper: number | null, type: 'WITHIN' | 'OUTSIDE') => ({
    field,
    range: { lower, upper, type },
  });
  // 20 fridge rules: every fridge, the Oslo fridges, or one fridge by name; 2-8 °C widened by 0-4 °C above.
  for (let k = 0; k < 20; k++) {
    const scope = [
      { deviceLabels: { fridge: '' } },
      { deviceLabels: { fridge: '', site: 'oslo' } },
      { devices: [fridges[0]] },
      { devices: [fridges[1]] },
    ][k % 4]!;
    add(
      `fridge ${k}`,
      scope,
      range('temperature', 2, 8 + (k % 5), 'OUTSIDE'),
      k % 10 === 1 ? { triggerDelay: '600s' } : {},
    );
  }
  // 10 freezer and server-room rules.
  for (let k = 0; k < 10; k++) {
    if (k % 2 === 0)
      add(`freezer ${k}`, { deviceLabels: { freezer: '' } }, range('temperature', -30, -12 + k / 2, 'OUTSIDE'));
    else
      add(`server room ${k}`, { deviceLabels: { room: 'server' } }, range('temperature', 28 + k, null, 'WITHIN'), {
        triggerDelay: '300s',
      });
  }
  // 5 rules on every device: a sensor fault.
  for (let k = 0; k < 5; k++) add(`sensor fault ${k}`, {}, range('temperature', -40 - k, 50 + k, 'OUTSIDE'));
  // 20 humidity rules (half by the name the infrastructure client uses).
  for (let k = 0; k < 20; k++) {
    const scope = [
      { deviceLabels: { room: 'archive' } },
      { deviceLabels: { room: 'lab' } },
      { deviceLabels: { site: 'oslo' } },
      {},
    ][k % 4]!;
    add(
      `humidity ${k}`,
      scope,
      range(k % 2 === 0 ? 'humidity' : 'relativeHumidity', 30 - (k % 3) * 5, 60 + (k % 4) * 5, 'OUTSIDE'),
    );
  }
  // 20 co2 rules: from 1000, 1200 … 1800 ppm; some need 3 readings in a row or 15 minutes.
  for (let k = 0; k < 20; k++) {
    const scope = [
      { deviceLabels: { room: 'meeting' } },
      { deviceLabels: { room: 'office' } },
      {},
      { deviceLabels: { site: 'oslo' } },
    ][k % 4]!;
    const more =
      k % 7 === 0 ? { trigger: { ...range('co2', 1000 + (k % 5) * 200, null, 'WITHIN'), triggerCount: 3 } } : {};
    add(`co2 ${k}`, scope, range('co2', 1000 + (k % 5) * 200, null, 'WITHIN'), {
      ...more,
      ...(k % 6 === 5 ? { triggerDelay: '900s' } : {}),
    });
  }
  // 5 pressure rules (the co2 sensors could send it; this fleet does not).
  for (let k = 0; k < 5; k++) add(`pressure ${k}`, {}, range('pressure', null, 95_000 - k * 1000, 'WITHIN'));
  // 20 state rules: doors left open, desks empty for an hour, no motion for 30 minutes, water.
  for (let k = 0; k < 8; k++)
    add(`door ${k}`, [{ deviceLabels: { door: '' } }, {}, { deviceLabels: { site: 'oslo' } }][k % 3]!, {
      field: 'contact',
      contact: 'OPEN',
      ...(k % 4 === 3 ? { triggerCount: 2 } : {}),
    });
  for (let k = 0; k < 6; k++)
    add(
      `desk ${k}`,
      { deviceLabels: { desk: '' } },
      { field: 'deskOccupancy', occupancy: 'NOT_OCCUPIED' },
      { triggerDelay: '3600s' },
    );
  for (let k = 0; k < 3; k++)
    add(`motion ${k}`, {}, { field: 'motion', motion: 'NO_MOTION_DETECTED' }, { triggerDelay: '1800s' });
  for (let k = 0; k < 3; k++) add(`water ${k}`, {}, { field: 'waterPresent', presence: 'PRESENT' });
  return rules;
}

async function createRules(svc: ServiceProcess, rules: Array<Record<string, unknown>>): Promise<string[]> {
  const names: string[] = [];
  const batch = 8;
  for (let i = 0; i < rules.length; i += batch) {
    const made = await Promise.all(
      rules
        .slice(i, i + batch)
        .map((r) => call<{ name: string }>(svc.pool, svc.basicAuth, 'POST', `/v2/${svc.project}/rules`, r)),
    );
    names.push(...made.map((r) => r.name));
  }
  return names;
}

const countBy = (xs: string[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const x of xs) out[x || '(none)'] = (out[x || '(none)'] ?? 0) + 1;
  return out;
};

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

function appendEvents(into: RecordedEvents, more: RecordedEvents): void {
  for (const k of Object.keys(into) as Array<keyof RecordedEvents>) (into[k] as unknown[]).push(...more[k]);
}
const noEvents = (): RecordedEvents => ({ times: [], paths: [], eventIds: [], keys: [], transitions: [], alerts: [] });

/** What the service logged (warnings and errors), for the notes. */
function logNote(svc: ServiceProcess, which: string): string | null {
  const { count, first } = svc.logged();
  if (count === 0) return null;
  return `the service ${which} logged ${count} line${count === 1 ? '' : 's'} at warn or above; first: ${first
    .slice(0, 3)
    .map((l) => l.slice(0, 400))
    .join(' | ')}`;
}

export const rules: Scenario = {
  name: 'rules',
  title: 'Rules: end-to-end with 100 rules, and publish → alert webhook',
  goal: 'with 100 rules ≥ 90 % of without (alternating rounds); webhook p99 ≤ 1 s at 100 events/s, all arrived',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const hooks = await Receiver.start(ctx.tls);
    const on = await ctx.startService();
    const off = await ctx.startService();
    try {
      // Both services: the fleet and one connector; the first also the 100 rules.
      const setups = [];
      for (const [svc, path] of [
        [on, ON],
        [off, OFF],
      ] as const) {
        const devices = await createFleet(svc, FLEET);
        await createConnectors(svc, [{ url: ctx.receiver.url(path), signatureSecret: SECRET, displayName: path }]);
        setups.push({ svc, devices, load: readingRequests(devices, svc.basicAuth) });
      }
      const [a, b] = setups as [(typeof setups)[0], (typeof setups)[0]];
      const fridges = a.devices.filter((_, i) => FLEET[i]!.kind === 'fridge');
      const t0 = nowMs();
      const ruleNames = await createRules(
        on,
        backgroundRules(fridges, (p) => hooks.url(p)),
      );
      const listed = await call<{ rules: Array<{ enabled: boolean }> }>(
        on.pool,
        on.basicAuth,
        'GET',
        `/v2/${on.project}/rules`,
      );
      const enabled = listed.rules.filter((r) => r.enabled).length;
      ctx.log(`  ${ruleNames.length} rules created in ${((nowMs() - t0) / 1000).toFixed(1)} s; ${enabled} enabled`);
      if (enabled !== RULE_COUNT) out.notes.push(`the project lists ${enabled} enabled rules, not ${RULE_COUNT}`);

      // 1. End-to-end, with rules and without, alternating.
      await hooks.reset();
      await hooks.recordEvents(QUIET);
      ctx.log(`  warm-up: with rules, then without, ${s.warmupMs / 1000} s each (not counted)`);
      await measureThroughput(ctx, a.svc.pool, a.load.make, { durationMs: s.warmupMs, label: 'rules warm-up' });
      await measureThroughput(ctx, b.svc.pool, b.load.make, { durationMs: s.warmupMs, label: 'none warm-up' });
      const roundCount = s.quick ? 1 : 3;
      const roundMs = Math.round(s.throughputMs / roundCount);
      type Variant = { deliveredPerSecond: number; published: number; cpuPerEventUs: number | null };
      const rounds: Array<{ rules: Variant; none: Variant }> = [];
      let notDrained = 0;
      for (let i = 1; i <= roundCount; i++) {
        const r = {} as { rules: Variant; none: Variant };
        for (const which of i % 2 === 1 ? (['rules', 'none'] as const) : (['none', 'rules'] as const)) {
          const x = which === 'rules' ? a : b;
          // The service's CPU over the run and its drain, per event: steadier than the rate on a busy machine.
          const cpu0 = cpuTimes(x.svc.pid);
          const t = await measureThroughput(ctx, x.svc.pool, x.load.make, {
            durationMs: roundMs,
            label: `${which} ${i}`,
          });
          const cpu1 = cpuTimes(x.svc.pid);
          if (t.drainedAfterMs === null) notDrained++;
          r[which] = {
            deliveredPerSecond: t.deliveredPerSecond,
            published: t.published,
            cpuPerEventUs:
              cpu0 && cpu1 && t.published > 0 ? round(((cpu1.totalMs - cpu0.totalMs) * 1000) / t.published, 0) : null,
          };
        }
        rounds.push(r);
        ctx.log(
          `  round ${i}: with rules ${fmtInt(r.rules.deliveredPerSecond)} delivered/s, without ${fmtInt(r.none.deliveredPerSecond)} delivered/s (${fmtPct(r.rules.deliveredPerSecond / r.none.deliveredPerSecond)}); CPU ${r.rules.cpuPerEventUs} and ${r.none.cpuPerEventUs} µs/event`,
        );
      }
      await sleep(1000); // the last resolved notifications
      const quiet = await hooks.takeEvents();
      await hooks.recordEvents(null);
      const quietStats = await hooks.stats();
      const rulesRate = mean(rounds.map((r) => r.rules.deliveredPerSecond));
      const noneRate = mean(rounds.map((r) => r.none.deliveredPerSecond));
      const cpuOf = (v: Variant[]) =>
        v.every((x) => x.cpuPerEventUs !== null) ? round(mean(v.map((x) => x.cpuPerEventUs!)), 0) : null;
      const cpu = { withRules: cpuOf(rounds.map((r) => r.rules)), without: cpuOf(rounds.map((r) => r.none)) };
      const ratio = noneRate > 0 ? rulesRate / noneRate : null;
      // Each background alert that triggered (its level-0 path names the rule) is resolved by the next reading, with
      // a RESOLVED webhook when its rule has resolvedNotifications (the even ones).
      const triggered = new Set<string>();
      const resolved = new Set<string>();
      let resolvedExpected = 0;
      for (let i = 0; i < quiet.times.length; i++) {
        if (quiet.transitions[i] === 'TRIGGERED') {
          triggered.add(quiet.alerts[i]!);
          if (Number(quiet.paths[i]!.slice(QUIET.length)) % 2 === 0) resolvedExpected++;
        } else if (quiet.transitions[i] === 'RESOLVED') resolved.add(quiet.alerts[i]!);
      }
      const resolvedUntriggered = [...resolved].filter((n) => !triggered.has(n)).length;
      const open = await call<{ alerts: unknown[] }>(
        on.pool,
        on.basicAuth,
        'GET',
        `/v2/${on.project}/alerts?state=TRIGGERED&state=ACKNOWLEDGED&pageSize=100`,
      );
      const background = {
        excursionsPublished: a.load.excursions(),
        resolvedExpected,
        resolvedUntriggered,
        openAfter: open.alerts.length,
        webhooks: quiet.times.length,
        byTransition: countBy(quiet.transitions),
        alerts: new Set(quiet.alerts.filter(Boolean)).size,
        unsigned: quietStats.total - quietStats.signed,
      };
      out.figures.throughput = {
        rules: RULE_COUNT,
        withRulesPerSecond: round(rulesRate, 1),
        withoutPerSecond: round(noneRate, 1),
        ratio: ratio === null ? null : round(ratio, 3),
        cpuPerEventUs: cpu,
        rounds,
        background,
      };
      ctx.log(
        `  → with ${RULE_COUNT} rules ${fmtInt(rulesRate)} delivered/s, without ${fmtInt(noneRate)}${ratio === null ? '' : ` (${fmtPct(ratio)})`}; CPU ${cpu.withRules} and ${cpu.without} µs/event; ${fmtInt(background.excursionsPublished)} excursions published with rules: ${background.alerts} alerts, ${background.webhooks} webhooks ${JSON.stringify(background.byTransition)}`,
      );
      out.check(
        'end-to-end with 100 rules / without (alternating rounds)',
        ratio === null ? null : round(ratio, 3),
        '≥ 0.90',
        ratio === null ? null : ratio >= 0.9,
      );
      out.notes.push(
        `throughput in ${roundCount} alternating rounds of ${roundMs / 1000} s: with rules ${rounds.map((r) => fmtInt(r.rules.deliveredPerSecond)).join(' / ')}, without ${rounds.map((r) => fmtInt(r.none.deliveredPerSecond)).join(' / ')} per second; the service's CPU per event ${cpu.withRules ?? '—'} µs with rules, ${cpu.without ?? '—'} µs without`,
      );
      if (notDrained > 0)
        out.notes.push(`${notDrained} throughput run(s) had not drained ${s.drainTimeoutMs / 1000} s after the load`);
      if (background.unsigned > 0) out.notes.push(`${background.unsigned} background webhooks carried no signature`);
      if (resolved.size !== resolvedExpected)
        out.notes.push(
          `background rules: ${resolved.size} alerts sent a RESOLVED webhook, ${resolvedExpected} of those triggered have resolvedNotifications`,
        );
      if (resolvedUntriggered > 0)
        out.notes.push(`${resolvedUntriggered} background alerts sent RESOLVED without a TRIGGERED webhook`);
      if (open.alerts.length > 0)
        out.notes.push(
          `${open.alerts.length} background alerts were still open after the rounds (an excursion may have been its sensor's last reading)`,
        );
      if (background.excursionsPublished > 0 && background.webhooks === 0)
        out.notes.push('excursions were published with rules, yet no background webhook arrived');

      // 2. Publish → webhook at 100 events/s, with 100 rules in the project: one background rule gives way to the
      // latency rule, on 10 probes whose readings alternate out of (9.5 °C) and back into (5 °C) 2-8 °C.
      await call(on.pool, on.basicAuth, 'DELETE', `/v2/${ruleNames[ruleNames.length - 1]}`);
      const probes = await createFleet(
        on,
        Array.from({ length: PROBES }, (_, k) => ({ type: 'temperature', labels: { name: `probe ${k}`, probe: '' } })),
      );
      const hot = await call<{ name: string }>(on.pool, on.basicAuth, 'POST', `/v2/${on.project}/rules`, {
        displayName: 'latency probe 2-8 °C',
        enabled: true,
        deviceLabels: { probe: '' },
        trigger: { field: 'temperature', range: { lower: 2, upper: 8, type: 'OUTSIDE' } },
        escalationLevels: [{ displayName: 'bench', actions: [webhook(hooks.url(HOT))] }],
        resolvedNotifications: true,
      });
      const expectedTransition = new Map<string, string>();
      const headers = { 'content-type': 'application/json', authorization: on.basicAuth };
      const make = (i: number): Req => {
        const n = Math.floor(i / PROBES);
        const key = formatMicros(uniqueMicros());
        const outside = n % 2 === 0;
        expectedTransition.set(key, outside ? 'TRIGGERED' : 'RESOLVED');
        return {
          method: 'POST',
          path: `/v2/${probes[i % PROBES]}:publish`,
          headers,
          body: `{"temperature":{"value":${outside ? 9.5 : 5},"updateTime":"${key}"}}`,
          key,
        };
      };
      const latencyMs = s.quick ? 5_000 : 20_000;
      const graceMs = s.quick ? 5_000 : 10_000;
      await hooks.reset();
      await hooks.recordEvents(HOT);
      await ctx.receiver.recordEvents(ON);
      ctx.log(
        `  publish → webhook: ${LATENCY_RATE}/s for ${latencyMs / 1000} s over ${PROBES} probes, every reading a transition`,
      );
      const r = await openLoop(on.pool, { rate: LATENCY_RATE, durationMs: latencyMs, make, label: 'rules@100' });
      assertFound(r, 'publish');
      // Every publish answered 2xx triggers or resolves (each probe starts out of range).
      const expected = r.ok;
      const webhooks = noEvents();
      const pushes = noEvents();
      const deadline = nowMs() + graceMs;
      for (;;) {
        appendEvents(webhooks, await hooks.takeEvents());
        appendEvents(pushes, await ctx.receiver.takeEvents());
        if (webhooks.times.length >= expected || nowMs() > deadline) break;
        await sleep(200);
      }
      await sleep(500); // a duplicate would show
      appendEvents(webhooks, await hooks.takeEvents());
      appendEvents(pushes, await ctx.receiver.takeEvents());
      await hooks.recordEvents(null);
      await ctx.receiver.recordEvents(null);
      const hotStats = await hooks.stats();

      const keyOfEvent = new Map<string, string>();
      for (let i = 0; i < pushes.eventIds.length; i++) keyOfEvent.set(pushes.eventIds[i]!, pushes.keys[i]!);
      const seen = new Set<string>();
      const lat: number[] = [];
      let duplicates = 0;
      let byOwnKey = 0;
      let keyMismatch = 0;
      let unmatched = 0;
      let wrongTransition = 0;
      let noEvent = 0;
      for (let i = 0; i < webhooks.times.length; i++) {
        const eventId = webhooks.eventIds[i]!;
        const transition = webhooks.transitions[i]!;
        if (eventId === '') {
          noEvent++;
          continue;
        }
        const id = `${eventId} ${transition}`;
        if (seen.has(id)) {
          duplicates++;
          continue;
        }
        seen.add(id);
        let key = keyOfEvent.get(eventId);
        if (key === undefined) {
          key = webhooks.keys[i]!;
          byOwnKey++;
        } else if (key !== webhooks.keys[i]) keyMismatch++;
        const sent = r.sendTimes.get(key);
        if (sent === undefined) {
          unmatched++;
          continue;
        }
        if (expectedTransition.get(key) !== transition) wrongTransition++;
        lat.push(webhooks.times[i]! - sent);
      }
      const latency = summarize(lat);
      const missing = Math.max(0, expected - lat.length);
      // Bounded look at the rule's newest alerts: how their notifications went.
      const page = await call<{ alerts: Array<{ notifications: Array<{ outcome: string }> }> }>(
        on.pool,
        on.basicAuth,
        'GET',
        `/v2/${on.project}/alerts?rule=${encodeURIComponent(hot.name.split('/').pop()!)}&pageSize=100`,
      ).catch((err: unknown) => {
        if (err instanceof Skip) return { alerts: [] };
        throw err;
      });
      const outcomes = countBy(page.alerts.flatMap((al) => al.notifications.map((n) => n.outcome)));
      out.figures.webhook = {
        offeredPerSecond: LATENCY_RATE,
        seconds: latencyMs / 1000,
        published: r.ok,
        publishFailures: r.failures,
        publishLatency: r.latency,
        expected,
        arrived: lat.length,
        missing,
        byTransition: countBy(webhooks.transitions),
        latency,
        duplicates,
        matchedByOwnEventData: byOwnKey,
        eventDataMismatch: keyMismatch,
        unmatched,
        wrongTransition,
        withoutEvent: noEvent,
        unsigned: hotStats.total - hotStats.signed,
        newestAlertsNotificationOutcomes: outcomes,
      };
      ctx.log(
        `  → ${lat.length} of ${expected} webhooks arrived ${JSON.stringify(countBy(webhooks.transitions))}: p50 ${fmtMs(latency.p50)}, p99 ${fmtMs(latency.p99)}, max ${fmtMs(latency.max)}${duplicates ? `; ${duplicates} duplicates` : ''}`,
      );
      out.check(
        'publish → webhook p99 at 100 events/s (ms)',
        lat.length > 0 ? latency.p99 : null,
        '≤ 1,000 ms',
        lat.length > 0 ? latency.p99 <= 1000 : false,
      );
      out.check('webhooks arrived of those expected', lat.length, `all ${expected}`, expected > 0 && missing === 0);
      if (r.ok < r.sent)
        out.notes.push(
          `${r.sent - r.ok} latency publishes failed (${r.firstFailure}); a probe's alternation then skips a transition`,
        );
      if (missing > 0)
        out.notes.push(
          `${missing} expected webhooks had not arrived ${graceMs / 1000} s after the load (a publish overtaken by the next of its probe also skips transitions)`,
        );
      if (byOwnKey > 0)
        out.notes.push(`${byOwnKey} webhooks matched by their own event data: no push of their eventId was recorded`);
      if (keyMismatch > 0)
        out.notes.push(`${keyMismatch} webhooks carry event data other than the push of their eventId`);
      if (unmatched + noEvent > 0)
        out.notes.push(`${unmatched + noEvent} webhooks matched no publish of the run (${noEvent} without an event)`);
      if (wrongTransition > 0) out.notes.push(`${wrongTransition} webhooks carried a transition other than expected`);
      if (hotStats.total - hotStats.signed > 0)
        out.notes.push(`${hotStats.total - hotStats.signed} webhooks carried no X-Service-Signature`);
      if (Object.keys(outcomes).some((o) => o !== 'SENT'))
        out.notes.push(`the rule's newest alerts list notification outcomes ${JSON.stringify(outcomes)}`);

      out.headline = `${fmtInt(rulesRate)} ev/s with 100 rules, ${fmtInt(noneRate)} without${ratio === null ? '' : ` (${fmtPct(ratio)})`}; webhook p99 ${fmtMs(latency.p99)} @100/s, ${lat.length}/${expected} arrived`;
    } finally {
      for (const [svc, which] of [
        [on, 'with rules'],
        [off, 'without rules'],
      ] as const) {
        const note = logNote(svc, which);
        if (note) out.notes.push(note);
      }
      const logged = (svc: ServiceProcess) => {
        const l = svc.logged();
        return { lines: l.count, first: l.first.slice(0, 10) };
      };
      out.figures.serviceLog = { withRules: logged(on), withoutRules: logged(off) };
      await on.dispose();
      await off.dispose();
      await hooks.stop();
    }
  },
};
