// The devices this process read or wrote last, each with the version its row had then (xmin and update_time). A
// group-commit batch whose devices are all here skips the transaction and the locking read of its devices: its
// events go in one statement (write-behind.ts) that writes only if every device still has the version held here,
// and fails as a whole otherwise (migration 006). Entries are never trusted without that check, so a write by
// another process needs no message to reach this one: the next batch of that device fails it, and runs again the
// locking way, which reads the device afresh. (The processes still tell each other the versions they commit,
// device-hints.ts, which spares that locked run.) `pg_stat_statements` at saturation: the BEGIN, the locking read and
// the COMMIT were three of the event batch's four round trips.
import type { DeviceRecord } from '../../contract/records.ts';

export interface DeviceVersion {
  device: DeviceRecord;
  /** The row's xmin, as text: a new one at every committed change of the row. */
  xmin: string;
}

/** Bounded: the devices written longest ago go first. */
export class DeviceVersions {
  private readonly entries = new Map<string, DeviceVersion>();

  constructor(private readonly max = 10_000) {}

  get(id: string): DeviceVersion | undefined {
    return this.entries.get(id);
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  set(id: string, version: DeviceVersion): void {
    this.entries.delete(id);
    this.entries.set(id, version);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  drop(id: string): void {
    this.entries.delete(id);
  }
}
