// On a store several processes share, the cluster counts a connector's attempts in flight from its leased rows
// (claim.ts, InFlightCap.ended). A row whose attempt here has ended stays leased until its outcome commits; it is left
// out of that count meanwhile, so that a slot freed here is free in the whole cluster at once.

export class EndedRows {
  private readonly rows = new Map<string, Set<number>>();

  /** The connector's rows whose attempts have ended here and whose outcomes are not yet committed. */
  of(connectorId: string): ReadonlySet<number> | undefined {
    return this.rows.get(connectorId);
  }

  /** The row's attempt ended; `recorded` settles once its outcome is committed (or failed to be). */
  add(connectorId: string, rowId: number, recorded: Promise<unknown>): void {
    let rows = this.rows.get(connectorId);
    if (!rows) this.rows.set(connectorId, (rows = new Set()));
    rows.add(rowId);
    void recorded.finally(() => {
      rows.delete(rowId);
      if (rows.size === 0 && this.rows.get(connectorId) === rows) this.rows.delete(connectorId);
    });
  }
}
