// The hand-off's lines (handoff.ts): fresh rows of a connector whose slots are all taken wait here, leased, in queue
// order, for its next free slot, instead of being claimed from the queue again. `places` counts the rows in line and
// those reserved by transactions not yet committed. A line is bounded, and all lines together hold at most as many
// rows as may be in flight: with thousands of connectors, rows wait in the queue, not in memory.
import type { ClaimedDelivery } from './claim.ts';

export class Lines {
  private readonly lines = new Map<string, ClaimedDelivery[]>();
  private readonly places = new Map<string, number>();
  private placesTotal = 0;

  /** `lineLimit`: places per connector; `linesLimit`: places of all connectors together. */
  constructor(
    private readonly lineLimit: number,
    private readonly linesLimit: number,
  ) {}

  /** Places the connector holds (rows in line and reservations). */
  waiting(connectorId: string): number {
    return this.places.get(connectorId) ?? 0;
  }

  /** Whether one more row of the connector may wait in line. */
  hasRoom(connectorId: string): boolean {
    return this.waiting(connectorId) < this.lineLimit && this.placesTotal < this.linesLimit;
  }

  /** Reserves a place for a row whose transaction has not committed yet. */
  place(connectorId: string): void {
    this.places.set(connectorId, this.waiting(connectorId) + 1);
    this.placesTotal++;
  }

  /** Gives up `n` places (a reservation not used, or rows that left the line). */
  unplace(connectorId: string, n = 1): void {
    const left = (this.places.get(connectorId) ?? n) - n;
    if (left <= 0) this.places.delete(connectorId);
    else this.places.set(connectorId, left);
    this.placesTotal -= n;
  }

  /** A reserved row, now committed, joins the end of its connector's line. */
  push(item: ClaimedDelivery): void {
    let line = this.lines.get(item.connector.id);
    if (!line) this.lines.set(item.connector.id, (line = []));
    line.push(item);
  }

  /** Takes the first row of the connector's line, giving up its place; the line goes when it is empty. */
  shift(connectorId: string): ClaimedDelivery | undefined {
    const line = this.lines.get(connectorId);
    const item = line?.shift();
    if (item === undefined) return undefined;
    this.unplace(connectorId);
    if (line!.length === 0) this.lines.delete(connectorId);
    return item;
  }

  /** The first row waiting in the connector's line. */
  first(connectorId: string): ClaimedDelivery | undefined {
    return this.lines.get(connectorId)?.[0];
  }

  has(connectorId: string): boolean {
    return this.lines.has(connectorId);
  }

  connectors(): string[] {
    return [...this.lines.keys()];
  }

  /** Forgets the connector's line and its places: the rows it held (to give back to the queue), if any. */
  drop(connectorId: string): ClaimedDelivery[] | undefined {
    const line = this.lines.get(connectorId);
    if (!line) return undefined;
    this.lines.delete(connectorId);
    this.unplace(connectorId, line.length);
    return line;
  }

  clear(): void {
    this.lines.clear();
    this.places.clear();
    this.placesTotal = 0;
  }
}
