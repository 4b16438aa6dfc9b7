// Event streams (contract §4.8): GET …/devices:stream and …/devices/{d}:stream. Headers are flushed at once,
// then NDJSON lines or SSE messages of new matching events, a ping every ping_interval, a clean close after one
// hour, and a 503 error message plus close for a reader more than 1000 messages behind. Publishers never wait
// for a reader: what the socket does not take at once waits in the stream's own queue (the messages' shared
// bytes, not copies), which a close drops at once; the streams of the process together stay within a budget
// (stream-budget.ts).
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.ts';
import { nowMicros } from '../../runtime/clock.ts';
import { badRequest, tooManyRequests } from '../../domain/errors.ts';
import { projectName } from '../../domain/names.ts';
import { formatTimestamp, tryParseDuration } from '../../domain/time.ts';
import {
  StreamMessage,
  compileStreamFilter,
  createFanOut,
  resultMessage,
  type FanOut,
  type StreamFilter,
} from '../../events/fan-out.ts';
import type { ClusterHold } from '../../events/pipeline.ts';
import { requireStreamScope } from '../../services/devices.ts';
import {
  DeviceStreamQuerySchema,
  ProjectStreamQuerySchema,
  StreamMessageSchema,
  type ProjectStreamQuery,
} from '../../wire/events.ts';
import type { App } from '../types.ts';
import { principalOf } from '../http.ts';
import {
  QUEUED_MESSAGE_OVERHEAD_BYTES,
  createStreamBudget,
  type BudgetedStream,
  type StreamBudget,
} from '../stream-budget.ts';

export interface StreamLimits {
  /** A reader with more messages than this queued, not yet taken by the socket, gets a 503 and is closed. */
  maxBufferedMessages: number;
  /** The same for bytes: a few large messages (labelsChanged events of long labels) bound memory as well. */
  maxBufferedBytes: number;
  /** Streams end cleanly this long after they opened (contract: 1 hour). */
  maxDurationMs: number;
  /** After a 503 or a shutdown, how long the client may take to read the rest before the connection is dropped. */
  drainTimeoutMs: number;
}

export const DEFAULT_STREAM_LIMITS: Readonly<StreamLimits> = Object.freeze({
  maxBufferedMessages: 1000, // contract §7 #6
  maxBufferedBytes: 8 * 1024 * 1024,
  maxDurationMs: 60 * 60 * 1000,
  drainTimeoutMs: 30_000,
});

export const PING_INTERVAL = { defaultSeconds: 10, minSeconds: 1, maxSeconds: 60 };

/** The open streams of one app: limits (tests may lower them) and shutdown. */
export interface EventStreams {
  readonly limits: StreamLimits;
  /** What the streams of the process hold together (caps and the byte budget; tests may lower them). */
  readonly budget: StreamBudget;
  /** Streams currently receiving events (a stream that has failed or ended no longer counts, even while its
   *  client is still reading the rest). */
  openCount(): number;
  /** Ends every stream; connections that do not finish within a second are dropped. */
  closeAll(): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    eventStreams: EventStreams;
  }
}

/** "10s", "1.5s" or bare seconds; default 10 s; clamped to 1-60 s (contract §4.8). */
export function parsePingInterval(raw: string | undefined): number {
  if (raw === undefined) return PING_INTERVAL.defaultSeconds;
  const seconds = tryParseDuration(raw);
  if (seconds === null || !Number.isFinite(seconds))
    throw badRequest(`ping_interval must be a duration such as "10s", got "${raw}"`);
  return Math.min(PING_INTERVAL.maxSeconds, Math.max(PING_INTERVAL.minSeconds, seconds));
}

