// Runner-side handle of the receiver process (see receiver-process.ts).
import type { BenchTls } from './tls.ts';
import { HelperProcess } from './procs.ts';

export interface WindowCount {
  count: number;
  first: number | null;
  last: number | null;
}
export interface ReceiverStats {
  total: number;
  signed: number;
  first: number | null;
  last: number | null;
  byPath: Record<string, number>;
  distinctPaths: number;
}

/** Events recorded by recordEvents, one index per arrival (a field the body lacked is ""). */
export interface RecordedEvents {
  /** Arrival times, hrtime ms. */
  times: number[];
  paths: string[];
  eventIds: string[];
  /** The first updateTime of the event's data: the publish's key. */
  keys: string[];
  /** X-Sensorcloud-Alert-Transition ("" on a push). */
  transitions: string[];
  /** The alert's name in a webhook's body ("" on a push). */
  alerts: string[];
}

export class Receiver {
  private constructor(private readonly proc: HelperProcess<{ port: number }>) {}

  static async start(tls: BenchTls): Promise<Receiver> {
    return new Receiver(
      await HelperProcess.start<{ port: number }>('receiver-process.ts', [tls.certFile, tls.keyFile]),
    );
  }

  get port(): number {
    return this.proc.ready.port;
  }
  get pid(): number {
    return this.proc.pid;
  }
  url(path: string): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }

  reset = () => this.proc.call<void>('reset');
  count = () => this.proc.call<number>('count');
  stats = () => this.proc.call<ReceiverStats>('stats');
  window = (from: number, to: number, prefix?: string) => this.proc.call<WindowCount>('window', { from, to, prefix });
  record = (on: boolean, prefix?: string) => this.proc.call<void>('record', { on, prefix });
  times = (prefix: string) => this.proc.call<number[]>('times', { prefix });
  takeKeys = () => this.proc.call<{ keys: string[]; times: number[] }>('takeKeys');
  recordEvents = (prefix: string | null) => this.proc.call<void>('recordEvents', { prefix });
  takeEvents = () => this.proc.call<RecordedEvents>('takeEvents');
  down = () => this.proc.call<void>('down');
  up = () => this.proc.call<void>('up');
  silent = (n: number) => this.proc.call<number[]>('silent', { n });
  silentStats = () => this.proc.call<{ accepted: number; open: number }>('silentStats');
  closeSilent = () => this.proc.call<void>('closeSilent');
  slow = (n: number, delayMs: number) => this.proc.call<number[]>('slow', { n, delayMs });
  slowStats = () => this.proc.call<{ open: number; maxOpen: number; maxOpenPerPort: number }>('slowStats');
  closeSlow = () => this.proc.call<void>('closeSlow');
  stop = () => this.proc.stop();
}
