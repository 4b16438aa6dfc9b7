// The client a login is counted against: its IP address, or for IPv6 its /64 network, since one host is commonly
// given a whole /64 and can send from any of its 2^64 addresses (counted per address, each would have limits of its
// own). An IPv4 address mapped into IPv6 (::ffff:192.0.2.1, a dual-stack socket's) is the IPv4 address.
import { isIPv6 } from 'node:net';

export function clientKey(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [left = '', right] = address.split('%')[0]!.split('::');
  const groups = (part: string | undefined) =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : [];
  const head = groups(left);
  const tail = groups(right);
  const all =
    right === undefined ? head : [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  return `${all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
