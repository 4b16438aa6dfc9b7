// A failure that repeats is logged when it starts, as a reminder once a minute, and once when it ends.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFailureLog } from '../../src/runtime/failure-log.ts';

function recorder() {
  const lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (obj: object, msg: string) =>
    void lines.push({ level, obj: obj as Record<string, unknown>, msg });
  return { lines, logger: { info: at('info'), warn: at('warn'), error: at('error') } };
}

describe('failure log', () => {
  const messages = { failing: 'engine: claiming failed', recovered: 'engine: claiming works again' };

  it('logs the first failure, a reminder a minute later, and the recovery with how long and how many', () => {
    const { lines, logger } = recorder();
    let now = 1_000;
    const log = createFailureLog(logger, 'error', messages, () => now);
    const err = new Error('connect ECONNREFUSED');
    log.failed(err);
    for (let i = 0; i < 240; i++) {
      now += 250; // a poll every 250 ms for a minute
      log.failed(err);
    }
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg]),
      [
        ['error', 'engine: claiming failed'],
        ['error', 'engine: claiming failed (still failing)'],
      ],
    );
    assert.equal(lines[0]!.obj.err, err);
    assert.deepEqual(
      { failures: lines[1]!.obj.failures, forSeconds: lines[1]!.obj.forSeconds },
      { failures: 241, forSeconds: 60 },
    );
    now += 1_500;
    log.succeeded();
    log.succeeded();
    assert.equal(lines.length, 3, 'one line for the recovery, none for the successes after it');
    assert.deepEqual(lines[2], {
      level: 'info',
      obj: { failures: 241, afterSeconds: 61.5 },
      msg: 'engine: claiming works again',
    });
  });

  it('says nothing while the operation works, and counts a new run of failures from the start', () => {
    const { lines, logger } = recorder();
    let now = 0;
    const log = createFailureLog(logger, 'warn', messages, () => now);
    log.succeeded();
    assert.equal(lines.length, 0);
    log.failed('first');
    now += 100;
    log.succeeded();
    now += 5_000;
    log.failed('second');
    log.failed('second');
    now += 2_000;
    log.succeeded();
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg, l.obj.failures ?? null]),
      [
        ['warn', 'engine: claiming failed', null],
        ['info', 'engine: claiming works again', 1],
        ['warn', 'engine: claiming failed', null],
        ['info', 'engine: claiming works again', 2],
      ],
    );
    assert.equal(lines[3]!.obj.afterSeconds, 2);
  });
});
