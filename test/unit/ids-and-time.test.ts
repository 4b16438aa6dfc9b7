// Ids (xid-like, ordered) and wire timestamps/durations.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatDuration, formatTimestamp, tryParseDuration, tryParseTimestamp } from '../../src/domain/time.ts';
import { FakeClock } from '../../src/runtime/clock.ts';
import { ID_PATTERN, createIdGenerator, encodeBase32Hex } from '../../src/runtime/ids.ts';
import { SeededRandom } from '../../src/runtime/random.ts';

describe('ids', () => {
  it('are 20 base32hex characters in creation order', () => {
    const clock = new FakeClock();
    const ids = createIdGenerator(clock, new SeededRandom('x'));
    const seen: string[] = [];
    for (let i = 0; i < 1000; i++) {
      if (i % 100 === 0) clock.advance(1000);
      seen.push(ids.next());
    }
    for (const id of seen) assert.match(id, ID_PATTERN);
    assert.deepEqual([...seen].sort(), seen);
    assert.equal(new Set(seen).size, seen.length);
  });

  it('encode the seconds first (xid layout)', () => {
    const ids = createIdGenerator(new FakeClock(Date.UTC(2025, 5, 1)), new SeededRandom());
    const id = ids.next();
    const buf = Buffer.alloc(12);
    buf.writeUInt32BE(Date.UTC(2025, 5, 1) / 1000, 0);
    assert.equal(id.slice(0, 6), encodeBase32Hex(buf).slice(0, 6));
  });
});

describe('timestamps', () => {
  it('format with exactly 6 fractional digits', () => {
    assert.equal(formatTimestamp(Date.UTC(2025, 5, 1, 12) * 1000 + 250_000), '2025-06-01T12:00:00.250000Z');
    assert.equal(formatTimestamp(Date.UTC(2025, 5, 1, 12) * 1000 + 1), '2025-06-01T12:00:00.000001Z');
    // The date part of the previous call is reused only within its second.
    assert.equal(formatTimestamp(Date.UTC(2025, 5, 1, 12) * 1000 + 999_999), '2025-06-01T12:00:00.999999Z');
    assert.equal(formatTimestamp(Date.UTC(2025, 5, 1, 12) * 1000 + 1_000_000), '2025-06-01T12:00:01.000000Z');
    assert.equal(formatTimestamp(Date.UTC(2025, 5, 1, 12) * 1000 - 1), '2025-06-01T11:59:59.999999Z');
    assert.equal(formatTimestamp(0), '1970-01-01T00:00:00.000000Z');
    assert.equal(formatTimestamp(-1), '1969-12-31T23:59:59.999999Z');
  });

  it('parse RFC 3339 with offsets and 0-9 fractional digits, truncated to microseconds', () => {
    const base = Date.UTC(2025, 5, 1, 12) * 1000;
    assert.equal(tryParseTimestamp('2025-06-01T12:00:00Z'), base);
    assert.equal(tryParseTimestamp('2025-06-01T14:00:00.5+02:00'), base + 500_000);
    assert.equal(tryParseTimestamp('2025-06-01T12:00:00.123456789Z'), base + 123_456);
    for (const bad of ['2025-06-01', '2025-13-01T00:00:00Z', '2025-02-30T00:00:00Z', 'yesterday', 12, null]) {
      assert.equal(tryParseTimestamp(bad), null, String(bad));
    }
  });

  it('durations use the protobuf form', () => {
    assert.equal(formatDuration(0.4111), '0.411s');
    assert.equal(formatDuration(0), '0.000s');
    assert.equal(tryParseDuration('10s'), 10);
    assert.equal(tryParseDuration('1.5s'), 1.5);
    assert.equal(tryParseDuration('7'), 7);
    assert.equal(tryParseDuration('soon'), null);
  });
});
