// Several real `sensorcloud serve` processes on one PostgreSQL database, as an operator runs a cluster: each with its
// own data dir and port, all with the same master key file.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startReceiver } from '../helpers/receiver.ts';
import { freePort, serve } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';

export interface Node {
  port: number;
  dataDir: string;
  child: ChildProcess;
  base: string;
  /** How the process stands, and the last of what it wrote (for a failure's message). */
  describe(): string;
  /** How many log lines with this message (`msg`) the process wrote. */
  logged(msg: string): number;
}

/** Bytes of a process's output kept for describe(). */
const TAIL_BYTES = 4_000;

export interface TestCluster {
  nodes: Node[];
  /** bootstrap.json of the process that set the database up. */
  boot: {
    project: string;
    user: { email: string; password: string };
    serviceAccount: { name: string; keyId: string; secret: string };
  };
  /** The master key file every process reads. */
  keyFile: string;
  start(i: number): Promise<Node>;
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  close(): Promise<void>;
}

export async function startCluster(
  databaseUrl: string,
  size: number,
  extraEnv: Record<string, string> = {},
): Promise<TestCluster> {
  const root = mkdtempSync(join(tmpdir(), 'sensorcloud-cluster-'));
  const keyFile = join(root, 'master.key');
  writeFileSync(keyFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  const nodes: Node[] = [];
  const envOf = (port: number, dataDir: string) => ({
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    SENSORCLOUD_DATA_DIR: dataDir,
    SENSORCLOUD_DATABASE_URL: databaseUrl,
    SENSORCLOUD_MASTER_KEY_FILE: keyFile,
    SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
    SENSORCLOUD_CA_FILE: testTls().caFile,
    SENSORCLOUD_RATE_LIMIT: 'off',
    SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
    LOG_LEVEL: 'warn',
    SENSORCLOUD_DELIVERY_LEASE: '15s',
    ...extraEnv,
  });
  const start = async (i: number): Promise<Node> => {
    const existing = nodes[i];
    const port = existing?.port ?? (await freePort());
    const dataDir = existing?.dataDir ?? join(root, `node-${i}`);
    const child = await serve(envOf(port, dataDir));
    let tail = '';
    const keep = (d: Buffer) => (tail = (tail + d.toString()).slice(-TAIL_BYTES));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    // The log lines of stdout (one JSON object each), counted by message.
    const counts = new Map<string, number>();
    let partial = '';
    child.stdout!.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        const msg = /"msg":"((?:[^"\\]|\\.)*)"/.exec(line)?.[1];
        if (msg !== undefined) counts.set(msg, (counts.get(msg) ?? 0) + 1);
      }
    });
    const describe = () =>
      `process ${i} (port ${port}): ${child.exitCode !== null || child.signalCode !== null ? `exited (${child.exitCode ?? child.signalCode})` : 'running'}; its last output:\n${tail}`;
    const node = {
      port,
      dataDir,
      child,
      base: `http://127.0.0.1:${port}`,
      describe,
      logged: (msg: string) => counts.get(msg) ?? 0,
    };
    nodes[i] = node;
    return node;
  };
  // The first one alone: it creates the schema and the bootstrap credentials.
  await start(0);
  for (let i = 1; i < size; i++) await start(i);
  const boot = JSON.parse(readFileSync(join(nodes[0]!.dataDir, 'bootstrap.json'), 'utf8'));
  const kill = async (i: number, signal: NodeJS.Signals = 'SIGKILL') => {
    const c = nodes[i]!.child;
    if (c.exitCode !== null || c.signalCode !== null) return;
    c.kill(signal);
    await once(c, 'exit');
  };
  return {
    nodes,
    boot,
    keyFile,
    start,
    kill,
    async close() {
      for (let i = 0; i < nodes.length; i++) await kill(i, 'SIGTERM');
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** A JSON API call with Basic auth; returns status and body. */
export async function call(
  base: string,
  auth: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/v2${path}`, {
    method,
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export const basic = (keyId: string, secret: string) => `Basic ${Buffer.from(`${keyId}:${secret}`).toString('base64')}`;

export { until } from '../helpers/until.ts';

/** A connector of the project pushing to `url`, and `count` touch devices; returns the devices' names. */
export async function connectorAndDevices(
  base: string,
  auth: string,
  project: string,
  url: string,
  count: number,
): Promise<string[]> {
  const created = await call(base, auth, 'POST', `/${project}/dataconnectors`, {
    type: 'HTTP_PUSH',
    httpConfig: { url },
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const devices: string[] = [];
  for (let i = 0; i < count; i++)
    devices.push((await call(base, auth, 'POST', `/${project}/devices`, { type: 'touch' })).body.name);
  return devices;
}

/** The ids of every event stored for these devices, read from their histories. */
export async function storedEventIds(base: string, auth: string, devices: readonly string[]): Promise<Set<string>> {
  const stored = new Set<string>();
  for (const name of devices) {
    let token = '';
    do {
      const page = await call(base, auth, 'GET', `/${name}/events?pageSize=1000${token ? `&pageToken=${token}` : ''}`);
      for (const e of page.body.events) stored.add(e.eventId);
      token = page.body.nextPageToken ?? '';
    } while (token);
  }
  return stored;
}

/**
 * Publishes `events` events, round robin over the devices, with `publishers` concurrent publishers spread over the
 * processes as a load balancer would: a publish answered 503 (its process stopping) or not answered (its process
 * stopped or died under it) is sent to the next process, and a process in `down` is passed over. Any other answer
 * fails the run.
 */
export function publishLoad(
  cluster: TestCluster,
  auth: string,
  devices: readonly string[],
  options: { events: number; publishers: number; down: ReadonlySet<number> },
): { done: Promise<void>; published(): number; refused(): number } {
  const size = cluster.nodes.length;
  let next = 0;
  let published = 0;
  let refused = 0;
  const publisher = async (w: number) => {
    for (;;) {
      const i = next++;
      if (i >= options.events) return;
      for (let attempt = 0; ; attempt++) {
        let node = (w + attempt) % size;
        if (options.down.has(node)) node = (node + 1) % size;
        try {
          const r = await call(cluster.nodes[node]!.base, auth, 'POST', `/${devices[i % devices.length]}:publish`, {
            touch: {},
          });
          if (r.status === 200) break;
          assert.equal(r.status, 503, `a publish answered ${r.status}: ${JSON.stringify(r.body)}`);
        } catch (err) {
          if (err instanceof assert.AssertionError) throw err;
        }
        refused++;
        assert.ok(attempt < 20, 'a publish kept failing');
      }
      published++;
    }
  };
  const done = Promise.all(Array.from({ length: options.publishers }, (_, w) => publisher(w))).then(() => undefined);
  return { done, published: () => published, refused: () => refused };
}

/** A receiver that answers every push 200 at once and keeps the ids of the events pushed to it. */
export async function eventIdReceiver(): Promise<{
  receiver: Awaited<ReturnType<typeof startReceiver>>;
  delivered: Set<string>;
}> {
  const delivered = new Set<string>();
  const receiver = await startReceiver({
    reply: (req) => {
      delivered.add(JSON.parse(req.body.toString('utf8')).event.eventId);
      return { status: 200 };
    },
  });
  return { receiver, delivered };
}
