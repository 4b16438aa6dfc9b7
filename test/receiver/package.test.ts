// The receiver kit as a user gets it (docs/receiving.md, "Getting the receiver kit"): `npm pack` in packages/receiver
// (its prepack builds it), `npm install` of the tarball into an empty project, offline — the package has no
// dependencies, so nothing is fetched — then a plain ESM script there that imports it by its name, verifies pushes
// built by the delivery engine's code and signed by jose (not by the kit), also during a secret rotation's overlap
// (extensions §X3), and de-duplicates; the same script on
// dist/index.js copied alone (the single file), and a TypeScript file type-checked against the shipped .d.ts.
import assert from 'node:assert/strict';
import { execFileSync, type ExecFileSyncOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { buildPushBody } from '../../src/delivery/push-body.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PACKAGE = join(ROOT, 'packages', 'receiver');
const NAME = 'sensorcloud-receiver';
const SECRET = 'package-test-secret';
const NEW_SECRET = 'package-test-secret-rotated';

/** The environment without npm's own variables (npm_config_*, npm_package_*) of the `npm test` that runs this. */
const env = (cache: string): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name))),
  npm_config_cache: cache,
  npm_config_update_notifier: 'false',
});

/** Runs a command to its end (or its timeout); its output, or an error that shows all it printed. */
function run(command: string, args: string[], options: ExecFileSyncOptions & { timeout: number }): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options }) as string;
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed: ${(err as Error).message}\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

const SCRIPT = `
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
const kit = await import(process.argv[2]);
const { verifySignature, SignatureError, Deduplicator } = kit;
const { body, header, secret, newHeader, newSecret } = JSON.parse(readFileSync('push.json', 'utf8'));
const raw = Buffer.from(body, 'base64');
const reason = (p) => p.then(() => 'verified', (e) => (e instanceof SignatureError ? e.reason : 'thrown: ' + e));
const claims = await verifySignature(raw, { 'x-service-signature': header }, secret, { maxAgeSeconds: 300 });
const push = JSON.parse(raw.toString('utf8'));
const dedup = new Deduplicator();
const changed = Buffer.from(raw);
changed[changed.length - 3] ^= 1;
const payloadPart = header.split('.')[1];
console.log(JSON.stringify({
  exports: Object.keys(kit).sort(),
  checksumMatches: claims.checksum_sha256 === createHash('sha256').update(raw).digest('hex'),
  eventId: push.event.eventId,
  firstSeen: [await dedup.firstSeen(push.event.eventId), await dedup.firstSeen(push.event.eventId)],
  changedByte: await reason(verifySignature(changed, header, secret)),
  wrongSecret: await reason(verifySignature(raw, header, 'another-secret')),
  algNone: await reason(verifySignature(raw, Buffer.from('{"alg":"none"}').toString('base64url') + '.' + payloadPart + '.', secret)),
  missing: await reason(verifySignature(raw, {}, secret)),
  expired: await reason(verifySignature(raw, header, secret, { now: claims.exp + 61 })),
  // A rotation: the new signature, and the old one in the previous header during the overlap.
  rotation: {
    oldOnly: await reason(verifySignature(raw, { 'x-service-signature': newHeader, [kit.PREVIOUS_SIGNATURE_HEADER]: header }, [secret])),
    newOnly: await reason(verifySignature(raw, { 'x-service-signature': newHeader, 'x-service-signature-previous': header }, [newSecret])),
    both: await reason(verifySignature(raw, { 'x-service-signature': newHeader }, [newSecret, secret])),
    oldOnlyAfter: await reason(verifySignature(raw, { 'x-service-signature': newHeader }, [secret])),
  },
}));
`;

const TYPED = `
import { Deduplicator, PREVIOUS_SIGNATURE_HEADER, SignatureError, verifySignature, type SignatureClaims, type SignatureFailureReason, type SignatureSecrets, type PushBody } from '${NAME}';
export const rolling: SignatureSecrets = ['new-secret', 'old-secret'];
export const previous: string = PREVIOUS_SIGNATURE_HEADER;
export async function receive(raw: Uint8Array, headers: Record<string, string | string[] | undefined>, secret: SignatureSecrets): Promise<PushBody | SignatureFailureReason> {
  const dedup = new Deduplicator({ ttlSeconds: 600, maxEntries: 10 });
  let claims: SignatureClaims;
  try {
    claims = await verifySignature(raw, headers, secret, { maxAgeSeconds: 3600, clockSkewSeconds: 30 });
  } catch (err) {
    if (!(err instanceof SignatureError)) throw err;
    for (const failure of err.failures) console.log(failure.header + ': ' + failure.reason);
    return err.reason;
  }
  const push = JSON.parse(new TextDecoder().decode(raw)) as PushBody;
  const first: boolean = await dedup.firstSeen(push.event.eventId);
  return first && claims.iat > 0 ? push : 'signature';
}
`;

