// Authenticated encryption of key secrets at rest (AES-256-GCM). HS256 assertion checks need the plain
// secret, so it cannot be stored as a one-way hash.
import { createCipheriv, createDecipheriv, createHmac, timingSafeEqual } from 'node:crypto';
import type { Random } from '../runtime/random.ts';

export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

export function createSecretBox(masterKey: Buffer, random: Random): SecretBox {
  // Derive a dedicated key so the master key is never used directly for two purposes.
  const key = createHmac('sha256', masterKey).update('sensorcloud/secret-box/v1').digest();
  return {
    seal(plain) {
      const iv = random.bytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `v1.${iv.toString('base64url')}.${data.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
    },
    open(sealed) {
      const [v, iv, data, tag] = sealed.split('.');
      if (v !== 'v1' || !iv || data === undefined || !tag) throw new Error('unsupported sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}

/** Constant-time string comparison (lengths are compared without leaking content). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}
