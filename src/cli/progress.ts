// A progress bar on stderr for long commands (`events export`): drawn only on a terminal and without --quiet or
// --json, redrawn at most 10 times a second, erased at the end so the terminal is left clean.

export interface Progress {
  /** `fraction` in 0..1; `label` is shown after the bar. */
  update(fraction: number, label: string): void;
  done(): void;
}

const WIDTH = 30;

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