describe('happy', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-receiver-package-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('npm pack, then npm install of the tarball offline into an empty project: it imports by name, verifies and de-duplicates, and is typed', {
    timeout: 90_000,
  }, async () => {
    const npm = (cwd: string, ...args: string[]) =>
      run('npm', args, { cwd, env: env(join(dir, 'npm-cache')), timeout: 60_000 });

    // The tarball: package.json, the README, one module and its declarations; no dependency of any kind.
    const [packed] = JSON.parse(npm(PACKAGE, 'pack', '--json', '--pack-destination', dir)) as Array<{
      filename: string;
      size: number;
      files: Array<{ path: string }>;
    }>;
    assert.equal(packed!.filename, `${NAME}-0.2.0.tgz`);
    assert.deepEqual(packed!.files.map((f) => f.path).sort(), [
      'README.md',
      'dist/deduplicator.d.ts',
      'dist/index.d.ts',
      'dist/index.js',
      'dist/push-body.d.ts',
      'dist/verify-signature.d.ts',
      'package.json',
    ]);
    assert.ok(packed!.size < 20_000, `the tarball is ${packed!.size} bytes`);
    const manifest = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'));
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies'])
      assert.equal(manifest[field], undefined, field);

    const app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'my-receiver', version: '1.0.0', private: true, type: 'module' }),
    );
    npm(app, 'install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', join(dir, packed!.filename));
    assert.deepEqual(
      readdirSync(join(app, 'node_modules')).filter((n) => !n.startsWith('.')),
      [NAME],
      'the package and nothing else',
    );
    assert.equal(
      JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')).dependencies[NAME],
      `file:../${packed!.filename}`,
    );

    // A push as the delivery engine builds it, signed by jose.
    const body = buildPushBody(
      JSON.stringify({
        eventId: 'cvq2b1r0l4l9s3f2a9i1',
        targetName: 'projects/p1/devices/d1',
        eventType: 'touch',
        data: { touch: { updateTime: '2025-06-01T12:00:00.250000Z' } },
        timestamp: '2025-06-01T12:00:00.250000Z',
      }),
      { id: 'd1', projectId: 'p1', type: 'touch', productNumber: '100110', labels: { name: 'Door' } },
      ['name'],
    );
    const checksum = createHash('sha256').update(body).digest('hex');
    const sign = (secret: string) =>
      new SignJWT({ checksum_sha256: checksum, jti: 'cvq2b1r0l4l9s3f2a9j1' })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(new TextEncoder().encode(secret));
    const [header, newHeader] = [await sign(SECRET), await sign(NEW_SECRET)];
    writeFileSync(
      join(app, 'push.json'),
      JSON.stringify({ body: body.toString('base64'), header, secret: SECRET, newHeader, newSecret: NEW_SECRET }),
    );
    writeFileSync(join(app, 'check.mjs'), SCRIPT);

    // By its name, and as the one file copied into a project by hand.
    mkdirSync(join(app, 'vendor'));
    cpSync(join(app, 'node_modules', NAME, 'dist', 'index.js'), join(app, 'vendor', `${NAME}.js`));
    for (const specifier of [NAME, `./vendor/${NAME}.js`]) {
      const out = JSON.parse(run(process.execPath, ['check.mjs', specifier], { cwd: app, timeout: 30_000 }));
      assert.deepEqual(
        out,
        {
          exports: [
            'Deduplicator',
            'MemoryDedupStore',
            'PREVIOUS_SIGNATURE_HEADER',
            'SIGNATURE_HEADER',
            'SignatureError',
            'signatureHeaderOf',
            'verifySignature',
          ],
          checksumMatches: true,
          eventId: 'cvq2b1r0l4l9s3f2a9i1',
          firstSeen: [true, false],
          changedByte: 'checksum_mismatch',
          wrongSecret: 'signature',
          algNone: 'algorithm',
          missing: 'missing_header',
          expired: 'expired',
          rotation: { oldOnly: 'verified', newOnly: 'verified', both: 'verified', oldOnlyAfter: 'signature' },
        },
        specifier,
      );
    }

    // TypeScript finds the declarations by the package's name, strictly and without @types/node.
    writeFileSync(join(app, 'receive.ts'), TYPED);
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          types: [],
          skipLibCheck: false,
        },
        files: ['receive.ts'],
      }),
    );
    run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], {
      cwd: app,
      timeout: 60_000,
    });
  });
});
