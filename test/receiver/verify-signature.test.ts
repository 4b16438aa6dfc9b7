// The receiver kit: valid pushes verify (the contract's test vector, and a push signed by the delivery engine's own
// signBody); each kind of bad push fails with its own reason; the Deduplicator is bounded and its store pluggable.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { signBody } from '../../src/delivery/signing.ts';
import {
  Deduplicator,
  MemoryDedupStore,
  SignatureError,
  verifySignature,
  type DedupStore,
} from '../../src/receiver/index.ts';

// Contract §6.3 test vector: 544-byte body, secret, iat 1748779201.
const BODY =
  '{"event":{"eventId":"cvq2b1r0l4l9s3f2a9i0","targetName":"projects/cvq2b1b0l4l9s3f2a9g0/devices/emucvq2b1b0l4l9s3f2a9h0","eventType":"temperature","data":{"temperature":{"value":21.5,"updateTime":"2025-06-01T12:00:00.250000Z","samples":[{"value":21.5,"sampleTime":"2025-06-01T12:00:00.250000Z"}],"isBackfilled":false}},"timestamp":"2025-06-01T12:00:00.250000Z"},"labels":{"name":"Meeting room 4","room":"4"},"metadata":{"deviceId":"emucvq2b1b0l4l9s3f2a9h0","projectId":"cvq2b1b0l4l9s3f2a9g0","deviceType":"temperature","productNumber":"102058"}}';
const SECRET = 'my-signature-secret';
const TOKEN =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJjaGVja3N1bSI6ImFlMmU1ZDQwMDA3OGRiYTQyMGFiM2ExOWU5MDYxMTcyYWRiNmY0MzYiLCJjaGVja3N1bV9zaGEyNTYiOiI5MjQ2MWRkM2M2ZmMxZDVmYjU2Mzg0ZTI0NzBkN2Y3NzE5YzdhYmM2MGUzOWUxZTA3NTU5NWZkNDlkNzZiOTgyIiwiaWF0IjoxNzQ4Nzc5MjAxLCJleHAiOjE3NDg3ODI4MDEsImp0aSI6ImN2cTJiMXIwbDRsOXMzZjJhOWowIn0.KWDQpFyFXP3xglS5WtRCQGmy15FO87EeezN3jauZNLM';
const IAT = 1748779201;
const AT = { now: IAT + 5 };

