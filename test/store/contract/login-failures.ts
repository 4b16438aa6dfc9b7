// Store contract: the login throttle's counts (LoginFailures). A store shared by several processes keeps them in
// the cluster (PostgreSQL: one row per key, counted under its row lock); a store one process owns has no cluster,
// and the service keeps them in memory (auth/login-failures-memory.ts), held to the same promises here. Attempts
// racing (many connections at once) never count more than the limit, and a refused attempt counts under no key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMemoryLoginFailures } from '../../../src/auth/login-failures-memory.ts';
import type { LoginFailures } from '../../../src/store/contract/store.ts';
import { useStore, type OpenStore } from './fixtures.ts';

const WINDOW = 15 * 60_000;
const T = 1_750_000_000_000;
let seq = 0;
/** A key no other test uses (the store is shared by the part's tests). */
const fresh = (name: string) => `${name} ${++seq}@example.org`;

export function loginFailureContract(open: OpenStore): void {
  describe('login failures', () => {
    const store = useStore(open);
    let memory: LoginFailures | null = null;
    const failures = (): LoginFailures => store().cluster?.loginFailures ?? (memory ??= createMemoryLoginFailures());
    const reserve = (key: string, limit: number, at: number) => failures().reserve([{ key, limit }], at, at - WINDOW);

    it('counts up to the limit in the window, then says when the attempt that filled it leaves', async () => {
      const key = fresh('a');
      for (let i = 0; i < 3; i++) assert.equal(await reserve(key, 3, T + i * 60_000), null);
      assert.deepEqual(await reserve(key, 3, T + 5 * 60_000), { key, retryAt: T + WINDOW });
      assert.deepEqual(await reserve(key, 3, T + WINDOW - 1), { key, retryAt: T + WINDOW }, 'still in the window');
      assert.equal(await reserve(key, 3, T + WINDOW), null, 'the first left: room for one');
      assert.deepEqual(await reserve(key, 3, T + WINDOW), { key, retryAt: T + 60_000 + WINDOW });
      assert.equal(await reserve(fresh('other'), 3, T + WINDOW), null, 'another key is not held back');
    });

    it('several keys: counted under all or none, the first full one named', async () => {
      const [small, large] = [fresh('small'), fresh('large')];
      const both = (at: number) =>
        failures().reserve(
          [
            { key: small, limit: 1 },
            { key: large, limit: 2 },
          ],
          at,
          at - WINDOW,
        );
      assert.equal(await both(T), null);
      assert.deepEqual(await both(T + 1), { key: small, retryAt: T + WINDOW });
      // The refused attempt was not counted under `large`: it has room for one more.
      assert.equal(await reserve(large, 2, T + 2), null);
      assert.deepEqual(await reserve(large, 2, T + 3), { key: large, retryAt: T + WINDOW });
      const [open1, full] = [fresh('open'), fresh('full')];
      assert.equal(await reserve(full, 1, T), null);
      assert.deepEqual(
        await failures().reserve(
          [
            { key: open1, limit: 5 },
            { key: full, limit: 1 },
          ],
          T + 1,
          T + 1 - WINDOW,
        ),
        { key: full, retryAt: T + WINDOW },
      );
      assert.equal(await reserve(open1, 1, T + 2), null, 'nothing was counted under the first key either');
    });

    it('forgive takes back one attempt at its time; clear forgets the key', async () => {
      const key = fresh('f');
      assert.equal(await reserve(key, 2, T), null);
      assert.equal(await reserve(key, 2, T), null);
      await failures().forgive(key, T);
      assert.equal(await reserve(key, 2, T + 1), null, 'one of the two at T was taken back');
      assert.deepEqual(await reserve(key, 2, T + 2), { key, retryAt: T + WINDOW });
      await failures().forgive(key, T + 99); // no attempt then: nothing changes
      assert.notEqual(await reserve(key, 2, T + 3), null);
      await failures().clear(key);
      assert.equal(await reserve(key, 2, T + 4), null);
      await failures().clear(fresh('never counted'));
    });

    it('attempts racing never count more than the limit, and a key full by one of them refuses the others', async () => {
      const [client, email] = [fresh('client'), fresh('email')];
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          failures().reserve(
            [
              { key: `${client} ${i % 3}`, limit: 10 },
              { key: email, limit: 12 },
            ],
            T + i,
            T + i - WINDOW,
          ),
        ),
      );
      assert.equal(answers.filter((a) => a === null).length, 12);
      for (const a of answers) if (a !== null) assert.equal(a.key, email);
      const single = fresh('single');
      const alone = await Promise.all(Array.from({ length: 25 }, () => reserve(single, 10, T)));
      assert.equal(alone.filter((a) => a === null).length, 10);
    });
  });
}