export function registerStreamRoutes(app: App, deps: Deps): void {
  const limits: StreamLimits = { ...DEFAULT_STREAM_LIMITS, maxBufferedMessages: deps.config.streamBufferMessages };
  const budget = createStreamBudget({ ...deps.config.streamCaps });
  const fanOut = createFanOut(deps.events, (err) => deps.logger.error({ err }, 'event stream sink failed'));
  const open = new Set<StreamConnection>();

  const streams: EventStreams = {
    limits,
    budget,
    openCount: () => fanOut.size(),
    async closeAll() {
      const all = [...open];
      if (all.length === 0) return;
      const closed = Promise.all(all.map((c) => new Promise<void>((resolve) => c.res.once('close', () => resolve()))));
      for (const c of all) c.end();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        closed,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, 1000);
        }),
      ]);
      clearTimeout(timer);
      for (const c of open) c.res.destroy();
    },
  };
  app.decorate('eventStreams', streams);
  // Open streams would keep server.close() waiting for up to an hour.
  app.addHook('preClose', async () => streams.closeAll());
  app.addHook('onClose', async () => fanOut.close());

  const handle = async (
    request: FastifyRequest,
    reply: FastifyReply,
    projectId: string,
    deviceId: string | null,
  ): Promise<void> => {
    const principal = principalOf(request);
    await requireStreamScope(deps, principal, projectId, deviceId);
    const query = request.query as ProjectStreamQuery;
    const pingSeconds = parsePingInterval(query.pingInterval);
    const filter =
      deviceId === null
        ? compileStreamFilter(projectId, query)
        : compileStreamFilter(projectId, { deviceIds: [deviceId], eventTypes: query.eventTypes });
    const accept = request.headers.accept;
    const sse = (Array.isArray(accept) ? accept.join(',') : (accept ?? '')).toLowerCase().includes('text/event-stream');
    // A service account's keys share its streams: a caller cannot raise its cap by making keys.
    const caller = principal.kind === 'serviceAccount' ? `serviceAccount:${principal.id}` : `user:${principal.id}`;
    const refused = budget.admit(caller);
    if (refused !== null) throw tooManyRequests(5, refused);

    // From here on the response is ours: fastify must not send anything else.
    reply.hijack();
    const connection = new StreamConnection(
      deps,
      reply.raw,
      filter,
      sse,
      pingSeconds * 1000,
      limits,
      fanOut,
      budget,
      () => {
        open.delete(connection);
        budget.leave(caller);
      },
    );
    open.add(connection);
    await connection.start();
  };

  app.get(
    '/v2/projects/:project/devices/@stream',
    {
      schema: { querystring: ProjectStreamQuerySchema },
      config: {
        streamErrors: true,
        summary: 'Stream new events of the devices in a project (NDJSON, or SSE with Accept: text/event-stream)',
        response: StreamMessageSchema,
      },
    },
    async (request, reply) => {
      const { project } = request.params as { project: string };
      await handle(request, reply, project, null);
    },
  );

  app.get(
    '/v2/projects/:project/devices/:device/@stream',
    {
      schema: { querystring: DeviceStreamQuerySchema },
      config: {
        streamErrors: true,
        summary: 'Stream new events of one device (NDJSON, or SSE with Accept: text/event-stream)',
        response: StreamMessageSchema,
      },
    },
    async (request, reply) => {
      const { project, device } = request.params as { project: string; device: string };
      await handle(request, reply, project, device);
    },
  );
}

/** One open stream: its subscription, timers, and the queue of what its socket has not taken yet. */
class StreamConnection implements BudgetedStream {
  private closed = false;
  private unsubscribe: (() => void) | null = null;
  private hold: ClusterHold | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private maxTimer: NodeJS.Timeout | null = null;
  private drainTimer: NodeJS.Timeout | null = null;
  /** Frames waiting for the socket ('drain'), oldest at `head`; shared with every other stream that sends them. */
  private queue: Buffer[] = [];
  private head = 0;
  /** The socket refused more (write returned false) and has not said 'drain' yet. */
  private waiting = false;
  /** end() was called: the response ends once the queue is written. */
  private ending = false;
  private finished = false;
  bufferedBytes = 0;

  constructor(
    private readonly deps: Deps,
    readonly res: ServerResponse,
    private readonly filter: StreamFilter,
    private readonly sse: boolean,
    private readonly pingMs: number,
    private readonly limits: StreamLimits,
    private readonly fanOut: FanOut,
    private readonly budget: StreamBudget,
    private readonly onClosed: () => void,
  ) {}

