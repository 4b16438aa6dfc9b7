// What the event streams of one process may hold, together: a cap of open streams per principal and in total, and
// a budget of bytes written to streams but not yet taken by their sockets. 500 streams that never read, fed 16 KB
// events, once grew the process past 4 GB: each stream's own limit (1000 messages, 8 MiB) multiplied by the
// number of streams has no bound. Over the budget, the streams furthest behind are closed first, with the
// documented end-of-stream message; a reader that keeps up holds next to nothing and is never chosen.

export interface StreamCaps {
  /** Open streams of one principal: a service account (all its keys together) or a user. */
  perPrincipal: number;
  /** Open streams of the process. */
  total: number;
  /** Bytes buffered for all open streams together (each message counted with its bookkeeping, below). */
  bufferedBytes: number;
}

/**
 * What a queued message costs a stream beyond the message's bytes (which every stream sending it shares, and
 * which are counted in full for each, so the budget errs high): a slot in its queue, and the chunk framing written
 * with it. Counted so that a flood of tiny messages is bounded too.
 */
export const QUEUED_MESSAGE_OVERHEAD_BYTES = 64;

/** A stream as the budget sees it. */
export interface BudgetedStream {
  /** Bytes charged to this stream and not yet taken by its socket. */
  readonly bufferedBytes: number;
  /** Ends the stream because the process is over its budget (the 503 end-of-stream message). */
  closeForBudget(): void;
}

export interface StreamBudget {
  readonly caps: StreamCaps;
  /** Why a new stream of `principal` is refused (for a 429), or null when it may open: then it is counted. */
  admit(principal: string): string | null;
  /** The stream of `principal` is gone: it no longer counts against either cap. */
  leave(principal: string): void;
  /** Starts charging a stream's buffered bytes. */
  track(stream: BudgetedStream): void;
  /** Stops charging it (it ended, or it was closed and only drains what it has). */
  untrack(stream: BudgetedStream): void;
  /** `bytes` more (or, negative, fewer) are buffered for a tracked stream. */
  charge(stream: BudgetedStream, bytes: number): void;
  /** Closes the streams furthest behind until the total is within the budget; call after a round of writes. */
  enforce(): void;
  openCount(): number;
  bufferedBytes(): number;
  /** Streams closed for the budget since start. */
  closedForBudget(): number;
}

export function createStreamBudget(caps: StreamCaps): StreamBudget {
  const byPrincipal = new Map<string, number>();
  const tracked = new Set<BudgetedStream>();
  let open = 0;
  let buffered = 0;
  let closed = 0;
  return {
    caps,
    admit(principal) {
      const mine = byPrincipal.get(principal) ?? 0;
      if (mine >= caps.perPrincipal)
        return `too many open event streams: ${mine} are open for this caller, the limit is ${caps.perPrincipal}; close one first`;
      if (open >= caps.total)
        return `too many open event streams: the server holds its limit of ${caps.total}; try again later`;
      byPrincipal.set(principal, mine + 1);
      open++;
      return null;
    },
    leave(principal) {
      const mine = byPrincipal.get(principal) ?? 0;
      if (mine <= 1) byPrincipal.delete(principal);
      else byPrincipal.set(principal, mine - 1);
      open--;
    },
    track(stream) {
      tracked.add(stream);
      buffered += stream.bufferedBytes;
    },
    untrack(stream) {
      if (tracked.delete(stream)) buffered -= stream.bufferedBytes;
    },
    charge(stream, bytes) {
      if (tracked.has(stream)) buffered += bytes;
    },
    enforce() {
      if (buffered <= caps.bufferedBytes) return;
      // Rare (only over the budget): the furthest behind first, until within it.
      const behind = [...tracked].sort((a, b) => b.bufferedBytes - a.bufferedBytes);
      for (const stream of behind) {
        if (buffered <= caps.bufferedBytes || stream.bufferedBytes === 0) break;
        closed++;
        stream.closeForBudget(); // untracks it
      }
    },
    openCount: () => open,
    bufferedBytes: () => buffered,
    closedForBudget: () => closed,
  };
}
