// A scripted Dispatcher for engine tests: answers from a script (per URL or global), reports the scripted
// response time, optionally moves a fake clock by it, and records every call with the body it carried.
import type { FakeClock } from '../../src/runtime/clock.ts';
import type { AttemptOutcome, Dispatcher, PushTarget } from '../../src/delivery/types.ts';

export interface FakeCall {
  target: PushTarget;
  body: Buffer;
  json: any;
  /** Clock time (ms) when the attempt started. */
  at: number;
}

/** A scripted answer: a status code (2xx = ack), 'timeout', or a full outcome. */
export type Script = number | 'timeout' | 'tls' | 'connection' | (Partial<AttemptOutcome> & { ok: boolean });

export interface FakeDispatcherOptions {
  /** Default answer when nothing else is scripted. Default 200. */
  answer?: Script;
  /** Reported response time, ms. Default 0. */
  responseTimeMs?: number;
  /** When given, the clock advances by the response time during each attempt. */
  clock?: FakeClock;
}

export class FakeDispatcher implements Dispatcher {
  readonly calls: FakeCall[] = [];
  /** Answers consumed first-in first-out before falling back to the per-URL or default answer. */
  readonly queue: Script[] = [];
  readonly byUrl = new Map<string, Script>();
  answer: Script;
  responseTimeMs: number;
  /** Held attempts wait until release(); key '' holds every URL. */
  private readonly gates = new Map<string, { promise: Promise<void>; open: () => void }>();

  constructor(private readonly options: FakeDispatcherOptions = {}) {
    this.answer = options.answer ?? 200;
    this.responseTimeMs = options.responseTimeMs ?? 0;
  }

  /** Makes following sends (to `url`, or to any URL) wait until release(). */
  hold(url = ''): void {
    let open!: () => void;
    const promise = new Promise<void>((r) => (open = r));
    this.gates.set(url, { promise, open });
  }

  /** Lets held sends (to `url`, or every held send) answer. */
  release(url?: string): void {
    for (const [k, g] of this.gates) {
      if (url === undefined || k === url) {
        g.open();
        this.gates.delete(k);
      }
    }
  }

  callsTo(url: string): FakeCall[] {
    return this.calls.filter((c) => c.target.url === url);
  }

  eventIds(url?: string): string[] {
    return (url ? this.callsTo(url) : this.calls).map((c) => c.json.event.eventId);
  }

  async send(target: PushTarget, body: Buffer): Promise<AttemptOutcome> {
    const at = this.options.clock?.now() ?? 0;
    this.calls.push({
      target: { ...target, headers: { ...target.headers } },
      body,
      json: JSON.parse(body.toString('utf8')),
      at,
    });
    const script = this.queue.length > 0 ? this.queue.shift()! : (this.byUrl.get(target.url) ?? this.answer);
    const gate = this.gates.get(target.url) ?? this.gates.get('');
    if (gate) await gate.promise;
    const responseTimeMs =
      typeof script === 'object' && script.responseTimeMs !== undefined
        ? script.responseTimeMs
        : script === 'timeout'
          ? 10_000
          : this.responseTimeMs;
    this.options.clock?.advance(responseTimeMs);
    if (typeof script === 'object') {
      return { reason: script.ok ? 'ack' : 'http_status', message: 'scripted', ...script, responseTimeMs };
    }
    if (script === 'timeout') return { ok: false, reason: 'timeout', responseTimeMs, message: 'scripted timeout' };
    if (script === 'tls' || script === 'connection')
      return { ok: false, reason: script, responseTimeMs, message: `scripted ${script} failure` };
    const ok = script >= 200 && script < 300;
    return { ok, reason: ok ? 'ack' : 'http_status', status: script, responseTimeMs, message: `scripted ${script}` };
  }

  async close(): Promise<void> {}
}
