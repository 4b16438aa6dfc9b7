// Randomness is injected: ids, secrets, salts and JWT ids all come from a Random.
import { randomBytes, createHash } from 'node:crypto';

export interface Random {
  bytes(n: number): Buffer;
}

export const systemRandom: Random = {
  bytes: (n) => randomBytes(n),
};

/** Deterministic bytes from a seed (SHA-256 in counter mode); for tests only. */
export class SeededRandom implements Random {
  private counter = 0;
  constructor(private readonly seed: string = 'seed') {}
  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    let off = 0;
    while (off < n) {
      const block = createHash('sha256')
        .update(`${this.seed}:${this.counter++}`)
        .digest();
      off += block.copy(out, off, 0, Math.min(block.length, n - off));
    }
    return out;
  }
}

/** 32 lower-case hex characters (128 bits): the key secret format of the contract (§1.7). */
export function newSecret(random: Random): string {
  return random.bytes(16).toString('hex');
}

/** URL-safe random token, e.g. for invitations. */
export function newToken(random: Random, bytes = 24): string {
  return random.bytes(bytes).toString('base64url');
}
