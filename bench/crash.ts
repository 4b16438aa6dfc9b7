// `npm run bench:crash [-- --events 20000 --kills 3 --delay-ms 300]`: at-least-once under SIGKILL, measured.
// Publishes the events (the receiver slow, so a backlog builds), SIGKILLs the service `kills` times while it
// drains, restarts it on the same data dir each time, and waits until every stored event has reached the receiver.
// Then counts the duplicates and says where each came from, by what the receiver saw of the first copy:
//   in flight   — the receiver was still working on it (or its answer never left) when the process died: the
//                 service cannot know it arrived, so it must send it again (at-least-once);
//   answered    — the receiver's 2xx was written back before the process died: the service had (or was about to
//                 have) the answer but had not recorded it. These are the avoidable ones.
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import { parseArgs } from 'node:util';
import { call, createConnectors, createDevices } from './lib/api.ts';
import { ServiceProcess } from './lib/service.ts';
import { createBenchTls } from './lib/tls.ts';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    kills: { type: 'string', default: '3' },
    'delay-ms': { type: 'string', default: '300' },
  },
});
const EVENTS = Number(values.events);
const KILLS = Number(values.kills);
const DELAY_MS = Number(values['delay-ms']);
const log = (line: string) => process.stdout.write(`${line}\n`);

/** A copy received (Date.now() times): when it arrived, and when its 2xx was written back (null: never). */
interface Receipt {
  receivedAt: number;
  answeredAt: number | null;
}
const receipts = new Map<string, Receipt[]>();
let total = 0;

const tls = createBenchTls();
const receiver: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const eventId = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event: { eventId: string } }).event
      .eventId;
    const receipt: Receipt = { receivedAt: Date.now(), answeredAt: null };
    let list = receipts.get(eventId);
    if (!list) receipts.set(eventId, (list = []));
    list.push(receipt);
    total++;
    setTimeout(() => {
      res.on('finish', () => {
        receipt.answeredAt = Date.now();
      });
      res.writeHead(200, { 'content-length': '0' });
      res.end();
    }, DELAY_MS);
  });
});
receiver.keepAliveTimeout = 60_000;
receiver.listen(0, '127.0.0.1');
await once(receiver, 'listening');
const url = `https://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;

const svc = await ServiceProcess.start({ caFile: tls.caFile }, 64);
try {
  await createConnectors(svc, [{ url, displayName: 'crash' }]);
  const devices = await createDevices(svc, 50);
  log(`publishing ${EVENTS} events (receiver answers after ${DELAY_MS} ms, so a backlog builds)`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < EVENTS) {
        const i = next++;
        await call(svc.pool, svc.basicAuth, 'POST', `/v2/${devices[i % devices.length]}:publish`, { touch: {} });
      }
    }),
  );
  const kills: number[] = [];
  // Kills spread over the drain (it takes about EVENTS / (64 / delay) seconds).
  const drainMs = EVENTS / (64 / DELAY_MS);
  for (let k = 1; k <= KILLS; k++) {
    await new Promise((r) => setTimeout(r, drainMs / (KILLS + 1)));
    log(`SIGKILL ${k} after ${receipts.size} events received (${total} requests)`);
    kills.push(Date.now());
    await svc.crash();
  }
  const deadline = Date.now() + drainMs * 3 + 120_000;
  while (receipts.size < EVENTS) {
    if (Date.now() > deadline) throw new Error(`only ${receipts.size} of ${EVENTS} events arrived`);
    await new Promise((r) => setTimeout(r, 500));
  }
  await new Promise((r) => setTimeout(r, 2000)); // late retries of already-delivered events count too
  // A copy answered before the kill that followed it was acknowledged while the service lived; one answered
  // after (to a connection the dead process had left) or never was in flight.
  let inFlight = 0;
  let answered = 0;
  for (const list of receipts.values()) {
    for (const earlier of list.slice(0, -1)) {
      const kill = kills.find((k) => k >= earlier.receivedAt) ?? Infinity;
      if (earlier.answeredAt !== null && earlier.answeredAt < kill) answered++;
      else inFlight++;
    }
  }
  const duplicates = total - receipts.size;
  log(
    `events ${receipts.size}, requests ${total}, duplicates ${duplicates} (${((duplicates / receipts.size) * 100).toFixed(2)} %, ${(duplicates / KILLS).toFixed(1)} per kill)`,
  );
  log(`  first copy in flight at the kill: ${inFlight}; first copy answered 2xx but not recorded: ${answered}`);
} finally {
  await svc.dispose();
  receiver.close();
}
