// Progress on stderr for long commands: a bar for `events export` (a fraction is known), a waiting line with the
// elapsed time for one long request (`connectors replay`). Drawn only on a terminal and without --quiet or --json,
// erased at the end so the terminal is left clean.

export interface Progress {
  /** `fraction` in 0..1; `label` is shown after the bar. */
  update(fraction: number, label: string): void;
  done(): void;
}

const WIDTH = 30;

/** A bar redrawn at most 10 times a second. */
export function createProgress(stream: NodeJS.WriteStream, enabled: boolean): Progress {
  if (!enabled || stream.isTTY !== true) return { update() {}, done() {} };
  let last = 0;
  let drawn = false;
  return {
    update(fraction, label) {
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      const f = Math.min(1, Math.max(0, fraction));
      const filled = Math.round(f * WIDTH);
      stream.write(
        `\r[${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${String(Math.floor(f * 100)).padStart(3)}%  ${label}\u001b[K`,
      );
      drawn = true;
    },
    done() {
      if (drawn) stream.write('\r\u001b[K');
    },
  };
}

/** A line that only says "still waiting" (one long request, no fraction to show). */
export interface Waiting {
  /** Erases the line; safe to call more than once. */
  done(): void;
}

/**
 * `label… 12 s` on stderr while one long request runs (`connectors replay`): redrawn every second, only on a
 * terminal and when enabled, erased by done(). The timer is unref'd, so it never holds the process open. `now` and
 * `everyMs` are for tests.
 */
export function createWaiting(
  stream: NodeJS.WriteStream,
  enabled: boolean,
  label: string,
  { now = Date.now, everyMs = 1000 }: { now?: () => number; everyMs?: number } = {},
): Waiting {
  if (!enabled || stream.isTTY !== true) return { done() {} };
  const started = now();
  const draw = () => stream.write(`\r${label}… ${Math.floor((now() - started) / 1000)} s\u001b[K`);
  draw();
  const timer = setInterval(draw, everyMs);
  timer.unref();
  let ended = false;
  return {
    done() {
      if (ended) return;
      ended = true;
      clearInterval(timer);
      stream.write('\r\u001b[K');
    },
  };
}
