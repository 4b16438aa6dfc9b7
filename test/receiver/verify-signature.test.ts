// The receiver kit: valid pushes verify (the contract's test vector, and a push signed by the delivery engine's own
// signBody); each kind of bad push fails with its own reason; during a secret rotation's overlap (extensions §X3)
// a receiver holding the old secret, the new one or both accepts every push; the Deduplicator is bounded and its
// store pluggable.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { buildPushHeaders, pushUserAgent } from '../../src/delivery/push-headers.ts';
import { signBody } from '../../src/delivery/signing.ts';
import {
  Deduplicator,
  MemoryDedupStore,
  PREVIOUS_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
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
  return (await refusalOf(promise)).reason;
}

async function refusalOf(promise: Promise<unknown>): Promise<SignatureError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof SignatureError, `a SignatureError, got ${err}`);
    return err;
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

// Extensions §X3: during a rotation's overlap the service signs X-Service-Signature with the new secret and
// X-Service-Signature-Previous with the previous one, the same claims (iat, jti, body hash). The headers come from
// the delivery engine's own buildPushHeaders; the previous one is signed here with its signBody, as the engine does.
const OLD = 'old-signature-secret';
const NEW = '5f0c6e2b9a4d71e83c2f6a0b4e9d1c7a';
const JTI = 'cvq2b1r0l4l9s3f2a9j0';

/** A push as the service sends it: signed with `secret`, and with `previous` too during an overlap. */
function pushSignedWith(secret: string, previous?: string, body = Buffer.from(BODY)) {
  const headers = buildPushHeaders({ headers: {}, signatureSecret: secret }, body, pushUserAgent(), IAT, () => JTI);
  if (previous !== undefined) headers[PREVIOUS_SIGNATURE_HEADER] = signBody(body, previous, IAT, JTI);
  return { body, headers };
}

