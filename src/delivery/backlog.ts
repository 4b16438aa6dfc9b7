// Connectors that may have due rows waiting in the queue: a fresh row of theirs was queued as due (no free slot),
// or a claim left some behind (a backlog after a restart, retries coming due, `:sync`). Their later fresh rows queue
// behind them instead of being handed off, and every finished attempt wakes the engine to claim more, until a claim
// finds the connector's due rows all taken. Each mark carries a generation, so that a claim that read the queue
// before a connector was marked again does not clear it.

export class Backlog {
  private readonly marks = new Map<string, number>();
  private generation = 0;

  get size(): number {
    return this.marks.size;
  }

  has(connectorId: string): boolean {
    return this.marks.has(connectorId);
  }

  /** The connector may have due rows in the queue. */
  mark(connectorId: string): void {
    this.marks.set(connectorId, ++this.generation);
  }

  /** Taken before a claim reads the queue: what `settle` is told the claim saw. */
  snapshot(): number {
    return this.generation;
  }

  /**
   * A claim's findings: `due` had due rows when it read the queue (marked), of which `drained` had them all claimed.
   * A connector marked before the claim (`seen`) that is no longer due, or was drained, leaves the backlog.
   */
  settle(seen: number, due: ReadonlySet<string>, drained: ReadonlySet<string>): void {
    for (const id of due) if (!drained.has(id)) this.mark(id);
    for (const [id, at] of this.marks) {
      if (at <= seen && (!due.has(id) || drained.has(id))) this.marks.delete(id);
    }
  }
}
