// Delivery outcomes are data: status codes, errors and Retry-After turned into AttemptOutcome values, each with the
// delivery log's class (extensions §X1).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  classifyError,
  classifyResponse,
  outcomeClassOf,
  parseRetryAfter,
  RefusedAddressError,
} from '../../src/delivery/classify.ts';
import type { AttemptOutcomeClass, AttemptReason } from '../../src/delivery/types.ts';

const NOW = Date.UTC(2025, 5, 1, 12, 0, 0);
const withCode = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('classify', () => {
  describe('happy', () => {
    it('every 2xx is an ack', () => {
      for (const status of [200, 201, 202, 204, 299]) {
        assert.deepEqual(classifyResponse({ status, responseTimeMs: 12, nowMs: NOW }), {
          ok: true,
          reason: 'ack',
          outcome: 'SUCCESS',
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
        assert.equal(outcome.outcome, 'HTTP_ERROR');
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

  describe('delivery log class (§X1)', () => {
    const base = { timedOut: false, timeoutMs: 10_000, responseTimeMs: 7 };
    const dnsError = (code: string, syscall: string) =>
      Object.assign(new Error(`${syscall} ${code} nowhere.test`), { code, syscall, hostname: 'nowhere.test' });
    // Each error as the dispatcher sees it → [reason (unchanged), class].
    const table: Array<[string, unknown, AttemptReason, AttemptOutcomeClass]> = [
      [
        'ECONNREFUSED',
        withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:9'),
        'connection',
        'CONNECTION_REFUSED',
      ],
      ['ECONNRESET', withCode('ECONNRESET', 'read ECONNRESET'), 'connection', 'CONNECTION_RESET'],
      ['UND_ERR_SOCKET', withCode('UND_ERR_SOCKET', 'other side closed'), 'connection', 'CONNECTION_RESET'],
      ['EPIPE', withCode('EPIPE'), 'connection', 'CONNECTION_RESET'],
      ['ECONNABORTED', withCode('ECONNABORTED'), 'connection', 'CONNECTION_RESET'],
      ['ENOTFOUND', withCode('ENOTFOUND', 'getaddrinfo ENOTFOUND nowhere.test'), 'connection', 'DNS_ERROR'],
      ['EAI_AGAIN (getaddrinfo)', dnsError('EAI_AGAIN', 'getaddrinfo'), 'connection', 'DNS_ERROR'],
      ['EAI_FAIL', withCode('EAI_FAIL'), 'connection', 'DNS_ERROR'],
      ['ENODATA', withCode('ENODATA'), 'connection', 'DNS_ERROR'],
      ['ESERVFAIL', withCode('ESERVFAIL'), 'connection', 'DNS_ERROR'],
      ["the resolver's ECONNREFUSED (no DNS server)", dnsError('ECONNREFUSED', 'queryA'), 'connection', 'DNS_ERROR'],
      ["the resolver's ETIMEOUT", dnsError('ETIMEOUT', 'queryAaaa'), 'connection', 'DNS_ERROR'],
      ['EHOSTUNREACH', withCode('EHOSTUNREACH'), 'connection', 'OTHER'],
      ['ENETUNREACH', withCode('ENETUNREACH'), 'connection', 'OTHER'],
      ['UND_ERR_CLOSED', withCode('UND_ERR_CLOSED', 'The client is destroyed'), 'connection', 'OTHER'],
      ['no code', new Error('something odd'), 'connection', 'OTHER'],
      ['not an error', 'weird', 'connection', 'OTHER'],
      ['UND_ERR_HEADERS_TIMEOUT', withCode('UND_ERR_HEADERS_TIMEOUT'), 'timeout', 'TIMEOUT'],
      ['UND_ERR_CONNECT_TIMEOUT', withCode('UND_ERR_CONNECT_TIMEOUT'), 'timeout', 'TIMEOUT'],
      ['ETIMEDOUT', withCode('ETIMEDOUT'), 'timeout', 'TIMEOUT'],
      ['DEPTH_ZERO_SELF_SIGNED_CERT', withCode('DEPTH_ZERO_SELF_SIGNED_CERT'), 'tls', 'TLS_ERROR'],
      ['SELF_SIGNED_CERT_IN_CHAIN', withCode('SELF_SIGNED_CERT_IN_CHAIN'), 'tls', 'TLS_ERROR'],
      ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', withCode('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), 'tls', 'TLS_ERROR'],
      ['CERT_HAS_EXPIRED', withCode('CERT_HAS_EXPIRED'), 'tls', 'TLS_ERROR'],
      ['ERR_TLS_CERT_ALTNAME_INVALID', withCode('ERR_TLS_CERT_ALTNAME_INVALID'), 'tls', 'TLS_ERROR'],
      ['ERR_SSL_WRONG_VERSION_NUMBER', withCode('ERR_SSL_WRONG_VERSION_NUMBER'), 'tls', 'TLS_ERROR'],
      ['EPROTO', withCode('EPROTO'), 'tls', 'TLS_ERROR'],
      [
        'RefusedAddressError',
        new RefusedAddressError('127.0.0.1 is a loopback address'),
        'refused_address',
        'BLOCKED_ADDRESS',
      ],
    ];

    it('maps each error to its class; the reason stays as it was', () => {
      for (const [name, err, reason, cls] of table) {
        const outcome = classifyError(err, base);
        assert.deepEqual([outcome.reason, outcome.outcome], [reason, cls], name);
        assert.equal(outcome.ok, false, name);
      }
    });

    it("the dispatcher's own deadline is TIMEOUT, whatever the error that ended the attempt", () => {
      for (const err of [new Error('deadline'), withCode('ECONNRESET'), withCode('UND_ERR_SOCKET')]) {
        const outcome = classifyError(err, { ...base, timedOut: true });
        assert.deepEqual([outcome.reason, outcome.outcome, outcome.responseTimeMs], ['timeout', 'TIMEOUT', 10_000]);
      }
    });

    it('looks through undici wrappers to the socket error', () => {
      const socket = (cause: unknown) =>
        Object.assign(withCode('UND_ERR_SOCKET', 'other side closed'), { cause }) as Error;
      assert.equal(classifyError(socket(withCode('ECONNRESET')), base).outcome, 'CONNECTION_RESET');
      assert.equal(classifyError(socket(withCode('ECONNREFUSED')), base).outcome, 'CONNECTION_REFUSED');
      assert.equal(classifyError(socket(withCode('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE')), base).outcome, 'TLS_ERROR');
      assert.equal(classifyError(socket(dnsError('ENOTFOUND', 'getaddrinfo')), base).outcome, 'DNS_ERROR');
      assert.equal(
        classifyError(socket(new RefusedAddressError('10.0.0.1 is private')), base).outcome,
        'BLOCKED_ADDRESS',
      );
    });

    it('responses: 2xx is SUCCESS, every other final status HTTP_ERROR', () => {
      for (const status of [200, 204, 299])
        assert.equal(classifyResponse({ status, responseTimeMs: 1, nowMs: NOW }).outcome, 'SUCCESS');
      for (const status of [301, 304, 400, 404, 429, 500, 503])
        assert.equal(classifyResponse({ status, responseTimeMs: 1, nowMs: NOW }).outcome, 'HTTP_ERROR');
    });

    it('the class never contradicts the reason', () => {
      const allowed: Record<AttemptReason, AttemptOutcomeClass[]> = {
        ack: ['SUCCESS'],
        http_status: ['HTTP_ERROR'],
        timeout: ['TIMEOUT'],
        tls: ['TLS_ERROR'],
        refused_address: ['BLOCKED_ADDRESS'],
        connection: ['CONNECTION_REFUSED', 'CONNECTION_RESET', 'DNS_ERROR', 'OTHER'],
      };
      const outcomes = [
        ...table.map(([, err]) => classifyError(err, base)),
        ...[200, 302, 404, 500].map((status) => classifyResponse({ status, responseTimeMs: 1, nowMs: NOW })),
      ];
      for (const o of outcomes) assert.ok(allowed[o.reason].includes(o.outcome!), `${o.reason} → ${o.outcome}`);
    });

    it('an outcome made without a class reads as its reason says (outcomeClassOf)', () => {
      const made = (reason: AttemptReason) => ({ ok: reason === 'ack', reason, responseTimeMs: 0, message: '' });
      assert.equal(outcomeClassOf(made('ack')), 'SUCCESS');
      assert.equal(outcomeClassOf(made('http_status')), 'HTTP_ERROR');
      assert.equal(outcomeClassOf(made('timeout')), 'TIMEOUT');
      assert.equal(outcomeClassOf(made('tls')), 'TLS_ERROR');
      assert.equal(outcomeClassOf(made('refused_address')), 'BLOCKED_ADDRESS');
      assert.equal(outcomeClassOf(made('connection')), 'OTHER');
      assert.equal(outcomeClassOf({ ...made('connection'), outcome: 'DNS_ERROR' }), 'DNS_ERROR');
    });

    it("leaves the message as it was: the code and the error's own words", () => {
      const outcome = classifyError(withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:9'), base);
      assert.equal(outcome.message, 'connection: ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9');
    });
  });
});
