// The ceiling: a bare relay that accepts the same publish requests as the service and forwards each one, as a
// push-shaped JSON body, in an HTTPS POST (undici, keep-alive pool) to the receiver, answering 200 {} once the
// receiver has acknowledged. It stores nothing and signs nothing, so its throughput is the physical limit of
// "HTTP in, HTTPS out" on this machine with the same load generator, receiver and concurrency.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Pool } from 'undici';
import { serveHelper } from './procs.ts';

const [receiverUrl, caFile] = process.argv.slice(2);
const target = new URL(receiverUrl!);
const pool = new Pool(target.origin, {
  connections: 256,
  pipelining: 1,
  keepAliveTimeout: 60_000,
  connect: { ca: readFileSync(caFile!, 'utf8') },
});

let seq = 0;
let forwarded = 0;
let failed = 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    try {
      const data = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, { updateTime?: string }>;
      const eventType = Object.keys(data)[0] ?? 'touch';
      const eventId = `relay${(seq++).toString(32).padStart(15, '0')}`;
      const body = JSON.stringify({
        event: {
          eventId,
          targetName: `projects/relay/devices${req.url ?? ''}`,
          eventType,
          data,
          timestamp: data[eventType]?.updateTime ?? '',
        },
        labels: {},
        metadata: { deviceId: 'relay', projectId: 'relay', deviceType: eventType, productNumber: '' },
      });
      const r = await pool.request({
        path: target.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      await r.body.dump();
      if (r.statusCode >= 200 && r.statusCode < 300) forwarded++;
      else failed++;
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': '2' });
      res.end('{}');
    } catch {
      failed++;
      res.writeHead(502, { 'content-type': 'application/json; charset=utf-8' });
      res.end('{"error":"relay failed","code":502}');
    }
  });
});
server.keepAliveTimeout = 65_000;

await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const a = server.address();
serveHelper(
  { port: typeof a === 'object' && a ? a.port : 0 },
  {
    stats: () => ({ forwarded, failed }),
  },
);
