// A Sensor Cloud push receiver on express, with the package's receiver kit (`npm i express`).
//   SIGNATURE_SECRET=s3cret PORT=3000 node examples/express-receiver.mjs
import express from 'express';
import { Deduplicator, SignatureError, verifySignature } from 'sensorcloud/receiver';

if (!process.env.SIGNATURE_SECRET) {
  console.error('set SIGNATURE_SECRET to the data connector\'s signature secret');
  process.exit(2);
}
// While you roll the connector's secret over (docs/receiving.md), PREVIOUS_SIGNATURE_SECRET holds the old one: a
// push is accepted when X-Service-Signature or X-Service-Signature-Previous verifies with either secret.
const secrets = [process.env.SIGNATURE_SECRET, process.env.PREVIOUS_SIGNATURE_SECRET].filter(Boolean);
const dedup = new Deduplicator();
const app = express();

// express.raw keeps the body as a Buffer of the bytes received; express.json would lose them.
app.post('/hook', express.raw({ type: 'application/json' }), async (req, res, next) => {
  try {
    await verifySignature(req.body, req.headers, secrets, { maxAgeSeconds: 3600 });
  } catch (err) {
    if (!(err instanceof SignatureError)) return next(err);
    console.log(`rejected: ${err.reason} (${err.message})`);
    return res.status(400).type('text/plain').send(`${err.reason}\n`);
  }
  const push = JSON.parse(req.body.toString('utf8'));
  if (!(await dedup.firstSeen(push.event.eventId))) {
    console.log(`duplicate ${push.event.eventId}`);
    return res.status(200).end();
  }
  res.status(200).end();
  console.log(`verified ${push.event.eventId} ${push.event.eventType} from ${push.metadata.deviceId} ${JSON.stringify(push.labels)}`);
});

const server = app.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address();
  console.log(`listening on http://${address}:${port}/hook`);
});
