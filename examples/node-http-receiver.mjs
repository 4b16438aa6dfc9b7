// A Sensor Cloud push receiver on node:http, with the package's receiver kit.
//   SIGNATURE_SECRET=s3cret PORT=3000 node examples/node-http-receiver.mjs
// then, for pushes from a local service: sensorcloud listen --forward-to http://localhost:3000/hook --secret s3cret
import { createServer } from 'node:http';
import { Deduplicator, SignatureError, verifySignature } from 'sensorcloud/receiver';

if (!process.env.SIGNATURE_SECRET) {
  console.error('set SIGNATURE_SECRET to the data connector\'s signature secret');
  process.exit(2);
}
// While you roll the connector's secret over (docs/receiving.md), PREVIOUS_SIGNATURE_SECRET holds the old one: a
// push is accepted when X-Service-Signature or X-Service-Signature-Previous verifies with either secret.
const secrets = [process.env.SIGNATURE_SECRET, process.env.PREVIOUS_SIGNATURE_SECRET].filter(Boolean);
const dedup = new Deduplicator();

const server = createServer((req, res) => {
  if (req.method !== 'POST') return res.writeHead(404).end();
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', async () => {
    // The raw bytes, before any JSON parsing: the signature covers exactly these.
    const raw = Buffer.concat(chunks);
    try {
      await verifySignature(raw, req.headers, secrets, { maxAgeSeconds: 3600 });
    } catch (err) {
      if (!(err instanceof SignatureError)) throw err;
      console.log(`rejected: ${err.reason} (${err.message})`);
      return res.writeHead(400, { 'content-type': 'text/plain' }).end(`${err.reason}\n`);
    }
    const push = JSON.parse(raw.toString('utf8'));
    if (!(await dedup.firstSeen(push.event.eventId))) {
      console.log(`duplicate ${push.event.eventId}`);
      return res.writeHead(200).end();
    }
    // Acknowledge at once; queue slow work rather than doing it here (the service waits at most 10 s).
    res.writeHead(200).end();
    console.log(`verified ${push.event.eventId} ${push.event.eventType} from ${push.metadata.deviceId} ${JSON.stringify(push.labels)}`);
  });
});

server.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address();
  console.log(`listening on http://${address}:${port}/hook`);
});
