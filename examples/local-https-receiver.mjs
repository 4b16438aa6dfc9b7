// A push receiver on HTTPS at https://127.0.0.1:8443/hook, for trying a real data connector on one machine (the
// README's "Try it"). A data connector pushes over HTTPS only and refuses private addresses, so the service must
// trust this receiver's self-signed certificate and be allowed to reach 127.0.0.1:
//   node examples/local-https-receiver.mjs --make-cert     # once: receiver-tls/cert.pem and key.pem (openssl)
//   SENSORCLOUD_CA_FILE=receiver-tls/cert.pem SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS=127.0.0.1/32 npm start
//   SIGNATURE_SECRET=s3cret node examples/local-https-receiver.mjs
// The certificate is for 127.0.0.1 only and is no certificate authority (CA:FALSE), so trusting it lets the service
// reach nothing else. For development only; a production receiver has a certificate from a public CA.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { Deduplicator, SignatureError, verifySignature } from 'sensorcloud/receiver';

const TLS_DIR = 'receiver-tls';
const CERT = `${TLS_DIR}/cert.pem`;
const KEY = `${TLS_DIR}/key.pem`;

if (process.argv.includes('--make-cert')) {
  mkdirSync(TLS_DIR, { recursive: true, mode: 0o700 });
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '30',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-addext', 'basicConstraints=critical,CA:FALSE',
    '-keyout', KEY, '-out', CERT,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  console.log(`wrote ${CERT} and ${KEY}: start the service with SENSORCLOUD_CA_FILE=${CERT}`);
  process.exit(0);
}
if (!existsSync(CERT) || !existsSync(KEY)) {
  console.error(`no certificate in ${TLS_DIR}/: run node examples/local-https-receiver.mjs --make-cert first`);
  process.exit(2);
}

// Without a secret the receiver takes unsigned pushes (a connector without signatureSecret). While you roll the
// connector's secret over (docs/receiving.md), PREVIOUS_SIGNATURE_SECRET holds the old one: either verifies a push.
const secret = process.env.SIGNATURE_SECRET;
const secrets = [secret, process.env.PREVIOUS_SIGNATURE_SECRET].filter(Boolean);
const dedup = new Deduplicator();

const server = createServer({ cert: readFileSync(CERT), key: readFileSync(KEY) }, (req, res) => {
  if (req.method !== 'POST') return res.writeHead(404).end();
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', async () => {
    // The raw bytes, before any JSON parsing: the signature covers exactly these.
    const raw = Buffer.concat(chunks);
    if (secret) {
      try {
        await verifySignature(raw, req.headers, secrets, { maxAgeSeconds: 3600 });
      } catch (err) {
        if (!(err instanceof SignatureError)) throw err;
        console.log(`receiver: rejected a push: ${err.reason} (${err.message})`);
        return res.writeHead(400, { 'content-type': 'text/plain' }).end(`${err.reason}\n`);
      }
    }
    const push = JSON.parse(raw.toString('utf8'));
    res.writeHead(200).end();
    if (!(await dedup.firstSeen(push.event.eventId))) return;
    console.log(`receiver: ${secret ? 'verified' : 'unsigned'} ${push.event.eventType} event ${push.event.eventId} from ${push.event.targetName} ${JSON.stringify(push.event.data)}`);
  });
});

server.listen(Number(process.env.PORT ?? 8443), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address();
  console.log(`receiver: listening on https://${address}:${port}/hook`);
});
