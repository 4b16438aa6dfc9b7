// The signatures of one push (push-headers.ts) during a rotation's overlap (extensions §X3): X-Service-Signature with
// the new secret and X-Service-Signature-Previous with the previous one, the same claims (one iat, one jti), each
// verified by the receiver kit's verifySignature with its own secret only; outside an overlap, one header as before.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildPushHeaders, PREVIOUS_SIGNATURE_HEADER, SIGNATURE_HEADER } from '../../src/delivery/push-headers.ts';
import { signBody } from '../../src/delivery/signing.ts';
import { verifySignature } from '../../src/receiver/verify-signature.ts';

const BODY = Buffer.from('{"event":{"eventId":"e1"},"labels":{},"metadata":{}}');
const IAT = 1_748_779_200;
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));

describe('push headers during an overlap', () => {
  it('signs the same claims with both secrets, drawing one jti; each verifies with its own secret only', async () => {
    const jtis: string[] = [];
    const headers = buildPushHeaders(
      { headers: {}, signatureSecret: 'new-secret', previousSignatureSecret: 'old-secret' },
      BODY,
      'ua',
      IAT,
      () => {
        jtis.push(`jti${jtis.length}`);
        return jtis.at(-1)!;
      },
    );
    assert.deepEqual(jtis, ['jti0'], 'one attempt, one jti');
    assert.deepEqual(Object.keys(headers), ['Content-Type', 'User-Agent', SIGNATURE_HEADER, PREVIOUS_SIGNATURE_HEADER]);
    const current = headers[SIGNATURE_HEADER]!;
    const previous = headers[PREVIOUS_SIGNATURE_HEADER]!;
    assert.equal(current, signBody(BODY, 'new-secret', IAT, 'jti0'), 'the new secret signs as it always has');
    assert.equal(previous, signBody(BODY, 'old-secret', IAT, 'jti0'));
    assert.deepEqual(claimsOf(previous), claimsOf(current));
    assert.equal(current.split('.').slice(0, 2).join('.'), previous.split('.').slice(0, 2).join('.'));

    const now = { now: IAT };
    assert.equal((await verifySignature(BODY, current, 'new-secret', now)).jti, 'jti0');
    assert.equal((await verifySignature(BODY, previous, 'old-secret', now)).jti, 'jti0');
    await assert.rejects(verifySignature(BODY, current, 'old-secret', now), { reason: 'signature' });
    await assert.rejects(verifySignature(BODY, previous, 'new-secret', now), { reason: 'signature' });
  });

  it('without a previous secret (or an empty one) sends X-Service-Signature alone, as before rotation existed', () => {
    for (const target of [
      { headers: {}, signatureSecret: 'new-secret' },
      { headers: {}, signatureSecret: 'new-secret', previousSignatureSecret: '' },
    ]) {
      const headers = buildPushHeaders(target, BODY, 'ua', IAT, () => 'jti');
      assert.deepEqual(headers, {
        'Content-Type': 'application/json',
        'User-Agent': 'ua',
        [SIGNATURE_HEADER]: signBody(BODY, 'new-secret', IAT, 'jti'),
      });
    }
  });

  it('an unsigned target sends neither; a custom header never sets the previous signature', () => {
    let drawn = 0;
    const unsigned = buildPushHeaders(
      { headers: {}, signatureSecret: '', previousSignatureSecret: 'old-secret' },
      BODY,
      'ua',
      IAT,
      () => `jti${drawn++}`,
    );
    assert.deepEqual(Object.keys(unsigned), ['Content-Type', 'User-Agent']);
    assert.equal(drawn, 0, 'no jti for an unsigned push');
    // As an older store might hold it: skipped when sent, refused when written (test/api/secret-rotation.test.ts).
    const spoofed = buildPushHeaders(
      { headers: { 'x-service-signature-previous': 'forged', 'X-Other': '1' }, signatureSecret: 'new-secret' },
      BODY,
      'ua',
      IAT,
      () => 'jti',
    );
    assert.deepEqual(Object.keys(spoofed), ['Content-Type', 'User-Agent', 'X-Other', SIGNATURE_HEADER]);
  });
});
