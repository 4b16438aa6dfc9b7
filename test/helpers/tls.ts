// Test certificates made with the openssl CLI, once per process: a test CA, a server certificate it signs (for
// 127.0.0.1, ::1, localhost and receiver.test), one it signs for another host only, one it signed that has expired,
// and an untrusted self-signed one.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface KeyPair {
  key: string;
  cert: string;
}

export interface TestTls {
  dir: string;
  /** PEM file of the test CA: pass as config.caFile (SENSORCLOUD_CA_FILE). */
  caFile: string;
  caCert: string;
  /** Signed by the test CA for IP:127.0.0.1, IP:::1, DNS:localhost, DNS:receiver.test. */
  server: KeyPair;
  /** Signed by the test CA, but only for DNS:wrong-host.test (a hostname mismatch for every receiver URL). */
  wrongHost: KeyPair;
  /** Signed by the test CA for the same names as `server`, and expired: valid until a day before it was made. */
  expired: KeyPair;
  /** Self-signed for 127.0.0.1 and localhost; trusted by nobody. */
  selfSigned: KeyPair;
}

let cached: TestTls | undefined;

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function signed(dir: string, name: string, san: string, days = 365): KeyPair {
  openssl(dir, [
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${name}`,
  ]);
  writeFileSync(
    join(dir, `${name}.ext`),
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=${san}`,
      'subjectKeyIdentifier=hash',
      'authorityKeyIdentifier=keyid,issuer',
    ].join('\n'),
  );
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    String(days),
    '-sha256',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.crt`,
  ]);
  return { key: readFileSync(join(dir, `${name}.key`), 'utf8'), cert: readFileSync(join(dir, `${name}.crt`), 'utf8') };
}

/** The certificates, generated on first use and removed when the process exits. */
export function testTls(): TestTls {
  if (cached) return cached;
  const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-tls-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '365',
    '-sha256',
    '-subj',
    '/CN=SensorCloud Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const server = signed(dir, 'server', 'IP:127.0.0.1,IP:::1,DNS:localhost,DNS:receiver.test');
  const wrongHost = signed(dir, 'wrong-host', 'DNS:wrong-host.test');
  // openssl takes a negative number of days: the certificate ends before it begins.
  const expired = signed(dir, 'expired', 'IP:127.0.0.1,IP:::1,DNS:localhost,DNS:receiver.test', -1);
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'self.key',
    '-out',
    'self.crt',
    '-days',
    '365',
    '-sha256',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ]);
  const selfSigned = {
    key: readFileSync(join(dir, 'self.key'), 'utf8'),
    cert: readFileSync(join(dir, 'self.crt'), 'utf8'),
  };
  const caFile = join(dir, 'ca.crt');
  cached = { dir, caFile, caCert: readFileSync(caFile, 'utf8'), server, wrongHost, expired, selfSigned };
  return cached;
}
