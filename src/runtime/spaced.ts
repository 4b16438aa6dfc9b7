// Warnings about a state that lasts (every request failing the same way) told to the operator without flooding the log.

/** At most one warning a minute of each kind, counting those it did not tell. */
const WARNING_GAP_MS = 60_000;

/** A warning told at once, then at most once a gap, with how many times it happened since it was last told. */
export function spaced(now: () => number, tell: (times: number, latest: string) => void): (latest?: string) => void {
  let told = -Infinity;
  let untold = 0;
  return (latest = '') => {
    untold++;
    if (now() - told < WARNING_GAP_MS) return;
    tell(untold, latest);
    told = now();
    untold = 0;
  };
}
