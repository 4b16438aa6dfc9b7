// Delivery outcomes are data: status codes, errors and Retry-After turned into AttemptOutcome values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyError, classifyResponse, parseRetryAfter, RefusedAddressError } from '../../src/delivery/classify.ts';

const NOW = Date.UTC(2025, 5, 1, 12, 0, 0);
const withCode = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('classify', () => {
  describe('happy', () => {
    it('every 2xx is an ack', () => {
      for (const status of [200, 201, 202, 204, 299]) {
        assert.deepEqual(classifyResponse({ status, responseTimeMs: 12, nowMs: NOW }), {
          ok: true,
          reason: 'ack',
          status,
          responseTimeMs: 12,
          message: `HTTP ${status}`,
        });
      }
    });

    it('parses Retry-After as seconds or an HTTP date', () => {
      assert.equal(parseRetryAfter('120', NOW), 120);
      assert.equal(parseRetryAfter(' 0 ', NOW), 0);
      assert.equal(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW), 90);
      assert.equal(parseRetryAfter(new Date(NOW + 90_500).toUTCString(), NOW), 90);
      assert.equal(parseRetryAfter(new Date(NOW - 90_000).toUTCString(), NOW), 0);
      assert.equal(parseRetryAfter('99999', NOW), 3600);
      assert.equal(parseRetryAfter(['30', '60'], NOW), 30);
      for (const bad of [undefined, '', 'soon', '-5', '1.5', '1e3'])
        assert.equal(parseRetryAfter(bad, NOW), undefined, String(bad));
    });
  });

  describe('errors', () => {
    it('3xx, 4xx and 5xx fail with their status', () => {
      for (const status of [100, 301, 302, 304, 307, 308, 400, 401, 404, 410, 500, 502, 504]) {
        const outcome = classifyResponse({ status, responseTimeMs: 5, nowMs: NOW });
        assert.equal(outcome.ok, false);
        assert.equal(outcome.reason, 'http_status');
        assert.equal(outcome.status, status);
        assert.equal(outcome.retryAfterSeconds, undefined);
      }
      assert.match(
        classifyResponse({ status: 302, responseTimeMs: 5, nowMs: NOW }).message,
        /redirects are not followed/,
      );
    });

    it('Retry-After counts only on 429 and 503', () => {
      assert.equal(
        classifyResponse({ status: 429, retryAfter: '30', responseTimeMs: 1, nowMs: NOW }).retryAfterSeconds,
        30,
      );
      assert.equal(
        classifyResponse({
          status: 503,
          retryAfter: new Date(NOW + 60_000).toUTCString(),
          responseTimeMs: 1,
          nowMs: NOW,
        }).retryAfterSeconds,
        60,
      );
      assert.equal(
        classifyResponse({ status: 500, retryAfter: '30', responseTimeMs: 1, nowMs: NOW }).retryAfterSeconds,
        undefined,
      );
      assert.equal('retryAfterSeconds' in classifyResponse({ status: 429, responseTimeMs: 1, nowMs: NOW }), false);
    });

    it('errors map to timeout, tls, refused_address or connection', () => {
      const base = { timedOut: false, timeoutMs: 10_000, responseTimeMs: 7 };
      assert.equal(classifyError(new Error('aborted'), { ...base, timedOut: true }).reason, 'timeout');
      assert.equal(classifyError(new Error('aborted'), { ...base, timedOut: true }).responseTimeMs, 10_000);
      assert.equal(classifyError(withCode('UND_ERR_HEADERS_TIMEOUT'), base).reason, 'timeout');
      assert.equal(classifyError(withCode('UND_ERR_CONNECT_TIMEOUT'), base).reason, 'timeout');
      for (const code of [
        'DEPTH_ZERO_SELF_SIGNED_CERT',
        'SELF_SIGNED_CERT_IN_CHAIN',
        'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
        'CERT_HAS_EXPIRED',
        'ERR_TLS_CERT_ALTNAME_INVALID',
        'ERR_SSL_WRONG_VERSION_NUMBER',
        'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
        'EPROTO',
      ]) {
        assert.equal(classifyError(withCode(code), base).reason, 'tls', code);
      }
      for (const code of [
        'ECONNREFUSED',
        'ECONNRESET',
        'ENOTFOUND',
        'EAI_AGAIN',
        'EPIPE',
        'UND_ERR_SOCKET',
        'UND_ERR_CLOSED',
      ]) {
        const outcome = classifyError(withCode(code), base);
        assert.equal(outcome.reason, 'connection', code);
        assert.equal(outcome.responseTimeMs, 7);
      }
      assert.equal(
        classifyError(new RefusedAddressError('127.0.0.1 is a loopback address'), base).reason,
        'refused_address',
      );
      assert.equal(classifyError('weird', base).reason, 'connection');
    });

    it('looks through undici wrappers to the socket error', () => {
      const wrapped = Object.assign(withCode('UND_ERR_SOCKET', 'other side closed'), {
        cause: withCode('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE'),
      });
      assert.equal(classifyError(wrapped, { timedOut: false, timeoutMs: 10_000, responseTimeMs: 1 }).reason, 'tls');
    });
  });
});