/** A token with any header and claims, HMAC-SHA256 signed (or with the given signature). */
function forge(header: object, claims: unknown, secret = SECRET, signature?: string): string {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${signature ?? createHmac('sha256', secret).update(input).digest('base64url')}`;
}

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof SignatureError, `a SignatureError, got ${err}`);
    return err.reason;
  }
  assert.fail('verified, but should have failed');
}

describe('happy', () => {
  it('verifies the contract test vector and returns its claims', async () => {
    const claims = await verifySignature(Buffer.from(BODY), TOKEN, SECRET, AT);
    assert.equal(claims.checksum_sha256, '92461dd3c6fc1d5fb56384e2470d7f7719c7abc60e39e1e075595fd49d76b982');
    assert.deepEqual([claims.iat, claims.exp, claims.jti], [IAT, IAT + 3600, 'cvq2b1r0l4l9s3f2a9j0']);
  });

  it('finds the header in any case, in a headers object or a fetch Headers', async () => {
    for (const headers of [
      { 'x-service-signature': TOKEN },
      { 'X-SERVICE-SIGNATURE': TOKEN },
      { 'X-Service-Signature': [TOKEN] },
      new Headers({ 'x-SERVICE-signature': TOKEN }),
    ]) {
      await verifySignature(BODY, headers, SECRET, AT);
    }
  });

  it('verifies what the delivery engine signs now, with maxAgeSeconds', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = signBody(Buffer.from(BODY), SECRET, now - 30, 'cvq2b1r0l4l9s3f2a9j0');
    await verifySignature(Buffer.from(BODY), token, SECRET, { maxAgeSeconds: 300 });
  });
});

describe('errors', () => {
  it('a changed byte of the body: checksum_mismatch', async () => {
    const changed = Buffer.from(BODY);
    changed[changed.indexOf('21.5')] = '3'.charCodeAt(0);
    assert.equal(await reasonOf(verifySignature(changed, TOKEN, SECRET, AT)), 'checksum_mismatch');
    assert.equal(
      await reasonOf(verifySignature(`${BODY} `, TOKEN, SECRET, AT)),
      'checksum_mismatch',
      'a re-serialised body is not the raw body',
    );
  });

  it('a wrong secret: signature', async () => {
    assert.equal(await reasonOf(verifySignature(BODY, TOKEN, 'another-secret', AT)), 'signature');
  });

  it('alg none and HS512 are refused: algorithm', async () => {
    const claims = JSON.parse(Buffer.from(TOKEN.split('.')[1]!, 'base64url').toString());
    assert.equal(
      await reasonOf(verifySignature(BODY, forge({ alg: 'none', typ: 'JWT' }, claims, SECRET, ''), SECRET, AT)),
      'algorithm',
    );
    const hs512 = (() => {
      const input = `${Buffer.from('{"alg":"HS512","typ":"JWT"}').toString('base64url')}.${TOKEN.split('.')[1]}`;
      return `${input}.${createHmac('sha512', SECRET).update(input).digest('base64url')}`;
    })();
    assert.equal(await reasonOf(verifySignature(BODY, hs512, SECRET, AT)), 'algorithm');
    const error = await verifySignature(BODY, forge({ alg: 'none' }, claims, SECRET, ''), SECRET, AT).catch(
      (e: Error) => e,
    );
    assert.match((error as Error).message, /only HS256/);
  });

  it('an expired token: expired (after the clock skew)', async () => {
    assert.equal(await reasonOf(verifySignature(BODY, TOKEN, SECRET, { now: IAT + 3600 + 61 })), 'expired');
    await verifySignature(BODY, TOKEN, SECRET, { now: IAT + 3600 + 59 });
  });

  it('a missing or empty header: missing_header', async () => {
    assert.equal(await reasonOf(verifySignature(BODY, undefined, SECRET, AT)), 'missing_header');
    assert.equal(await reasonOf(verifySignature(BODY, {}, SECRET, AT)), 'missing_header');
    assert.equal(await reasonOf(verifySignature(BODY, '', SECRET, AT)), 'missing_header');
  });

  it('older than maxAgeSeconds: too_old; issued in the future: issued_at; not a JWT: malformed; no checksum: missing_checksum', async () => {
    assert.equal(
      await reasonOf(verifySignature(BODY, TOKEN, SECRET, { now: IAT + 200, maxAgeSeconds: 60 })),
      'too_old',
    );
    assert.equal(await reasonOf(verifySignature(BODY, TOKEN, SECRET, { now: IAT - 120 })), 'issued_at');
    assert.equal(await reasonOf(verifySignature(BODY, 'not-a-jwt', SECRET, AT)), 'malformed');
    const noChecksum = forge({ alg: 'HS256', typ: 'JWT' }, { iat: IAT, exp: IAT + 3600 });
    assert.equal(await reasonOf(verifySignature(BODY, noChecksum, SECRET, AT)), 'missing_checksum');
  });

  it('the JWT checks jose made (the kit used it before node:crypto) give the same reasons', async () => {
    const claims = JSON.parse(Buffer.from(TOKEN.split('.')[1]!, 'base64url').toString());
    const hs256 = { alg: 'HS256', typ: 'JWT' };
    const [head, payload, signature] = TOKEN.split('.') as [string, string, string];
    const cases: Array<[string, string, string]> = [
      ['a signature that is not base64url', `${head}.${payload}.${signature.slice(0, -1)}!`, 'malformed'],
      ['a signature one byte short', `${head}.${payload}.${signature.slice(0, -3)}`, 'signature'],
      ['an empty signature', `${head}.${payload}.`, 'signature'],
      ['five parts (a JWE)', `${TOKEN}.e30.e30`, 'malformed'],
      ['claims that are an array', forge(hs256, [claims]), 'malformed'],
      [
        'claims that are not JSON',
        `${head}.${Buffer.from('{"iat":').toString('base64url')}.${createHmac('sha256', SECRET)
          .update(`${head}.${Buffer.from('{"iat":').toString('base64url')}`)
          .digest('base64url')}`,
        'malformed',
      ],
      [
        'a header that is not JSON',
        `${Buffer.from('{"alg":"HS256"').toString('base64url')}.${payload}.${signature}`,
        'malformed',
      ],
      ['alg in lower case', forge({ alg: 'hs256' }, claims), 'algorithm'],
      ['an unknown critical header parameter', forge({ ...hs256, crit: ['exp'], exp: 1 }, claims), 'malformed'],
      ['an unencoded payload (b64: false)', forge({ ...hs256, crit: ['b64'], b64: false }, claims), 'malformed'],
      ['exp that is not a number', forge(hs256, { ...claims, exp: String(claims.exp) }), 'issued_at'],
      ['nbf in the future', forge(hs256, { ...claims, nbf: IAT + 5 + 61 }), 'issued_at'],
      ['no iat', forge(hs256, { ...claims, iat: undefined }), 'issued_at'],
      ['no exp', forge(hs256, { ...claims, exp: undefined }), 'expired'],
      ['a checksum that is not hex', forge(hs256, { ...claims, checksum_sha256: 'z'.repeat(64) }), 'missing_checksum'],
    ];
    for (const [what, token, reason] of cases)
      assert.equal(await reasonOf(verifySignature(BODY, token, SECRET, AT)), reason, what);
    // What is accepted: b64 true, nbf within the skew, the checksum in upper case, a secret as bytes, a Date.
    await verifySignature(
      BODY,
      forge(
        { ...hs256, crit: ['b64'], b64: true },
        { ...claims, nbf: IAT + 5 + 59, checksum_sha256: claims.checksum_sha256.toUpperCase() },
      ),
      new TextEncoder().encode(SECRET),
      { now: new Date((IAT + 5) * 1000) },
    );
    await assert.rejects(
      verifySignature(BODY, TOKEN, '', AT),
      TypeError,
      'an empty secret is a mistake, not a bad push',
    );
  });
});

describe('Deduplicator', () => {
  it('lets an eventId through once, again after forget', async () => {
    const dedup = new Deduplicator();
    assert.equal(await dedup.firstSeen('a'), true);
    assert.equal(await dedup.firstSeen('a'), false);
    assert.equal(await dedup.firstSeen('b'), true);
    await dedup.forget('a');
    assert.equal(await dedup.firstSeen('a'), true);
  });

  it('the memory store is bounded in entries (oldest out) and in time', async () => {
    let now = 0;
    const store = new MemoryDedupStore({ maxEntries: 3, now: () => now });
    const dedup = new Deduplicator({ store, ttlSeconds: 10 });
    for (const id of ['a', 'b', 'c', 'd']) assert.equal(await dedup.firstSeen(id), true);
    assert.equal(store.size, 3);
    assert.equal(await dedup.firstSeen('a'), true, 'the oldest was evicted');
    assert.equal(await dedup.firstSeen('d'), false);
    now = 10_001;
    assert.equal(await dedup.firstSeen('d'), true, 'expired after its TTL');
    assert.equal(store.size, 1, 'expired ids are dropped');
  });

  it('takes any store with an atomic add (e.g. Redis SET NX EX)', async () => {
    const calls: Array<[string, number]> = [];
    const held = new Set<string>();
    const store: DedupStore = {
      async add(id, ttl) {
        calls.push([id, ttl]);
        if (held.has(id)) return false;
        held.add(id);
        return true;
      },
      async delete(id) {
        held.delete(id);
      },
    };
    const dedup = new Deduplicator({ store });
    assert.deepEqual(await Promise.all([dedup.firstSeen('x'), dedup.firstSeen('x')]), [true, false]);
    assert.deepEqual(calls, [
      ['x', 13 * 3600],
      ['x', 13 * 3600],
    ]);
  });
});
