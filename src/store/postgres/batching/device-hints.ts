// The device versions a process's batches committed, told to the other processes of the cluster (device-versions.ts).
// A batch runs unlocked only when this process holds the current version of each of its devices. Behind a load
// balancer that spreads requests round robin, a device's next event mostly reaches another process than its last
// one did, whose version is then out of date: with two processes and 1,000 devices (`bench:cost -- max 15
// --devices 1000 --postgres --two`), three batches in four found one and ran again the locking way. So each
// process sends the versions it committed, at most one message every SEND_EVERY_MS, and keeps those it hears.
//
// A version heard is trusted no more than one read here: the statement of an unlocked batch still checks each
// device's version and fails as a whole when one changed (migration 006), so a late or lost message costs a
// locked run, never a lost update. Alone, a process sends none: each process says hello every HELLO_EVERY_MS (and
// at once to one it hears for the first time), and versions are sent only while another one was heard within
// PEER_GONE_MS. Started by the first batch that commits device versions, so a process that publishes nothing (an
// admin command) does not listen.
//
// A device that several processes write every few milliseconds has changed again by the time its version arrives:
// heard, it only made each next batch try the statement that fails before it ran locked (two processes, 10
// devices: 10-18 % fewer deliveries). So a device whose check failed here within CONTENDED_MS is neither sent nor
// taken from a message; after a failure its next batch runs locked at once, as without messages.
import { randomBytes } from 'node:crypto';
import { packMessages, type MessageItem } from '../../jobs/cluster.ts';
import type { DeviceRecord } from '../../contract/records.ts';
import type { Cluster } from '../../contract/store.ts';
import type { DeviceVersion, DeviceVersions } from './device-versions.ts';

const CHANNEL = 'devices';
/** At most one send per this many ms: a NOTIFY is a transaction of its own. */
const SEND_EVERY_MS = 10;
const HELLO_EVERY_MS = 1_000;
const PEER_GONE_MS = 3 * HELLO_EVERY_MS;
const CONTENDED_MS = 1_000;

/** `{"p":<sender>,"v":[[xmin, device], …]}`; a hello has no `v`. */
interface Message {
  p: string;
  v?: Array<[xmin: string, device: DeviceRecord]>;
}

export interface DeviceHints {
  /** A batch committed these versions (kept here already): tell the other processes, if there are any. */
  committed(kept: ReadonlyMap<string, DeviceVersion>): void;
  /** A batch's check found one of these devices changed by another process (their versions were dropped). */
  stale(ids: Iterable<string>): void;
  stop(): void;
}

export function createDeviceHints(cluster: Cluster, versions: DeviceVersions): DeviceHints {
  const own = JSON.stringify(randomBytes(8).toString('hex'));
  const ownPrefix = `{"p":${own}`;
  const hello = `${ownPrefix}}`;
  let started = false;
  let stopped = false;
  let hellos: NodeJS.Timeout | null = null;
  let stopListening: (() => void) | null = null;
  /** performance.now() when another process was last heard; -Infinity: never. */
  let peerHeardAt = -Infinity;
  /** The latest version of each device committed since the last send. */
  let outgoing = new Map<string, DeviceVersion>();
  let scheduled = false;
  let lastSend = -Infinity;
  /** performance.now() of the last failed check of each device, kept for CONTENDED_MS. */
  const contended = new Map<string, number>();
  const isContended = (id: string) => {
    const at = contended.get(id);
    if (at === undefined) return false;
    if (performance.now() - at < CONTENDED_MS) return true;
    contended.delete(id);
    return false;
  };

  // A hint is only a hint: a failed send costs the others a locked run of their next batch of these devices.
  const send = (payloads: string[]) => void cluster.publish(CHANNEL, payloads).catch(() => undefined);

  function heard(payload: string): void {
    if (payload.startsWith(ownPrefix)) return;
    const alone = performance.now() - peerHeardAt > PEER_GONE_MS;
    peerHeardAt = performance.now();
    // A process that just started (or this one, alone until now) hears back at once, not a hello interval later.
    if (alone) send([hello]);
    let message: Message | null;
    try {
      message = JSON.parse(payload) as Message | null;
    } catch {
      return;
    }
    // Heard in the database client's notification handler: nothing here may throw, whatever a message holds.
    if (!Array.isArray(message?.v)) return;
    for (const entry of message.v) {
      if (!Array.isArray(entry)) continue;
      const [xmin, device] = entry;
      if (
        typeof xmin !== 'string' ||
        typeof device?.id !== 'string' ||
        typeof device.updateTime !== 'number' ||
        isContended(device.id)
      )
        continue;
      const held = versions.get(device.id);
      // One written here since (by its time) stays: the heard one is older.
      if (held && (held.xmin === xmin || held.device.updateTime > device.updateTime)) continue;
      versions.set(device.id, { device, xmin });
    }
  }

  function flush(): void {
    scheduled = false;
    if (stopped) return;
    lastSend = performance.now();
    const items: MessageItem[] = [];
    for (const v of outgoing.values()) {
      if (isContended(v.device.id)) continue;
      const text = JSON.stringify([v.xmin, v.device]);
      items.push({ text, bytes: Buffer.byteLength(text) });
    }
    outgoing = new Map();
    // A device too large for a message is left out: the others read it themselves.
    const payloads = packMessages(`${ownPrefix},"v":[`, ']}', items);
    if (payloads.length > 0) send(payloads);
  }

  function start(): void {
    started = true;
    void cluster.subscribe(CHANNEL, heard).then(
      (stop) => {
        if (stopped) stop();
        else stopListening = stop;
      },
      () => {
        // The database was out of reach: the next batch that commits tries again.
        started = false;
        if (hellos) clearInterval(hellos);
        hellos = null;
      },
    );
    send([hello]);
    hellos = setInterval(() => {
      send([hello]);
      // Marks of devices no batch has used since they ran out.
      const now = performance.now();
      for (const [id, at] of contended) if (now - at >= CONTENDED_MS) contended.delete(id);
    }, HELLO_EVERY_MS);
    hellos.unref();
  }

  return {
    committed(kept) {
      if (stopped || kept.size === 0) return;
      if (!started) start();
      if (performance.now() - peerHeardAt > PEER_GONE_MS) return;
      for (const [id, v] of kept) outgoing.set(id, v);
      if (!scheduled) {
        scheduled = true;
        const wait = lastSend + SEND_EVERY_MS - performance.now();
        if (wait > 0) setTimeout(flush, wait).unref();
        else setImmediate(flush);
      }
    },
    stale(ids) {
      const now = performance.now();
      for (const id of ids) contended.set(id, now);
    },
    stop() {
      stopped = true;
      if (hellos) clearInterval(hellos);
      stopListening?.();
      outgoing.clear();
    },
  };
}
