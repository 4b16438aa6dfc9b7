// Output for people and scripts: aligned tables, colours only on a terminal and never with NO_COLOR or --no-color,
// --quiet names, --json documents; the export progress bar and the replay's waiting line drawn only on a terminal
// and erased at the end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Output } from '../../src/cli/output.ts';
import { createProgress, createWaiting } from '../../src/cli/progress.ts';
import { until } from '../helpers/until.ts';

/** A stream that records what is written; `isTTY` as a terminal would say. */
function fakeStream(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const stream = {
    isTTY,
    text: '',
    write(chunk: string) {
      stream.text += chunk;
      return true;
    },
    once() {
      return stream;
    },
  };
  return stream as unknown as NodeJS.WriteStream & { text: string };
}

interface Row {
  id: string;
  type: string;
}
const rows: Row[] = [
  { id: 'a', type: 'temperature' },
  { id: 'bbbbbb', type: 'co2' },
];
const columns = [
  { header: 'ID', value: (r: Row) => r.id },
  { header: 'TYPE', value: (r: Row) => r.type },
];
const ESC = '\u001b[';

describe('happy', () => {
  it('a table aligns its columns; colours only on a terminal without NO_COLOR or --no-color', () => {
    const plain = fakeStream(false);
    new Output({}, plain, fakeStream(false), {}).list(rows, columns, (r) => r.id, 'rows');
    assert.equal(plain.text, 'ID      TYPE\na       temperature\nbbbbbb  co2\n');

    const tty = fakeStream(true);
    new Output({}, tty, fakeStream(true), {}).list(rows, columns, (r) => r.id, 'rows');
    assert.ok(
      tty.text.startsWith(`${ESC}1mID${ESC}0m      ${ESC}1mTYPE${ESC}0m\n`),
      'bold headers, padded on the plain text',
    );

    for (const [options, env] of [
      [{}, { NO_COLOR: '1' }],
      [{ color: false }, {}],
    ] as const) {
      const out = fakeStream(true);
      new Output(options, out, fakeStream(true), env).list(rows, columns, (r) => r.id, 'rows');
      assert.ok(!out.text.includes(ESC), JSON.stringify({ options, env }));
    }
  });

  it('--quiet prints names only, --json one document; notes go to stderr', () => {
    const quiet = fakeStream(false);
    const quietErr = fakeStream(false);
    const q = new Output({ quiet: true }, quiet, quietErr, {});
    q.list(rows, columns, (r) => `things/${r.id}`, 'rows');
    q.note('a note');
    assert.equal(quiet.text, 'things/a\nthings/bbbbbb\n');
    assert.equal(quietErr.text, '');
    const json = fakeStream(false);
    const jsonErr = fakeStream(false);
    const j = new Output({ json: true }, json, jsonErr, {});
    j.list(rows, columns, (r) => r.id, 'rows');
    j.note('a note');
    assert.deepEqual(JSON.parse(json.text), rows);
    assert.equal(jsonErr.text, 'a note\n');
  });

  it('the progress bar draws on a terminal only, and erases itself', () => {
    const tty = fakeStream(true);
    const progress = createProgress(tty, true);
    progress.update(0.5, '5,000 events');
    progress.done();
    assert.match(tty.text, /^\r\[#{15}-{15}\] {2}50% {2}5,000 events\u001b\[K\r\u001b\[K$/);
    const pipe = fakeStream(false);
    const none = createProgress(pipe, true);
    none.update(0.5, 'x');
    none.done();
    assert.equal(pipe.text, '');
  });

  it("the waiting line (a replay's) shows the elapsed seconds on a terminal only, and erases itself", async () => {
    const tty = fakeStream(true);
    let clock = 0;
    // Each reading of the clock is a second after the one before: the start, then 1 s at the first draw, 2 s, 3 s.
    const waiting = createWaiting(tty, true, 'Replaying to c1', { now: () => (clock += 1000) - 1000, everyMs: 5 });
    await until('two redraws', () => tty.text.includes('3 s'));
    waiting.done();
    waiting.done();
    const frames = tty.text.split('\r').slice(1);
    assert.deepEqual(frames.slice(0, 3), [
      'Replaying to c1… 1 s\u001b[K',
      'Replaying to c1… 2 s\u001b[K',
      'Replaying to c1… 3 s\u001b[K',
    ]);
    assert.equal(frames.at(-1), '\u001b[K', 'erased once at the end');
    assert.equal(frames.filter((f) => f === '\u001b[K').length, 1);
    for (const [stream, enabled] of [
      [fakeStream(false), true],
      [fakeStream(true), false],
    ] as const) {
      createWaiting(stream, enabled, 'x').done();
      assert.equal(stream.text, '');
    }
  });
});