describe('secret rotation (extensions §X3)', () => {
  const overlap = pushSignedWith(NEW, OLD);
  const after = pushSignedWith(NEW);
  const holders: Array<[string, string | string[]]> = [
    ['only the old secret', [OLD]],
    ['only the new secret', [NEW]],
    ['both, new first', [NEW, OLD]],
    ['both, old first', [OLD, NEW]],
    ['the old secret alone, not in a list (the single-secret API)', OLD],
    ['the new secret alone, not in a list', NEW],
  ];

  it("the engine, given a target's previous secret, sends exactly these two headers", () => {
    const target = { headers: {}, signatureSecret: NEW, previousSignatureSecret: OLD };
    assert.deepEqual(
      buildPushHeaders(target, overlap.body, pushUserAgent(), IAT, () => JTI),
      overlap.headers,
    );
  });

  it('during the overlap a receiver holding the old secret, the new one or both accepts the push', async () => {
    assert.deepEqual(Object.keys(overlap.headers).slice(-2), [SIGNATURE_HEADER, PREVIOUS_SIGNATURE_HEADER]);
    for (const [who, secrets] of holders) {
      const claims = await verifySignature(overlap.body, overlap.headers, secrets, AT);
      assert.deepEqual([claims.iat, claims.jti], [IAT, JTI], who);
      // The names as node's req.headers (lower case) and a fetch Headers give them.
      const lower = Object.fromEntries(Object.entries(overlap.headers).map(([k, v]) => [k.toLowerCase(), v]));
      await verifySignature(overlap.body, lower, secrets, AT);
      await verifySignature(overlap.body, new Headers(overlap.headers), secrets, AT);
    }
  });

  it('after the overlap (no previous header) the new secret verifies and the old one alone is refused', async () => {
    assert.equal(after.headers[PREVIOUS_SIGNATURE_HEADER], undefined);
    for (const secrets of [[NEW], NEW, [NEW, OLD], [OLD, NEW]])
      await verifySignature(after.body, after.headers, secrets, AT);
    for (const secrets of [[OLD], OLD]) {
      const error = await refusalOf(verifySignature(after.body, after.headers, secrets, AT));
      assert.equal(error.reason, 'signature');
      assert.deepEqual(error.failures, [{ header: SIGNATURE_HEADER, reason: 'signature' }]);
    }
  });

  it('a receiver rolling its secret refuses no push: [old] → [new, old] → [new], across the rotation', async () => {
    const before = pushSignedWith(OLD);
    // What the service sends in each phase, and what the receiver may hold in it while it rolls over.
    const phases: Array<[string, { body: Buffer; headers: Record<string, string> }, string[][]]> = [
      ['before the rotation', before, [[OLD], [NEW, OLD]]],
      ['during the overlap', overlap, [[OLD], [NEW, OLD], [NEW]]],
      ['after the overlap', after, [[NEW, OLD], [NEW]]],
    ];
    for (const [phase, push, held] of phases) {
      for (const secrets of held) {
        await verifySignature(push.body, push.headers, secrets, AT).catch((err: Error) =>
          assert.fail(`${phase}, holding ${secrets.length} secret(s): refused, ${err.message}`),
        );
      }
    }
  });

  it('a changed byte is refused whoever holds which secret: checksum_mismatch, with how each header failed', async () => {
    const changed = Buffer.from(overlap.body);
    changed[changed.indexOf('21.5')] = '3'.charCodeAt(0);
    for (const [who, secrets] of holders) {
      const error = await refusalOf(verifySignature(changed, overlap.headers, secrets, AT));
      assert.equal(error.reason, 'checksum_mismatch', who);
      assert.equal(error.failures.length, 2, who);
      assert.match(error.message, /X-Service-Signature: \w+; X-Service-Signature-Previous: \w+\)$/, who);
    }
    const oldOnly = await refusalOf(verifySignature(changed, overlap.headers, [OLD], AT));
    assert.deepEqual(oldOnly.failures, [
      { header: SIGNATURE_HEADER, reason: 'signature' },
      { header: PREVIOUS_SIGNATURE_HEADER, reason: 'checksum_mismatch' },
    ]);
    const tamperedAfter = Buffer.from(after.body);
    tamperedAfter[tamperedAfter.length - 3] ^= 1;
    for (const secrets of [[NEW], [NEW, OLD]])
      assert.equal(await reasonOf(verifySignature(tamperedAfter, after.headers, secrets, AT)), 'checksum_mismatch');
  });

  it('neither secret: signature, for both headers, and the message names no secret', async () => {
    const error = await refusalOf(verifySignature(overlap.body, overlap.headers, ['a-third-secret', 'a-fourth'], AT));
    assert.equal(error.reason, 'signature');
    assert.deepEqual(error.failures, [
      { header: SIGNATURE_HEADER, reason: 'signature' },
      { header: PREVIOUS_SIGNATURE_HEADER, reason: 'signature' },
    ]);
    assert.equal(
      error.message,
      'the signature does not match any of the 2 secrets: wrong secret, or a changed token ' +
        '(X-Service-Signature: signature; X-Service-Signature-Previous: signature)',
    );
    for (const secret of [OLD, NEW, 'a-third-secret', 'a-fourth']) assert.ok(!error.message.includes(secret));
  });

  it('the receiver trusts only what it holds: a previous header signed with a leaked old secret fails [new]', async () => {
    const forged = Buffer.from(BODY.replace('21.5', '99.9'));
    const headers = {
      [SIGNATURE_HEADER]: signBody(forged, 'a-guess', IAT, JTI),
      [PREVIOUS_SIGNATURE_HEADER]: signBody(forged, OLD, IAT, JTI),
    };
    assert.equal(await reasonOf(verifySignature(forged, headers, [NEW], AT)), 'signature');
  });

  it('the replay checks apply to either header as before: too_old, expired', async () => {
    for (const secrets of [[OLD], [NEW], [NEW, OLD]]) {
      assert.equal(
        await reasonOf(verifySignature(overlap.body, overlap.headers, secrets, { now: IAT + 200, maxAgeSeconds: 60 })),
        'too_old',
      );
      assert.equal(
        await reasonOf(verifySignature(overlap.body, overlap.headers, secrets, { now: IAT + 3600 + 61 })),
        'expired',
      );
    }
  });

  it('a header value checks that one token; a previous header without X-Service-Signature is missing_header', async () => {
    await verifySignature(overlap.body, overlap.headers[SIGNATURE_HEADER], [OLD, NEW], AT);
    await verifySignature(overlap.body, overlap.headers[PREVIOUS_SIGNATURE_HEADER], [OLD], AT);
    assert.equal(
      await reasonOf(verifySignature(overlap.body, overlap.headers[SIGNATURE_HEADER], [OLD], AT)),
      'signature',
    );
    const previousOnly = { [PREVIOUS_SIGNATURE_HEADER]: overlap.headers[PREVIOUS_SIGNATURE_HEADER]! };
    assert.equal(await reasonOf(verifySignature(overlap.body, previousOnly, [OLD], AT)), 'missing_header');
    // An empty previous header is no header.
    await verifySignature(after.body, { ...after.headers, [PREVIOUS_SIGNATURE_HEADER]: '' }, [NEW], AT);
  });

  it('secrets as bytes in a list; an empty list, an empty secret in it or a non-secret is a TypeError', async () => {
    await verifySignature(overlap.body, overlap.headers, [new TextEncoder().encode(OLD)], AT);
    await verifySignature(overlap.body, overlap.headers, [Buffer.from('x'), Buffer.from(NEW)], AT);
    for (const bad of [[], [NEW, ''], [NEW, undefined], undefined, 42])
      await assert.rejects(
        verifySignature(overlap.body, overlap.headers, bad as unknown as string[], AT),
        TypeError,
        JSON.stringify(bad),
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
