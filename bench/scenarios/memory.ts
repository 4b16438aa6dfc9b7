// Scenario 8, memory: resident memory (VmRSS) of the service with 10,000 connectors (100 projects × 100, the
// per-project maximum) and 100,000 emulated devices, idle and under publish load. The fixtures are cloned in
// the stopped service's SQLite file from one device and one connector created through the API.
import { createConnectors, createDevices, publishRequests, call, Skip } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { closedLoop } from '../lib/loadgen.ts';
import { assertFound } from '../lib/measure.ts';
import { sampleRss } from '../lib/service.ts';
import { cloneRows, newId, openDb } from '../lib/sqlite-seed.ts';
import { fmtInt, fmtMB, nowMs, round, sleep } from '../lib/stats.ts';

const LIMIT = 300 * 1024 * 1024;

export const memory: Scenario = {
  name: 'memory',
  title: 'Memory: 10,000 connectors, 100,000 devices',
  goal: '≤ 300 MB resident, idle and under load',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const projects = s.memoryProjects;
    const connectorCount = projects * s.memoryConnectorsPerProject;
    const deviceCount = projects * s.memoryDevicesPerProject;
    const svc = await ctx.startService();
    try {
      out.figures.rssFreshStart = svc.rss();
      const [deviceName] = await createDevices(svc, 1);
      const [connectorName] = await createConnectors(svc, [
        { url: ctx.receiver.url('/mem'), signatureSecret: 'bench-signature-secret', displayName: 'memory 0' },
      ]);
      const projectId = svc.project.split('/')[1]!;
      const templateDeviceId = deviceName!.split('/').pop()!;
      const templateConnectorId = connectorName!.split('/').pop()!;
      await svc.stop();

      ctx.log(
        `  seeding ${projects} projects, ${fmtInt(connectorCount)} connectors, ${fmtInt(deviceCount)} devices in SQLite`,
      );
      const t0 = nowMs();
      const db = openDb(svc.dbFile);
      const deviceNames: string[] = [deviceName!];
      try {
        const one = (table: string, id: string) => {
          const row = db.prepare(`SELECT * FROM ${table} WHERE id = ?`).get(id) as Record<string, unknown> | undefined;
          if (!row) throw new Skip(`row ${id} not found in ${table}; cannot clone fixtures`);
          return row;
        };
        const projectIds = [projectId, ...Array.from({ length: projects - 1 }, () => newId())];
        cloneRows(db, 'projects', one('projects', projectId), projects - 1, (i) => ({
          id: projectIds[i + 1],
          display_name: `bench memory ${i + 1}`,
        }));
        const perP = s.memoryConnectorsPerProject;
        cloneRows(db, 'data_connectors', one('data_connectors', templateConnectorId), connectorCount - 1, (i) => ({
          id: newId(),
          project_id: projectIds[Math.floor((i + 1) / perP)],
          display_name: `memory ${i + 1}`,
        }));
        const perD = s.memoryDevicesPerProject;
        cloneRows(db, 'devices', one('devices', templateDeviceId), deviceCount - 1, (i) => {
          const id = `emu${newId()}`;
          const p = projectIds[Math.floor((i + 1) / perD)]!;
          if ((i + 1) % 97 === 0) deviceNames.push(`projects/${p}/devices/${id}`);
          return { id, project_id: p };
        });
        db.pragma('wal_checkpoint(TRUNCATE)');
        out.figures.seeding = {
          projects,
          connectors: connectorCount,
          devices: deviceCount,
          seconds: round((nowMs() - t0) / 1000, 1),
        };
        out.notes.push(
          `${fmtInt(connectorCount)} connectors, ${fmtInt(deviceCount)} devices and ${projects - 1} projects were written directly into SQLite (cloned from rows the service created) while it was stopped`,
        );
        if (s.quick) out.notes.push('--quick: a tenth of the connectors and devices');
      } finally {
        db.close();
      }

      await svc.restart();
      const check = await call<{ devices: unknown[] }>(
        svc.pool,
        svc.basicAuth,
        'GET',
        `/v2/${deviceNames[deviceNames.length - 1]!.split('/devices/')[0]}/devices?pageSize=1000`,
      );
      out.figures.devicesVisibleInLastProject = check.devices.length;
      ctx.log(`  restarted in ${(svc.startMs / 1000).toFixed(1)} s; idle for ${s.memoryIdleMs / 1000} s`);
      const idleSampler = sampleRss(() => svc.pid);
      await sleep(s.memoryIdleMs);
      const idle = idleSampler.stop();

      await ctx.receiver.reset();
      ctx.log(
        `  under load: publish across ${fmtInt(deviceNames.length)} devices in ${projects} projects (× ${s.memoryConnectorsPerProject} pushes each), ${s.memoryLoadMs / 1000} s`,
      );
      const loadSampler = sampleRss(() => svc.pid);
      const r = await closedLoop(svc.pool, {
        concurrency: s.concurrency,
        durationMs: s.memoryLoadMs,
        maxCount: 10_000_000,
        make: publishRequests(deviceNames, svc.basicAuth),
        label: 'memory load',
        log: ctx.log,
      });
      await sleep(1000);
      const load = loadSampler.stop();
      assertFound(r, 'publish');
      const pushes = await ctx.receiver.count();
      out.figures = {
        ...out.figures,
        rssIdleBytes: idle.last,
        rssIdlePeakBytes: idle.peak,
        rssLoadPeakBytes: load.peak,
        rssAfterLoadBytes: load.last,
        restartMs: round(svc.startMs, 0),
        load: {
          publishedPerSecond: round(r.okPerSecond, 1),
          published: r.ok,
          pushesDelivered: pushes,
          failures: r.failures,
        },
      };
      out.check('idle RSS (MB)', round(idle.last / 1048576, 0), '≤ 300', idle.last <= LIMIT);
      out.check('peak RSS under load (MB)', round(load.peak / 1048576, 0), '≤ 300', load.peak <= LIMIT);
      out.headline = `idle ${fmtMB(idle.last)}, load peak ${fmtMB(load.peak)}`;
      ctx.log(
        `  → idle ${fmtMB(idle.last)}, peak under load ${fmtMB(load.peak)} (${fmtInt(r.okPerSecond)} published/s, ${fmtInt(pushes)} pushes)`,
      );
    } finally {
      await svc.dispose();
    }
  },
};
