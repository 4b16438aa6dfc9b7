// The SSRF guard (contract §6.10): which addresses a push may reach, and the URL check at connector write time.
// Every spelling of an address is normalised first (WHATWG URL host parsing, then ipaddr.js), so `2130706433`,
// `0177.0.0.1`, `0x7f.1`, `127.1` and `[::ffff:127.0.0.1]` are all seen as the loopback address they are.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { badRequest } from '../domain/errors.ts';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Longest accepted `httpConfig.url` (contract §3.9). */
export const MAX_URL_LENGTH = 2048;

/** Parsed `SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS`: ranges a push may reach although the guard would refuse them. */
export type AllowList = ReadonlyArray<[Address, number]>;

/** Parses CIDRs such as `127.0.0.0/8` or `::1/128`; throws on a malformed entry (config validation is the first line). */
export function parseAllowList(cidrs: readonly string[] = []): AllowList {
  return cidrs.map((cidr) => {
    try {
      return ipaddr.parseCIDR(cidr.trim());
    } catch {
      throw new Error(`SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: "${cidr}" is not a CIDR (e.g. 127.0.0.0/8)`);
    }
  });
}

/** An address in any spelling (dotted, decimal, octal, hex, short, bracketed IPv6), or null when it is no IP. */
export function parseAddress(input: string): Address | null {
  let text = input.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  if (isIP(text) === 0) {
    // WHATWG host parsing turns every IPv4 spelling into dotted decimal and compresses IPv6.
    try {
      const host = new URL(`https://${text.includes(':') ? `[${text}]` : text}/`).hostname;
      text = host.startsWith('[') ? host.slice(1, -1) : host;
    } catch {
      return null;
    }
    if (isIP(text) === 0) return null;
  }
  try {
    return ipaddr.parse(text);
  } catch {
    return null;
  }
}

/** The IPv4 address an IPv6 address carries when it is only a wrapper for one (mapped, translated, NAT64, 6to4, compatible). */
function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | null {
  const b = addr.toByteArray();
  switch (addr.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
    case 'rfc6052': // 64:ff9b::a.b.c.d
      return new ipaddr.IPv4(b.slice(12, 16));
    case '6to4': // 2002:aabb:ccdd::/48
      return new ipaddr.IPv4(b.slice(2, 6));
    default:
      // Deprecated IPv4-compatible ::a.b.c.d (first 96 bits zero; :: and ::1 have their own ranges).
      if (b.slice(0, 12).every((x) => x === 0) && addr.range() === 'unicast') return new ipaddr.IPv4(b.slice(12, 16));
      return null;
  }
}

/** Why the guard refuses this address (ipaddr.js range name), or null when it is public unicast. The allow-list is not consulted. */
export function refusalReason(addr: Address): string | null {
  if (addr.kind() === 'ipv4') {
    const range = addr.range();
    return range === 'unicast' ? null : range;
  }
  const v6 = addr as ipaddr.IPv6;
  const v4 = embeddedIPv4(v6);
  if (v4) {
    const inner = refusalReason(v4);
    return inner === null ? null : `${v6.range()} ${inner}`;
  }
  const range = v6.range();
  // Teredo tunnels hide their endpoint; everything but global unicast (documentation, discard, site-local…) is refused.
  return range === 'unicast' ? null : range;
}

function inRange(addr: Address, [base, bits]: [Address, number]): boolean {
  if (addr.kind() === base.kind()) return addr.match(base, bits);
  if (addr.kind() === 'ipv4') return (addr as ipaddr.IPv4).toIPv4MappedAddress().match(base, bits);
  return false;
}

function isAllowed(addr: Address, allow: AllowList): boolean {
  if (allow.length === 0) return false;
  const v4 = addr.kind() === 'ipv6' ? embeddedIPv4(addr as ipaddr.IPv6) : null;
  for (const range of allow) {
    if (inRange(addr, range) || (v4 !== null && inRange(v4, range))) return true;
  }
  return false;
}

/**
 * True when a push must not connect to `ip`: loopback, private (RFC 1918, fc00::/7), link-local (cloud metadata
 * included), CGNAT, unspecified, multicast, broadcast, reserved, and IPv4-mapped/embedded forms of them — unless
 * the address is inside `allow`. Input that is no IP address at all is refused too (fail closed).
 */
export function isRefusedAddress(ip: string, allow: AllowList = []): boolean {
  const addr = parseAddress(ip);
  if (addr === null) return true;
  return refusalReason(addr) !== null && !isAllowed(addr, allow);
}

/** The guard as one object, with the allow-list parsed once (the dispatcher asks it for every new connection). */
export interface AddressPolicy {
  /** null = may connect; otherwise the reason, for the attempt's message. */
  check(ip: string): string | null;
}

export function createAddressPolicy(allowPrivateEndpoints: readonly string[] | AllowList = []): AddressPolicy {
  const allow: AllowList =
    allowPrivateEndpoints.length > 0 && typeof allowPrivateEndpoints[0] === 'string'
      ? parseAllowList(allowPrivateEndpoints as readonly string[])
      : (allowPrivateEndpoints as AllowList);
  return {
    check(ip) {
      const addr = parseAddress(ip);
      if (addr === null) return `"${ip}" is not an IP address`;
      const reason = refusalReason(addr);
      if (reason === null || isAllowed(addr, allow)) return null;
      return `${addr.toString()} is a ${reason} address`;
    },
  };
}

/**
 * Validates `httpConfig.url` (or another URL field named `field`: a rule's webhook) at create/PATCH time (contract §3.9, §6.10): an absolute `https://` URL with a host, at
 * most 2048 characters, whose host is not a literal IP in a refused range (unless allow-listed). Host names are
 * resolved and checked only when pushing. Returns the parsed URL; throws badRequest (400).
 */
const URL_UNSAFE = /[\u0000-\u0020\u007f\\]/;

export function checkUrlForWrite(
  url: unknown,
  allowPrivateEndpoints: readonly string[] | AllowList = [],
  field = 'httpConfig.url',
): URL {
  if (typeof url !== 'string' || url === '') throw badRequest(`${field} is required: an absolute https:// URL`);
  if (url.length > MAX_URL_LENGTH) throw badRequest(`${field} must be at most ${MAX_URL_LENGTH} characters`);
  // URL parsing silently drops tabs and line breaks, trims spaces and control characters, and turns '\\' into '/':
  // the URL stored would not be the URL pushed to, so such a URL is refused rather than changed.
  if (URL_UNSAFE.test(url))
    throw badRequest(`${field} must not contain spaces, control characters (CR, LF, tab…) or backslashes`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest(`${field} must be an absolute https:// URL`);
  }
  if (parsed.protocol !== 'https:')
    throw badRequest(`${field} must use https:// (plain http and other schemes are refused)`);
  if (parsed.hostname === '') throw badRequest(`${field} must have a host`);
  const literal = parseLiteralHost(parsed.hostname);
  if (literal !== null) {
    const reason = createAddressPolicy(allowPrivateEndpoints).check(literal);
    if (reason !== null) {
      throw badRequest(
        `${field} points to a refused address: ${reason}; pushes may reach only public addresses (see SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS)`,
      );
    }
  }
  return parsed;
}

/** The IP of a WHATWG-parsed URL hostname (brackets removed), or null when the host is a name. */
export function parseLiteralHost(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? null : bare;
}
