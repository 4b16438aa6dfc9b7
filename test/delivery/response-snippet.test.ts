// The start of an answer kept for the delivery log (extensions §X1, Attempt.responseBody), alone: at most 1,024
// bytes, copied into a buffer of its own, decoded as UTF-8 with U+FFFD for what does not decode.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeResponseBody,
  keepResponseSnippet,
  RESPONSE_SNIPPET_BYTES,
} from '../../src/delivery/response-snippet.ts';

/** Feeds `chunks` as the dispatcher does (only while under the limit), returning the snippet. */
function keep(chunks: Buffer[]): Buffer | null {
  let kept: Buffer | null = null;
  let received = 0;
  for (const chunk of chunks) {
    if (received < RESPONSE_SNIPPET_BYTES) kept = keepResponseSnippet(kept, chunk);
    received += chunk.length;
  }
  return kept;
}

describe('response snippet', () => {
  describe('happy', () => {
    it('keeps a short body whole, in one chunk or several', () => {
      assert.equal(RESPONSE_SNIPPET_BYTES, 1024);
      assert.equal(keep([Buffer.from('{"ok":true}')])!.toString(), '{"ok":true}');
      assert.equal(keep([Buffer.from('{"ok"'), Buffer.from(':'), Buffer.from('true}')])!.toString(), '{"ok":true}');
    });

    it('keeps nothing of an empty body', () => {
      assert.equal(keep([]), null);
      assert.equal(keep([Buffer.alloc(0)]), null);
    });

    it('cuts a 5 KiB body at 1,024 bytes, however it arrives', () => {
      const body = Buffer.from(Array.from({ length: 5 * 1024 }, (_, i) => 97 + (i % 26)));
      for (const size of [5 * 1024, 1024, 1000, 100, 7]) {
        const chunks: Buffer[] = [];
        for (let at = 0; at < body.length; at += size) chunks.push(body.subarray(at, at + size));
        const kept = keep(chunks)!;
        assert.equal(kept.length, 1024, `chunks of ${size}`);
        assert.ok(kept.equals(body.subarray(0, 1024)), `chunks of ${size}`);
      }
    });

    it('copies the bytes into a buffer of exactly their length (not a view of the chunk or of a pool)', () => {
      const socketBuffer = Buffer.alloc(64 * 1024, 0x41);
      const chunk = socketBuffer.subarray(100, 110);
      const kept = keepResponseSnippet(null, chunk)!;
      assert.equal(kept.buffer.byteLength, 10);
      assert.notEqual(kept.buffer, socketBuffer.buffer);
      socketBuffer.fill(0x42);
      assert.equal(kept.toString(), 'A'.repeat(10), 'later socket data does not change it');
      const full = keepResponseSnippet(null, socketBuffer)!;
      assert.equal(full.buffer.byteLength, 1024);
      assert.equal(keepResponseSnippet(full, Buffer.from('more')), full, 'a full snippet takes no more');
    });

    it('decodes UTF-8 as it is', () => {
      assert.equal(decodeResponseBody(Buffer.from('Grüße ✓ 🌡', 'utf8')), 'Grüße ✓ 🌡');
      assert.equal(decodeResponseBody(undefined), '');
      assert.equal(decodeResponseBody(new Uint8Array(0)), '');
      // A plain Uint8Array (what a structured clone delivers) decodes the same, offset and all.
      const bytes = new Uint8Array([0, 0x68, 0x69, 0]).subarray(1, 3);
      assert.equal(decodeResponseBody(bytes), 'hi');
    });
  });

  describe('errors', () => {
    it('a multi-byte character cut at byte 1,024 becomes U+FFFD', () => {
      // '€' is E2 82 AC: after 1,023 ASCII bytes only its first byte is kept; after 1,022, its first two.
      for (const pad of [1023, 1022]) {
        const body = Buffer.from(`${'a'.repeat(pad)}€ and more`, 'utf8');
        const kept = keep([body])!;
        assert.equal(kept.length, 1024);
        assert.equal(decodeResponseBody(kept), `${'a'.repeat(pad)}\uFFFD`, `${1024 - pad} bytes of the character`);
      }
      // A four-byte character (🌡 is F0 9F 8C A1) cut after three bytes: one replacement.
      const thermometer = Buffer.from(`${'a'.repeat(1021)}🌡`, 'utf8');
      assert.equal(decodeResponseBody(keep([thermometer])!), `${'a'.repeat(1021)}\uFFFD`);
    });

    it('replaces bytes that are not UTF-8 with U+FFFD', () => {
      assert.equal(decodeResponseBody(Buffer.from([0x6f, 0x6b, 0xff, 0x21])), 'ok\uFFFD!');
      assert.equal(decodeResponseBody(Buffer.from([0xc3, 0x28])), '\uFFFD(');
    });

    it('decodes at most 1,024 bytes even when handed more', () => {
      assert.equal(decodeResponseBody(Buffer.alloc(5000, 0x61)).length, 1024);
    });
  });
});
