// A throwaway test CA and a server certificate for 127.0.0.1/localhost, made with the openssl CLI in a temp dir.
// The service trusts the CA through SENSORCLOUD_CA_FILE; the relay passes it to undici directly.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trackDir } from './procs.ts';

export interface BenchTls {
  dir: string;
  caFile: string;
  certFile: string;
  keyFile: string;
  ca: string;
  cert: string;
  key: string;
}

export function createBenchTls(): BenchTls {
  const dir = trackDir(mkdtempSync(join(tmpdir(), 'sc-bench-tls-')));
  const f = (name: string) => join(dir, name);
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  run([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=sensorcloud-bench-ca',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  // P-256 keeps handshakes cheap, so TLS setup cost does not dominate the receiver.
  run([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    f('server.key'),
    '-out',
    f('server.csr'),
  ]);
  writeFileSync(
    f('server.ext'),
    [
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '',
    ].join('\n'),
  );
  run([
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    f('server.ext'),
    '-out',
    f('server.pem'),
  ]);
  return {
    dir,
    caFile: f('ca.pem'),
    certFile: f('server.pem'),
    keyFile: f('server.key'),
    ca: readFileSync(f('ca.pem'), 'utf8'),
    cert: readFileSync(f('server.pem'), 'utf8'),
    key: readFileSync(f('server.key'), 'utf8'),
  };
}
