// xid-like ids (contract §1.7): 12 bytes = 4 bytes Unix seconds (big-endian) + 5 random bytes fixed per
// generator + a 3-byte counter, base32hex lower-case without padding (20 chars). Lexical order is creation
// order within one process; across processes, only to the second.
import type { Clock } from './clock.ts';
import type { Random } from './random.ts';

const ALPHABET = '0123456789abcdefghijklmnopqrstuv';
const CODES = Buffer.from(ALPHABET, 'latin1');
// The characters are written to a scratch buffer and read out as one string: appending them one by one made a
// string per character (~0.5 KB of garbage per id; an id is made for every event and every signature's jti).
let scratch = Buffer.allocUnsafe(32);

export function encodeBase32Hex(bytes: Uint8Array): string {
  const size = Math.ceil((bytes.length * 8) / 5);
  if (size > scratch.length) scratch = Buffer.allocUnsafe(size);
  let n = 0;
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < bytes.length; i++) {
    buffer = (buffer << 8) | bytes[i]!;
    bits += 8;
    while (bits >= 5) {
      scratch[n++] = CODES[(buffer >>> (bits - 5)) & 31]!;
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) scratch[n++] = CODES[(buffer << (5 - bits)) & 31]!;
  return scratch.toString('latin1', 0, n);
}

export const ID_PATTERN = /^[0-9a-v]{20}$/;
export const EMULATED_DEVICE_ID_PATTERN = /^emu[0-9a-v]{20}$/;

/**
 * The smallest id generated in or after Unix second `seconds`: ids compare (as strings) in the order of their
 * seconds prefix, so "generated before second S" is the range `id < firstIdOfSecond(S)`.
 */
export function firstIdOfSecond(seconds: number): string {
  const buf = Buffer.alloc(12);
  buf.writeUInt32BE(Math.max(0, Math.min(0xffffffff, Math.floor(seconds))) >>> 0, 0);
  return encodeBase32Hex(buf);
}

export interface IdGenerator {
  /** A new 20-character id. */
  next(): string;
}

export function createIdGenerator(clock: Clock, random: Random): IdGenerator {
  const machine = random.bytes(5);
  let counter = random.bytes(3).readUIntBE(0, 3);
  let lastSecond = 0;
  const buf = Buffer.alloc(12);
  return {
    next() {
      // Never let the seconds part go backwards (a fake clock may be set back); keeps ids ordered.
      const second = Math.max(lastSecond, Math.floor(clock.now() / 1000));
      lastSecond = second;
      counter = (counter + 1) & 0xffffff;
      buf.writeUInt32BE(second >>> 0, 0);
      machine.copy(buf, 4);
      buf.writeUIntBE(counter, 9, 3);
      return encodeBase32Hex(buf);
    },
  };
}
