// A Sensor Cloud push receiver on fastify, with the package's receiver kit.
//   SIGNATURE_SECRET=s3cret PORT=3000 node examples/fastify-receiver.mjs
import Fastify from 'fastify';
import { Deduplicator, SignatureError, verifySignature } from 'sensorcloud/receiver';

if (!process.env.SIGNATURE_SECRET) {
  console.error('set SIGNATURE_SECRET to the data connector\'s signature secret');
  process.exit(2);
}
// While you roll the connector's secret over (docs/receiving.md), PREVIOUS_SIGNATURE_SECRET holds the old one: a
// push is accepted when X-Service-Signature or X-Service-Signature-Previous verifies with either secret.
const secrets = [process.env.SIGNATURE_SECRET, process.env.PREVIOUS_SIGNATURE_SECRET].filter(Boolean);
const dedup = new Deduplicator();
const app = Fastify();

// Keep the body as the raw bytes: the signature covers them, not a re-serialised object.
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

app.post('/hook', async (request, reply) => {
  const raw = request.body;
  try {
    await verifySignature(raw, request.headers, secrets, { maxAgeSeconds: 3600 });
  } catch (err) {
    if (!(err instanceof SignatureError)) throw err;
    console.log(`rejected: ${err.reason} (${err.message})`);
    return reply.code(400).send(`${err.reason}\n`);
  }
  const push = JSON.parse(raw.toString('utf8'));
  if (!(await dedup.firstSeen(push.event.eventId))) {
    console.log(`duplicate ${push.event.eventId}`);
    return reply.code(200).send();
  }
  console.log(`verified ${push.event.eventId} ${push.event.eventType} from ${push.metadata.deviceId} ${JSON.stringify(push.labels)}`);
  return reply.code(200).send();
});

const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
console.log(`listening on ${address}/hook`);
