// Scenario 6, backlog: events queued while the receiver is down, then released. Events are first queued through
// the real path (publish with the receiver down); the queue is then grown to the target size by copying those
// rows inside the stopped service's SQLite file and made due at once, so the drain measures the engine's
// throughput with a deep queue rather than the retry schedule. Figures: drain rate as a ratio of the
// empty-queue rate, and bytes per queued event.
import { createConnectors, createDevices, publishRequests, Skip } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { closedLoop } from '../lib/loadgen.ts';
import { assertFound, measureThroughput, waitForDeliveries } from '../lib/measure.ts';
import { checkpointedSize, growQueue, openDb, tableBytes } from '../lib/sqlite-seed.ts';
import { fmtInt, fmtPct, nowMs, round } from '../lib/stats.ts';

export const backlog: Scenario = {
  name: 'backlog',
  title: 'Backlog: queued while the receiver is down',
  goal: 'drain ≥ 80 % of the empty-queue rate',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const svc = await ctx.startService();
    try {
      const devices = await createDevices(svc, s.devices);
      await createConnectors(svc, [
        { url: ctx.receiver.url('/backlog'), signatureSecret: 'bench-signature-secret', displayName: 'backlog' },
      ]);
      const make = publishRequests(devices, svc.basicAuth);

      ctx.log(`  empty-queue rate: ${s.concurrency} concurrent, ${s.backlogRateMs / 1000} s`);
      const empty = await measureThroughput(ctx, svc.pool, make, { durationMs: s.backlogRateMs, label: 'empty queue' });
      ctx.log(`  → ${fmtInt(empty.deliveredPerSecond)} delivered/s`);
      out.figures.emptyQueue = empty;

      await ctx.receiver.down();
      const real = Math.min(s.backlogEvents, s.backlogRealMax);
      ctx.log(`  receiver down; publishing up to ${fmtInt(real)} events through the API`);
      const q = await closedLoop(svc.pool, {
        concurrency: s.concurrency,
        durationMs: s.backlogRealMs,
        maxCount: real,
        make,
        label: 'queueing',
        log: ctx.log,
      });
      assertFound(q, 'publish');
      out.figures.queuedThroughApi = { events: q.ok, perSecond: round(q.okPerSecond, 1) };

      await svc.stop();
      const seedStart = nowMs();
      const db = openDb(svc.dbFile);
      let queued: number;
      try {
        const seed = growQueue(db, s.backlogEvents, Date.now() * 1000);
        queued = seed.realRows + seed.copiedRows;
        const queueBytes = tableBytes(db, 'deliveries');
        const fileBytes = checkpointedSize(db, svc.dbFile);
        out.figures.queue = {
          queuedEvents: queued,
          queuedThroughApi: seed.realRows,
          copiedInSqlite: seed.copiedRows,
          madeDueNow: seed.madeDue,
          queueBytes,
          queueBytesPerEvent: queueBytes === null ? null : round(queueBytes / queued, 1),
          databaseFileBytes: fileBytes,
        };
        if (seed.copiedRows > 0)
          out.notes.push(
            `queue grown from ${fmtInt(seed.realRows)} rows queued through the API to ${fmtInt(queued)} by copying rows in SQLite while the service was stopped`,
          );
        out.notes.push(`rows made due at restart (${seed.madeDue.join(', ') || 'no due column found'})`);
        ctx.log(
          `  queue: ${fmtInt(queued)} events (${fmtInt(seed.copiedRows)} copied in SQLite in ${((nowMs() - seedStart) / 1000).toFixed(1)} s), ${queueBytes === null ? '?' : round(queueBytes / queued, 0)} bytes/event`,
        );
      } finally {
        db.close();
      }

      await ctx.receiver.reset();
      await ctx.receiver.up();
      const t0 = nowMs();
      await svc.restart();
      ctx.log(
        `  receiver up, service restarted in ${(svc.startMs / 1000).toFixed(1)} s; draining (at most ${s.backlogDrainMs / 1000} s)`,
      );
      const d = await waitForDeliveries(ctx, queued, s.backlogDrainMs);
      const st = await ctx.receiver.stats();
      if (st.total === 0)
        throw new Skip('nothing was delivered after the receiver came back (delivery engine not running?)');
      const spanS = st.first !== null && st.last !== null && st.last > st.first ? (st.last - st.first) / 1000 : 0;
      const drainRate = spanS > 0 ? st.total / spanS : 0;
      const ratio = empty.deliveredPerSecond > 0 ? drainRate / empty.deliveredPerSecond : null;
      out.figures.drain = {
        drainPerSecond: round(drainRate, 1),
        delivered: st.total,
        queued,
        drained: d.drained,
        restartMs: round(svc.startMs, 0),
        firstPushAfterRestartMs: st.first !== null ? round(st.first - t0, 0) : null,
      };
      if (!d.drained)
        out.notes.push(
          `drain window ended after ${s.backlogDrainMs / 1000} s with ${fmtInt(st.total)} of ${fmtInt(queued)} delivered; the rate is over that window`,
        );
      out.ratioToCeiling = ctx.ceiling.throughput ? round(drainRate / ctx.ceiling.throughput, 3) : null;
      out.check(
        'drain rate / empty-queue rate',
        ratio === null ? null : round(ratio, 3),
        '≥ 0.80',
        ratio === null ? false : ratio >= 0.8,
      );
      const bpe = (out.figures.queue as { queueBytesPerEvent: number | null }).queueBytesPerEvent;
      out.headline = `${fmtInt(drainRate)} ev/s drain${ratio === null ? '' : ` (${fmtPct(ratio)} of empty)`}, ${bpe ?? '?'} B/event`;
      ctx.log(
        `  → ${fmtInt(drainRate)} delivered/s while draining${ratio === null ? '' : ` (${fmtPct(ratio)} of the empty-queue rate)`}`,
      );
    } finally {
      await ctx.receiver.up().catch(() => {});
      await svc.dispose();
    }
  },
};
