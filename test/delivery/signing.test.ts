// The X-Service-Signature JWT: the contract's test vector byte for byte, and an independent check with jose.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { bodyChecksums, signBody } from '../../src/delivery/signing.ts';

// Contract §6.3 test vector.
const SECRET = 'my-signature-secret';
const BODY =
  '{"event":{"eventId":"cvq2b1r0l4l9s3f2a9i0","targetName":"projects/cvq2b1b0l4l9s3f2a9g0/devices/emucvq2b1b0l4l9s3f2a9h0","eventType":"temperature","data":{"temperature":{"value":21.5,"updateTime":"2025-06-01T12:00:00.250000Z","samples":[{"value":21.5,"sampleTime":"2025-06-01T12:00:00.250000Z"}],"isBackfilled":false}},"timestamp":"2025-06-01T12:00:00.250000Z"},"labels":{"name":"Meeting room 4","room":"4"},"metadata":{"deviceId":"emucvq2b1b0l4l9s3f2a9h0","projectId":"cvq2b1b0l4l9s3f2a9g0","deviceType":"temperature","productNumber":"102058"}}';
const IAT = 1748779201; // 2025-06-01T12:00:01Z
const JTI = 'cvq2b1r0l4l9s3f2a9j0';
const EXPECTED =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJjaGVja3N1bSI6ImFlMmU1ZDQwMDA3OGRiYTQyMGFiM2ExOWU5MDYxMTcyYWRiNmY0MzYiLCJjaGVja3N1bV9zaGEyNTYiOiI5MjQ2MWRkM2M2ZmMxZDVmYjU2Mzg0ZTI0NzBkN2Y3NzE5YzdhYmM2MGUzOWUxZTA3NTU5NWZkNDlkNzZiOTgyIiwiaWF0IjoxNzQ4Nzc5MjAxLCJleHAiOjE3NDg3ODI4MDEsImp0aSI6ImN2cTJiMXIwbDRsOXMzZjJhOWowIn0.KWDQpFyFXP3xglS5WtRCQGmy15FO87EeezN3jauZNLM';

const key = (secret: string) => new TextEncoder().encode(secret);

describe('signing', () => {
  describe('happy', () => {
    it('the test vector body is 544 bytes and round-trips through JSON', () => {
      const body = Buffer.from(BODY, 'utf8');
      assert.equal(body.length, 544);
      assert.equal(JSON.stringify(JSON.parse(BODY)), BODY);
    });

    it('computes the test vector checksums', () => {
      assert.deepEqual(bodyChecksums(Buffer.from(BODY, 'utf8')), {
        sha1: 'ae2e5d400078dba420ab3a19e9061172adb6f436',
        sha256: '92461dd3c6fc1d5fb56384e2470d7f7719c7abc60e39e1e075595fd49d76b982',
      });
    });

    it('reproduces the test vector header value byte for byte', () => {
      assert.equal(signBody(Buffer.from(BODY, 'utf8'), SECRET, IAT, JTI), EXPECTED);
    });

    it('has the exact header and compact claims in the contract order', () => {
      const [header, claims] = signBody(Buffer.from(BODY, 'utf8'), SECRET, IAT, JTI).split('.');
      assert.equal(Buffer.from(header!, 'base64url').toString('utf8'), '{"alg":"HS256","typ":"JWT"}');
      assert.equal(
        Buffer.from(claims!, 'base64url').toString('utf8'),
        '{"checksum":"ae2e5d400078dba420ab3a19e9061172adb6f436","checksum_sha256":"92461dd3c6fc1d5fb56384e2470d7f7719c7abc60e39e1e075595fd49d76b982","iat":1748779201,"exp":1748782801,"jti":"cvq2b1r0l4l9s3f2a9j0"}',
      );
    });

    it('a produced token verifies with jose (HS256 only) and its checksum matches the raw body', async () => {
      const body = Buffer.from('{"event":{"eventId":"x","data":{"text":"Grüße ✓"}},"labels":{},"metadata":{}}', 'utf8');
      const iat = 1_760_000_000;
      const token = signBody(body, 'another secret', iat, 'abcdefghij0123456789');
      const { payload, protectedHeader } = await jwtVerify(token, key('another secret'), {
        algorithms: ['HS256'],
        currentDate: new Date((iat + 60) * 1000),
      });
      assert.deepEqual(protectedHeader, { alg: 'HS256', typ: 'JWT' });
      assert.equal(payload.checksum_sha256, createHash('sha256').update(body).digest('hex'));
      assert.equal(payload.checksum, createHash('sha1').update(body).digest('hex'));
      assert.equal(payload.exp, iat + 3600);
      assert.equal(payload.jti, 'abcdefghij0123456789');
      assert.equal(payload.aud, undefined);
    });

    it('the test vector verifies with jose at its own time', async () => {
      const { payload } = await jwtVerify(EXPECTED, key(SECRET), {
        algorithms: ['HS256'],
        currentDate: new Date((IAT + 1) * 1000),
      });
      assert.equal(payload.iat, IAT);
      assert.equal(decodeProtectedHeader(EXPECTED).alg, 'HS256');
    });

    it('truncates a fractional iat to whole seconds', () => {
      assert.equal(signBody(Buffer.from(BODY, 'utf8'), SECRET, IAT + 0.999, JTI), EXPECTED);
    });
  });

  describe('security', () => {
    it('a token made with another secret does not verify', async () => {
      const token = signBody(Buffer.from(BODY, 'utf8'), 'wrong secret', IAT, JTI);
      await assert.rejects(
        jwtVerify(token, key(SECRET), { algorithms: ['HS256'], currentDate: new Date(IAT * 1000) }),
        errors.JWSSignatureVerificationFailed,
      );
    });

    it('the token expires an hour after iat', async () => {
      await assert.rejects(
        jwtVerify(EXPECTED, key(SECRET), { algorithms: ['HS256'], currentDate: new Date((IAT + 3601) * 1000) }),
        errors.JWTExpired,
      );
    });

    it('a changed body no longer matches checksum_sha256', () => {
      const token = signBody(Buffer.from(BODY, 'utf8'), SECRET, IAT, JTI);
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
      const tampered = Buffer.from(BODY.replace('21.5', '99.9'), 'utf8');
      assert.notEqual(claims.checksum_sha256, createHash('sha256').update(tampered).digest('hex'));
    });
  });
});
