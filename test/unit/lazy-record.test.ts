// The PostgreSQL store's lazily made records (store/postgres/repos/lazy-record.ts): values made once, on first use, and
// the record otherwise seen as a plain object of them (a caller may spread a transaction's repos).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lazyRecord } from '../../src/store/postgres/repos/lazy-record.ts';

describe('lazyRecord', () => {
  it('makes each value once, on first use, and only the ones used', () => {
    const made: string[] = [];
    const r = lazyRecord<Record<string, { name: string }>>(['a', 'b', 'c'], (key) => (made.push(key), { name: key }));
    assert.deepEqual(made, []);
    assert.equal(r.a!.name, 'a');
    assert.equal(r.a, r.a);
    assert.deepEqual(made, ['a']);
    assert.equal(r.nope, undefined);
    assert.equal((r as Record<PropertyKey, unknown>)[Symbol.iterator], undefined);
    assert.equal((r as unknown as { then?: unknown }).then, undefined, 'not mistaken for a promise');
  });

  it('spreads, lists and answers `in` as a plain object of its values', () => {
    const r = lazyRecord<Record<string, number>>(['x', 'y'], (key) => key.charCodeAt(0));
    assert.deepEqual(Object.keys(r), ['x', 'y']);
    assert.deepEqual({ ...r, z: 1 }, { x: 120, y: 121, z: 1 });
    assert.ok('x' in r);
    assert.ok(!('z' in r));
    assert.deepEqual(Object.entries(r), [
      ['x', 120],
      ['y', 121],
    ]);
  });
});
