// The start of a push's answer, kept for the delivery log (extensions §X1, Attempt.responseBody): the first 1,024
// bytes of the body the dispatcher reads anyway (up to 64 KiB, then dropped), kept raw and decoded only where it is
// shown. undici's chunks are views of the socket's read buffer, so the bytes are copied out, each copy a buffer of
// its own of exactly its length: a view crosses the dispatcher thread's boundary with the whole buffer behind it.

/** How much of an answer's body an attempt keeps (§X1: "at most the first 1,024 bytes"). */
export const RESPONSE_SNIPPET_BYTES = 1024;

/**
 * `kept` (the snippet so far; null before the first byte) followed by the start of `chunk`, at most
 * RESPONSE_SNIPPET_BYTES in all; `kept` itself once it is full or when the chunk is empty. The common answers cost one
 * copy of at most 1 KiB (a body that arrives in one chunk, or a longer one whose first chunk fills the snippet); a
 * short body in several chunks is copied again per chunk, bounded by the 1 KiB.
 */
export function keepResponseSnippet(kept: Buffer | null, chunk: Buffer): Buffer | null {
  const have = kept === null ? 0 : kept.length;
  const take = Math.min(chunk.length, RESPONSE_SNIPPET_BYTES - have);
  if (take <= 0) return kept;
  // Not from the shared pool: the snippet's buffer holds its bytes alone.
  const next = Buffer.allocUnsafeSlow(have + take);
  if (kept !== null) kept.copy(next, 0);
  chunk.copy(next, have, 0, take);
  return next;
}

/**
 * A snippet as the delivery log shows it (§X1): its bytes, cut at 1,024, decoded as UTF-8, every invalid sequence
 * (a character cut at the 1,024th byte included) replaced by U+FFFD. '' when there is none.
 */
export function decodeResponseBody(bytes: Uint8Array | undefined): string {
  if (bytes === undefined || bytes.byteLength === 0) return '';
  return Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, RESPONSE_SNIPPET_BYTES)).toString(
    'utf8',
  );
}
