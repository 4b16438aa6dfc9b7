// PostgreSQL only: array parameters written as literals by the store (store/postgres/array-literal.ts) reach the
// server as the same values node-postgres's own encoding sends, for every kind of element the store passes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { arrayLiteral, withArrayLiterals } from '../../src/store/postgres/array-literal.ts';
import { testPostgresUrl } from '../helpers/postgres.ts';

const texts = [
  'plain',
  '',
  'NULL',
  'null',
  ' padded ',
  'a,b',
  '{braces}',
  'quote " inside',
  'back\\slash',
  '\\"both\\"',
  '\\',
  '"',
  'tab\there',
  'line\nbreak',
  'ünïcödé ✓ 😀',
  '{"json":"body","n":[1,2],"s":"q\\"x"}',
  'x'.repeat(5000),
];

describe('postgres: array parameters as literals', () => {
  let client: pg.Client;
  before(async () => {
    client = new pg.Client({ connectionString: await testPostgresUrl() });
    await client.connect();
  });
  after(async () => {
    await client?.end();
  });

  /** The array as the server reads it, sent as this module's literal and as node-postgres encodes it. */
  const both = async (type: string, values: unknown[]) => {
    const literal = arrayLiteral(values);
    assert.ok(literal !== undefined, 'written here');
    const ours = await client.query(`SELECT $1::${type} AS v`, [literal]);
    const theirs = await client.query(`SELECT $1::${type} AS v`, [values]);
    return { ours: ours.rows[0].v as unknown, theirs: theirs.rows[0].v as unknown };
  };

  it('text: quotes, backslashes, separators, the word NULL, non-ASCII and long strings come back as sent', async () => {
    const values = [...texts, null];
    const { ours, theirs } = await both('text[]', values);
    assert.deepEqual(ours, values);
    assert.deepEqual(ours, theirs);
  });

  it('numbers, bigints and booleans', async () => {
    const ints = [0, -1, 2 ** 53 - 1, 1_764_000_000_000_000, null];
    const i = await both('bigint[]', ints);
    assert.deepEqual(i.ours, i.theirs);
    assert.deepEqual(
      (i.ours as string[]).map((x) => (x === null ? null : Number(x))),
      ints,
    );
    const floats = [1.5, -0.25, 1e-7, 123456.789];
    const f = await both('float8[]', floats);
    assert.deepEqual(f.ours, floats);
    const big = await both('numeric[]', [12345678901234567890n]);
    assert.deepEqual(big.ours, big.theirs);
    const flags = await both('boolean[]', [true, false, null]);
    assert.deepEqual(flags.ours, [true, false, null]);
  });

  it('bytes (bytea[]), from a Buffer and from a plain Uint8Array view', async () => {
    const bytes = [
      Buffer.from('{"event":"x"}'),
      Buffer.from([0, 1, 2, 0x22, 0x5c, 255]),
      new Uint8Array(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2),
      Buffer.alloc(0),
    ];
    const { ours, theirs } = await both('bytea[]', bytes);
    assert.deepEqual(
      (ours as Buffer[]).map((b) => [...b]),
      bytes.map((b) => [...b]),
    );
    assert.deepEqual(ours, theirs);
  });

  it('empty arrays; what it cannot write is left to node-postgres', async () => {
    assert.deepEqual((await both('text[]', [])).ours, []);
    assert.equal(arrayLiteral([[1, 2]]), undefined);
    assert.equal(arrayLiteral([new Date(0)]), undefined);
    assert.equal(arrayLiteral([{ a: 1 }]), undefined);
    const params = [1, 'x', [new Date(0)], ['a"b'], Buffer.from('b')];
    const out = withArrayLiterals(params)!;
    assert.deepEqual(out, [1, 'x', [new Date(0)], '{"a\\"b"}', Buffer.from('b')]);
    assert.equal(out[2], params[2], 'the array it cannot write is passed on as it was');
    assert.deepEqual(params[3], ['a"b'], "the caller's parameters are not changed");
    const none = [1, 'x'];
    assert.equal(withArrayLiterals(none), none);
    assert.equal(withArrayLiterals(undefined), undefined);
  });
});
