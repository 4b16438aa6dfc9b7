// Request bodies (contract §1.2): JSON whatever the Content-Type, empty is no body, a null value is an absent field.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_BODY_DEPTH, parseJsonBody } from '../../src/api/body.ts';
import { ApiError } from '../../src/domain/errors.ts';

const refused = (text: string, message: RegExp) =>
  assert.throws(
    () => parseJsonBody(text),
    (err: unknown) => err instanceof ApiError && err.status === 400 && message.test(err.message),
  );

describe('parseJsonBody', () => {
  it('drops null-valued keys at every level, keeps nulls inside arrays and the order of the other keys', () => {
    const body = parseJsonBody('{"a":null,"b":{"c":null,"d":1,"e":[null,{"f":null,"g":2}]},"h":"x"}');
    assert.deepEqual(body, { b: { d: 1, e: [null, { g: 2 }] }, h: 'x' });
    assert.deepEqual(Object.keys(body as object), ['b', 'h']);
  });

  it('keeps "__proto__" as an own field, never as the prototype', () => {
    const body = parseJsonBody('{"__proto__":{"polluted":true},"labels":{"__proto__":"x","k":null}}') as Record<
      string,
      unknown
    >;
    assert.equal(Object.getPrototypeOf(body), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(body, '__proto__')?.value, { polluted: true });
    assert.deepEqual(Object.keys(body.labels as object), ['__proto__']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('reads an empty or blank body as no body', () => {
    assert.equal(parseJsonBody(''), undefined);
    assert.equal(parseJsonBody(' \n'), undefined);
  });

  it('refuses what is not a JSON object, and bodies nested too deep', () => {
    refused('{"a":', /not valid JSON/);
    refused('[1]', /must be a JSON object/);
    refused('"x"', /must be a JSON object/);
    const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    assert.ok(parseJsonBody(deep(MAX_BODY_DEPTH)));
    refused(deep(MAX_BODY_DEPTH + 2), /nested more than 64 levels/);
  });
});