  async start(): Promise<void> {
    const { res } = this;
    res.on('close', () => this.cleanup());
    res.on('error', () => this.cleanup());
    res.on('drain', () => this.flush());
    // The client may have gone while the request was being authorised; its 'close' has then already fired.
    if (!res.socket || res.socket.destroyed) {
      this.cleanup();
      return;
    }
    // Subscribed before the headers go out, here and (in a cluster) at the other processes: once a client sees
    // them, no later event is missed.
    this.hold = this.deps.events.holdCluster();
    await this.hold.ready;
    if (this.closed) return;
    this.budget.track(this);
    this.unsubscribe = this.fanOut.add(this.filter, (message) => this.send(message));
    res.writeHead(200, {
      'Content-Type': this.sse ? 'text/event-stream' : 'application/json',
      'Cache-Control': 'no-cache',
      'X-Accel-Buffering': 'no', // reverse proxies must not buffer the stream
    });
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    this.pingTimer = setInterval(() => this.ping(), this.pingMs);
    this.pingTimer.unref();
    this.maxTimer = setTimeout(() => this.end(), this.limits.maxDurationMs);
    this.maxTimer.unref();
  }

  /** Ends the stream cleanly (1-hour limit, shutdown), after what is queued. */
  end(): void {
    if (this.closed) return;
    this.stop();
    this.ending = true;
    if (this.queue.length === this.head) this.res.end();
  }

  closeForBudget(): void {
    this.fail(
      503,
      'stream closed: the server holds as much for event streams as it may, and this reader was the furthest behind',
    );
  }

  private send(message: StreamMessage): void {
    if (this.closed) return;
    const queued = this.queue.length - this.head;
    if (queued >= this.limits.maxBufferedMessages) {
      this.fail(503, `stream closed: the reader fell more than ${this.limits.maxBufferedMessages} messages behind`);
      return;
    }
    if (this.bufferedBytes > this.limits.maxBufferedBytes) {
      this.fail(503, `stream closed: the reader fell more than ${this.limits.maxBufferedBytes} bytes behind`);
      return;
    }
    const frame = message.frame(this.sse);
    if (!this.waiting) {
      this.waiting = !this.res.write(frame);
      return;
    }
    this.queue.push(frame);
    this.charge(frame.length + QUEUED_MESSAGE_OVERHEAD_BYTES);
    this.budget.enforce();
  }

  /** The socket took what it had: hand it the queue until it is full again. */
  private flush(): void {
    this.waiting = false;
    let freed = 0;
    while (this.head < this.queue.length && !this.waiting) {
      const frame = this.queue[this.head]!;
      this.queue[this.head++] = EMPTY;
      freed += frame.length + QUEUED_MESSAGE_OVERHEAD_BYTES;
      this.waiting = !this.res.write(frame);
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
      if (this.ending && !this.res.writableEnded) this.res.end();
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.charge(-freed);
  }

  private charge(bytes: number): void {
    this.bufferedBytes += bytes;
    this.budget.charge(this, bytes);
  }

  private ping(): void {
    const event = {
      eventId: this.deps.ids.next(),
      targetName: projectName(this.filter.projectId),
      eventType: 'ping',
      data: null,
      timestamp: formatTimestamp(nowMicros(this.deps)),
    };
    this.send(new StreamMessage(resultMessage(JSON.stringify(event))));
  }

  /**
   * Sends the error message and closes (contract §4.8). What the socket has not taken yet is dropped at once:
   * the reader sees the messages its socket held, then this one.
   */
  private fail(code: number, message: string): void {
    if (this.closed) return;
    this.stop();
    this.dropQueue();
    this.res.write(
      `${this.sse ? 'data: ' : ''}${JSON.stringify({ error: { code, message } })}${this.sse ? '\n\n' : '\n'}`,
    );
    this.res.end();
  }

  private dropQueue(): void {
    this.charge(-this.bufferedBytes);
    this.queue = [];
    this.head = 0;
  }

  /** No more messages; the client gets a bounded time to read what is buffered. */
  private stop(): void {
    this.closed = true;
    this.release();
    this.drainTimer = setTimeout(() => this.res.destroy(), this.limits.drainTimeoutMs);
    this.drainTimer.unref();
  }

  private release(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.hold?.release();
    this.hold = null;
    if (this.pingTimer) clearInterval(this.pingTimer);
    if (this.maxTimer) clearTimeout(this.maxTimer);
    this.pingTimer = this.maxTimer = null;
  }

  private cleanup(): void {
    if (this.finished) return;
    this.finished = true;
    this.closed = true;
    this.release();
    if (this.drainTimer) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    this.dropQueue();
    this.budget.untrack(this);
    this.onClosed();
  }
}

const EMPTY = Buffer.alloc(0);
