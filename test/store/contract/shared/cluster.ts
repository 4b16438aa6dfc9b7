// Shared Store contract: the Cluster of a store several processes share. Locks exclude each other across the
// processes; each periodic job has one leader at a time, and another process takes it over when its leader stops;
// messages reach every process listening, in order; the value settled first wins for all; the connections of the
// processes are counted; and the login throttle's counts hold their limits for attempts from every process.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Cluster, LoginFailures } from '../../../../src/store/contract/store.ts';
import { until } from '../../../helpers/until.ts';
import { sleep } from '../../../helpers/until.ts';
import { useSharedStores, withSharedDatabase, type OpenSharedStore } from './fixtures.ts';

const WINDOW = 15 * 60_000;
const T = 1_750_000_000_000;
let seq = 0;
/** A name no other test uses (the database is shared by the part's tests). */
const fresh = (name: string) => `${name}-${++seq}`;

export function sharedClusterContract(openShared: OpenSharedStore): void {
  describe('cluster', () => {
    const { stores, another } = useSharedStores(openShared, 2);
    const cluster = (i: number): Cluster => stores()[i]!.cluster!;

    it('every store on the database says it is shared: not exclusive, with a cluster', () => {
      for (const s of stores()) {
        assert.equal(s.exclusive, false);
        assert.notEqual(s.cluster, null);
      }
    });

    describe('withLock', () => {
      it('runs one holder of a name at a time across the processes, and answers with what fn answered', async () => {
        const name = fresh('lock');
        let inside = 0;
        let most = 0;
        const answers = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            cluster(i % 2).withLock(name, async () => {
              most = Math.max(most, ++inside);
              await sleep(20);
              inside--;
              return i;
            }),
          ),
        );
        assert.deepEqual(answers, [0, 1, 2, 3, 4, 5]);
        assert.equal(most, 1, 'two holders at once');
      });

      it('makes another process wait while it is held, leaves other names free, and lets go when fn throws', async () => {
        const [name, other] = [fresh('lock'), fresh('lock')];
        let release!: () => void;
        const gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        let entered!: () => void;
        const held = new Promise<void>((resolve) => {
          entered = resolve;
        });
        const holding = cluster(0).withLock(name, async () => {
          entered();
          await gate;
          return 'first';
        });
        await held;
        assert.equal(await cluster(1).withLock(other, async () => 'other name'), 'other name');
        let waiterIn = false;
        const waiting = cluster(1).withLock(name, async () => {
          waiterIn = true;
          return 'second';
        });
        await sleep(200);
        assert.equal(waiterIn, false, 'the other process waits for the lock');
        release();
        assert.deepEqual(await Promise.all([holding, waiting]), ['first', 'second']);
        const failure = new Error('fn failed');
        await assert.rejects(
          cluster(0).withLock(name, async () => {
            throw failure;
          }),
          (e) => e === failure,
        );
        assert.equal(await cluster(1).withLock(name, async () => 'free again'), 'free again');
      });
    });

    it('tryLead: one process leads a job at a time and keeps it; when its leader stops, another takes it over', async () => {
      // Processes of their own: one of them stops.
      const [a, b] = [await another(), await another()];
      const [job, other] = [fresh('job'), fresh('job')];
      assert.equal(await a.cluster!.tryLead(job), true);
      assert.equal(await b.cluster!.tryLead(job), false, 'held by the other process');
      assert.equal(await a.cluster!.tryLead(job), true, 'kept by its leader');
      assert.equal(await b.cluster!.tryLead(other), true, 'each job has a leader of its own');
      assert.equal(await a.cluster!.tryLead(other), false);
      await a.close();
      await until('the other process leads the job of the one stopped', () => b.cluster!.tryLead(job));
      assert.equal(await b.cluster!.tryLead(other), true, 'and keeps its own');
    });

    describe('publish and subscribe', () => {
      it('a message reaches every process listening on the channel, the sender too, in the order sent', async () => {
        const channel = `probe${++seq}`;
        const heard: string[][] = [[], []];
        for (const i of [0, 1]) await cluster(i).subscribe(channel, (payload) => heard[i]!.push(payload));
        const unheard: string[] = [];
        await cluster(1).subscribe(`other${seq}`, (payload) => unheard.push(payload));
        // Several in one call, one alone, none; then from the other process. Quotes, backslashes, non-ASCII text and
        // an empty message arrive as sent.
        const sent = [
          '1',
          '{"quoted":"a \\"b\\" \\\\ c"}',
          `ünïcödé ${'x'.repeat(1_000)}`,
          '',
          'alone',
          'from the other',
        ];
        await cluster(0).publish(channel, sent.slice(0, 4));
        await cluster(0).publish(channel, sent.slice(4, 5));
        await cluster(0).publish(channel, []);
        await cluster(1).publish(channel, sent.slice(5));
        await until('every message heard by both', () => heard.every((h) => h.length >= sent.length));
        assert.deepEqual(heard, [sent, sent]);
        assert.deepEqual(unheard, [], 'another channel hears none of them');
      });

      it('the function subscribe returned stops that listener only', async () => {
        const channel = `probe${++seq}`;
        const [stopped, kept, sender]: string[][] = [[], [], []];
        const stop = await cluster(1).subscribe(channel, (payload) => stopped.push(payload));
        await cluster(1).subscribe(channel, (payload) => kept.push(payload));
        await cluster(0).subscribe(channel, (payload) => sender.push(payload));
        await cluster(0).publish(channel, ['before']);
        await until('the first message heard', () => stopped.length === 1 && kept.length === 1 && sender.length === 1);
        stop();
        await cluster(0).publish(channel, ['after']);
        // The process hears a channel's messages in order: once its other listener has the second, this one would.
        await until('the second message heard', () => kept.length === 2 && sender.length === 2);
        assert.deepEqual([stopped, kept, sender], [['before'], ['before', 'after'], ['before', 'after']]);
      });
    });

    it('settle: of processes asking at once, the first value stored wins, for every one of them and later askers', async () => {
      const name = fresh('setting');
      const values = Array.from({ length: 10 }, (_, i) => `value ${i}`);
      const answers = await Promise.all(values.map((v, i) => cluster(i % 2).settle(name, v)));
      assert.equal(new Set(answers).size, 1, answers.join(', '));
      assert.ok(values.includes(answers[0]!));
      assert.equal(await cluster(1).settle(name, 'later'), answers[0]);
      assert.equal(await cluster(0).settle(fresh('setting'), 'its own'), 'its own', 'each name has a value of its own');
    });

    it('serviceSessions counts the connections the processes hold; those of a process that stops go', () =>
      withSharedDatabase(openShared, async (open) => {
        const a = await open();
        await a.ping();
        const alone = await a.cluster!.serviceSessions();
        assert.ok(alone >= 1, `${alone} with one process, which holds the connection answering`);
        const b = await open();
        await b.ping();
        await b.cluster!.tryLead(fresh('job'));
        const both = await b.cluster!.serviceSessions();
        assert.ok(both > alone, `${both} with two processes, ${alone} with one`);
        await b.close();
        await until("the stopped process's connections gone", async () => (await a.cluster!.serviceSessions()) < both);
      }));

    describe('login failures', () => {
      const failures = (i: number): LoginFailures => cluster(i).loginFailures;

      it('attempts racing from two processes never count more than a limit, nor under any key when one is full', async () => {
        const [client, email] = [fresh('client'), fresh('email')];
        const keys = (i: number) => [
          { key: `${client} ${i % 3}`, limit: 10 },
          { key: email, limit: 12 },
        ];
        const answers = await Promise.all(
          Array.from({ length: 30 }, (_, i) => failures(i % 2).reserve(keys(i), T + i, T + i - WINDOW)),
        );
        assert.equal(answers.filter((a) => a === null).length, 12);
        for (const a of answers) if (a !== null) assert.equal(a.key, email);
        // A refused attempt counted under no key: each client key has room for 10 less those that passed under it.
        for (const k of [0, 1, 2]) {
          const passed = answers.filter((a, i) => a === null && i % 3 === k).length;
          const more = await Promise.all(
            Array.from({ length: 12 }, (_, i) =>
              failures(i % 2).reserve([{ key: `${client} ${k}`, limit: 10 }], T + 100, T + 100 - WINDOW),
            ),
          );
          assert.equal(more.filter((a) => a === null).length, 10 - passed, `${client} ${k}`);
        }
      });

      it('what one process counts, forgives or clears, the other sees at once', async () => {
        const key = fresh('shared');
        const reserve = (i: number, at: number) => failures(i).reserve([{ key, limit: 2 }], at, at - WINDOW);
        assert.equal(await reserve(0, T), null);
        assert.equal(await reserve(1, T + 1), null);
        assert.deepEqual(await reserve(0, T + 2), { key, retryAt: T + WINDOW });
        await failures(1).forgive(key, T);
        assert.equal(await reserve(0, T + 3), null, 'the attempt at T was taken back');
        assert.deepEqual(await reserve(1, T + 4), { key, retryAt: T + 1 + WINDOW });
        await failures(0).clear(key);
        assert.equal(await reserve(1, T + 5), null, 'forgotten');
      });
    });
  });
}
