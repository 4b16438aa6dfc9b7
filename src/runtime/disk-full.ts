// A full disk under the database, as both stores report it to /healthz: a write refused for lack of room starts it,
// a write that took room ends it, and without either it ends a minute after the last refusal (nothing failing then).
import { spaced } from './spaced.ts';

/** How long /healthz reports a full disk after a write was refused for it, unless room is seen first. */
const FULL_FOR_MS = 60_000;

export class DiskFull {
  /** When a write was last refused for lack of room (ms); null once room was seen since. A field: read per statement. */
  refusedAt: number | null = null;
  private readonly tell: (latest?: string) => void;

  /** `warn` tells the operator, at most once a minute (runtime/spaced.ts), with the refusals since it last did. */
  constructor(
    private readonly now: () => number,
    warn: (refusals: number, reason: string) => void,
  ) {
    this.tell = spaced(now, warn);
  }

  /** A write was refused for lack of room, with the database's reason. */
  refused(reason: string): void {
    this.refusedAt = this.now();
    this.tell(reason);
  }

  /** A write took room on the disk: the disk is not full (any more). */
  roomSeen(): void {
    this.refusedAt = null;
  }

  /** A write was refused for lack of room within the last minute, and no room seen since. */
  get full(): boolean {
    return this.refusedAt !== null && this.now() - this.refusedAt < FULL_FOR_MS;
  }
}
