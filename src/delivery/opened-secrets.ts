// Signature secrets opened for pushing, by sealed value: an AES-GCM open per attempt showed in the profile. A
// changed secret has a new sealed value, so entries never go stale; the map is bounded.
import type { SecretBox } from '../auth/secret-box.ts';

const MAX_ENTRIES = 10_000;

export function createOpenedSecrets(secretBox: Pick<SecretBox, 'open'>): (sealed: string) => string {
  const opened = new Map<string, string>();
  return (sealed) => {
    if (sealed === '') return '';
    let plain = opened.get(sealed);
    if (plain === undefined) {
      plain = secretBox.open(sealed);
      if (opened.size >= MAX_ENTRIES) opened.clear();
      opened.set(sealed, plain);
    }
    return plain;
  };
}
