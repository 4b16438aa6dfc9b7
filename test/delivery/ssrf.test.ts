// The SSRF guard: every spelling of a refused address is refused; the allow-list opens exactly its ranges.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/domain/errors.ts';
import {
  checkUrlForWrite,
  createAddressPolicy,
  isRefusedAddress,
  parseAddress,
  parseAllowList,
} from '../../src/delivery/ssrf.ts';

const REFUSED = [
  // loopback, in every spelling
  '127.0.0.1',
  '127.255.255.254',
  '2130706433',
  '0177.0.0.1',
  '0x7f.1',
  '0x7f.0.0.1',
  '0x7f000001',
  '127.1',
  '127.0.1',
  '::1',
  '[::1]',
  '0:0:0:0:0:0:0:1',
  // RFC 1918 and unique local
  '10.0.0.1',
  '10.255.255.255',
  '172.16.0.1',
  '172.31.255.255',
  '192.168.1.1',
  '0xc0.0xa8.1.1',
  '3232235777',
  'fc00::1',
  'fd12:3456::1',
  // link-local, cloud metadata included
  '169.254.169.254',
  '169.254.0.1',
  'fe80::1',
  'febf::1',
  // CGNAT
  '100.64.0.1',
  '100.127.255.255',
  // unspecified, multicast, broadcast, reserved
  '0.0.0.0',
  '0',
  '0.1.2.3',
  '::',
  '224.0.0.1',
  '239.255.255.250',
  'ff02::1',
  'ff0e::1',
  '255.255.255.255',
  '240.0.0.1',
  // IPv4-mapped and other IPv6 wrappers of refused IPv4 addresses
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '[::ffff:127.0.0.1]',
  '0:0:0:0:0:ffff:7f00:1',
  '::ffff:10.0.0.1',
  '::ffff:169.254.169.254',
  '::ffff:192.168.0.1',
  '::ffff:100.64.0.1',
  '::ffff:0.0.0.0',
  '::ffff:255.255.255.255',
  '::ffff:0:127.0.0.1',
  '64:ff9b::127.0.0.1',
  '64:ff9b::a00:1',
  '2002:7f00:1::',
  '2002:a9fe:a9fe::1',
  '::127.0.0.1',
  '::10.0.0.1',
  // not an address at all: fail closed
  'localhost',
  'example.org',
  '',
  'not an ip',
];

const PUBLIC = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.215.14',
  '100.63.255.255',
  '100.128.0.0',
  '172.32.0.1',
  '172.15.255.255',
  '192.169.0.1',
  '2606:4700:4700::1111',
  '2a00:1450:4001::200e',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
  '2002:808:808::1',
];

describe('ssrf guard', () => {
  describe('security', () => {
    for (const ip of REFUSED) {
      it(`refuses ${JSON.stringify(ip)}`, () => assert.equal(isRefusedAddress(ip), true));
    }

    it('normalises spellings through WHATWG URL parsing', () => {
      for (const spelling of ['2130706433', '0177.0.0.1', '0x7f.1', '127.1', '127.0.0.1']) {
        assert.equal(parseAddress(spelling)?.toString(), '127.0.0.1', spelling);
      }
      assert.equal(parseAddress('[::ffff:127.0.0.1]')?.toString(), '::ffff:7f00:1');
    });

    it('the allow-list opens only its ranges', () => {
      const allow = parseAllowList(['127.0.0.0/8', '::1/128']);
      for (const ip of ['127.0.0.1', '127.9.9.9', '2130706433', '0x7f.1', '::1', '::ffff:127.0.0.1']) {
        assert.equal(isRefusedAddress(ip, allow), false, ip);
      }
      for (const ip of ['10.0.0.1', '169.254.169.254', '192.168.0.1', 'fe80::1', '::ffff:10.0.0.1', 'localhost']) {
        assert.equal(isRefusedAddress(ip, allow), true, ip);
      }
    });

    it('a policy names the reason', () => {
      const policy = createAddressPolicy([]);
      assert.match(policy.check('169.254.169.254')!, /linkLocal/);
      assert.match(policy.check('::ffff:127.0.0.1')!, /loopback/);
      assert.equal(createAddressPolicy(['10.0.0.0/8']).check('10.1.2.3'), null);
    });

    it('checkUrlForWrite refuses a literal IP in a refused range in any spelling', () => {
      for (const url of [
        'https://127.0.0.1/',
        'https://2130706433/hook',
        'https://0177.0.0.1/',
        'https://0x7f.1:8443/x',
        'https://127.1/',
        'https://[::1]/',
        'https://[::ffff:127.0.0.1]/',
        'https://[::ffff:7f00:1]/',
        'https://169.254.169.254/latest/meta-data',
        'https://10.0.0.1/',
        'https://192.168.0.10/',
        'https://100.64.0.1/',
        'https://0.0.0.0/',
        'https://[fe80::1]/',
        'https://[fd00::1]/',
        'https://255.255.255.255/',
        'https://224.0.0.1/',
        'https://127.0.0.1./',
      ]) {
        assert.throws(
          () => checkUrlForWrite(url),
          (err: ApiError) => err.status === 400 && /refused address/.test(err.message),
          url,
        );
      }
    });
  });

  describe('happy', () => {
    for (const ip of PUBLIC) {
      it(`lets ${ip} through`, () => assert.equal(isRefusedAddress(ip), false));
    }

    it('checkUrlForWrite accepts https URLs with a public IP or any host name', () => {
      for (const url of [
        'https://example.org/hook',
        'https://8.8.8.8/',
        'https://[2606:4700:4700::1111]:8443/x?y=1',
        'https://localhost/',
        'https://user:pw@example.org/',
      ]) {
        assert.equal(checkUrlForWrite(url).protocol, 'https:', url);
      }
    });

    it('checkUrlForWrite accepts allow-listed literal addresses', () => {
      const allow = ['127.0.0.0/8', '::1/128'];
      assert.equal(checkUrlForWrite('https://127.0.0.1:9443/hook', allow).port, '9443');
      assert.equal(checkUrlForWrite('https://[::1]/', allow).hostname, '[::1]');
      assert.equal(checkUrlForWrite('https://2130706433/', parseAllowList(allow)).hostname, '127.0.0.1');
    });
  });

  describe('errors', () => {
    const bad = (url: unknown, pattern: RegExp) =>
      assert.throws(
        () => checkUrlForWrite(url),
        (err: ApiError) => err.status === 400 && pattern.test(err.message) && /httpConfig\.url/.test(err.message),
      );

    it('requires an absolute https URL with a host', () => {
      bad('http://example.org/', /https/);
      bad('ftp://example.org/', /https/);
      bad('example.org/hook', /absolute/);
      bad('/hook', /absolute/);
      bad('https://', /absolute/);
      bad('', /required/);
      bad(undefined, /required/);
      bad(42, /required/);
    });

    it('limits the URL to 2048 characters', () => {
      const base = 'https://example.org/';
      assert.equal(checkUrlForWrite(base + 'a'.repeat(2048 - base.length)).hostname, 'example.org');
      bad(base + 'a'.repeat(2049 - base.length), /2048/);
    });

    it('rejects a malformed allow-list entry', () => {
      assert.throws(() => parseAllowList(['127.0.0.1']), /not a CIDR/);
    });
  });
});
