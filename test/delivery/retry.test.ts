// The retry schedule of contract §6.5 and the status machine of §6.6, as pure functions.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AUTO_DISABLE_AFTER_MICROS,
  afterFailure,
  afterSuccess,
  applyStatusWrite,
  initialState,
} from '../../src/domain/connector-status.ts';
import { ApiError } from '../../src/domain/errors.ts';
import { isExpired, nextAttemptTime, RETENTION_MS, retryIntervalSeconds } from '../../src/delivery/retry.ts';

describe('happy', () => {
  it('follows the interval table: 8, 16, 32 … 2048, then 3600', () => {
    const expected = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3600, 3600, 3600];
    assert.deepEqual(
      expected.map((_, i) => retryIntervalSeconds(i + 1, 0)),
      expected,
    );
    assert.equal(retryIntervalSeconds(1000, 0), 3600);
  });

  it('gives attempt start times 8, 24, 56 … 40088 and at most 20 attempts within 12 h', () => {
    const starts = [0];
    for (let n = 1; ; n++) {
      const next = nextAttemptTime(n, starts[n - 1]! * 1000, 0, 0);
      if (next === null) break;
      starts.push(next / 1000);
      assert.ok(n < 100, 'bounded');
    }
    assert.deepEqual(starts.slice(1, 11), [8, 24, 56, 120, 248, 504, 1016, 2040, 4088, 7688]);
    assert.equal(starts.length, 20);
    assert.equal(starts[19], 40088);
  });

  it('never waits less than 4x the response time', () => {
    assert.equal(retryIntervalSeconds(1, 3000), 12);
    assert.equal(retryIntervalSeconds(1, 10_000), 40);
    assert.equal(retryIntervalSeconds(3, 10_000), 40);
    assert.equal(retryIntervalSeconds(4, 10_000), 64);
  });

  it('lets Retry-After only lengthen the interval, capped at 3600 s', () => {
    assert.equal(retryIntervalSeconds(1, 0, 2), 8);
    assert.equal(retryIntervalSeconds(1, 0, 100), 100);
    assert.equal(retryIntervalSeconds(1, 0, 99_999), 3600);
    assert.equal(retryIntervalSeconds(10, 0, 99_999), 3600);
  });

  it('drops 12 h after enqueue, not after the event time', () => {
    assert.equal(isExpired(0, RETENTION_MS - 1), false);
    assert.equal(isExpired(0, RETENTION_MS), true);
    assert.equal(nextAttemptTime(1, RETENTION_MS - 8000, 0, 0), null);
    assert.equal(nextAttemptTime(1, RETENTION_MS - 8001, 0, 0), RETENTION_MS - 1);
  });
});

describe('happy: status machine', () => {
  const t0 = 1_000_000;
  it('starts ACTIVE unless USER_DISABLED is asked for', () => {
    assert.deepEqual(initialState(undefined), { status: 'ACTIVE', failingSince: null });
    assert.deepEqual(initialState('USER_DISABLED'), { status: 'USER_DISABLED', failingSince: null });
  });

  it('sets failingSince on the first failure and disables after 5 days of failures', () => {
    const a = afterFailure({ status: 'ACTIVE', failingSince: null }, t0);
    assert.equal(a.failingSince, t0);
    const b = afterFailure(a, t0 + AUTO_DISABLE_AFTER_MICROS - 1);
    assert.equal(b.status, 'ACTIVE');
    const c = afterFailure(b, t0 + AUTO_DISABLE_AFTER_MICROS);
    assert.deepEqual([c.status, c.dropQueue, c.changed], ['SYSTEM_DISABLED', true, true]);
  });

  it('clears failingSince on success and on re-activation', () => {
    assert.equal(afterSuccess({ status: 'ACTIVE', failingSince: t0 }).failingSince, null);
    const re = applyStatusWrite({ status: 'SYSTEM_DISABLED', failingSince: t0 }, 'ACTIVE');
    assert.deepEqual([re.status, re.failingSince, re.dropQueue], ['ACTIVE', null, false]);
  });

  it('drops the queue when a user disables; same status is a no-op', () => {
    const d = applyStatusWrite({ status: 'ACTIVE', failingSince: null }, 'USER_DISABLED');
    assert.deepEqual([d.status, d.dropQueue, d.changed], ['USER_DISABLED', true, true]);
    const same = applyStatusWrite({ status: 'ACTIVE', failingSince: t0 }, 'ACTIVE');
    assert.deepEqual([same.failingSince, same.changed], [t0, false]);
    assert.equal(
      applyStatusWrite({ status: 'SYSTEM_DISABLED', failingSince: t0 }, 'USER_DISABLED').status,
      'USER_DISABLED',
    );
  });
});

describe('errors', () => {
  it('refuses SYSTEM_DISABLED and unknown statuses in writes', () => {
    for (const v of ['SYSTEM_DISABLED', 'active', 'PAUSED', 1]) {
      assert.throws(
        () => initialState(v),
        (e: unknown) => e instanceof ApiError && e.status === 400,
      );
      assert.throws(
        () => applyStatusWrite({ status: 'ACTIVE', failingSince: null }, v),
        (e: unknown) => e instanceof ApiError && e.status === 400,
      );
    }
  });

  it('refuses a non-positive attempt number', () => {
    assert.throws(() => retryIntervalSeconds(0, 0), RangeError);
  });
});
