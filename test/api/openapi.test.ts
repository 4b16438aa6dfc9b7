// /v2/openapi.json names every operation for code generators: a unique camelCase operationId and a tag.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestContext, type TestContext } from '../helpers/context.ts';

let t: TestContext;
before(async () => {
  t = await createTestContext();
});
after(() => t.close());

describe('happy', () => {
  it('every operation has a unique camelCase operationId and one tag', async () => {
    const res = await t.request('GET', '/v2/openapi.json', { auth: null });
    assert.equal(res.status, 200);
    const seen = new Map<string, string>();
    let count = 0;
    for (const [path, ops] of Object.entries(
      res.body.paths as Record<string, Record<string, { operationId: string; tags: string[] }>>,
    )) {
      for (const [method, op] of Object.entries(ops)) {
        count++;
        const where = `${method.toUpperCase()} ${path}`;
        assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${where} has no camelCase operationId`);
        assert.ok(!seen.has(op.operationId), `${where} reuses ${op.operationId} of ${seen.get(op.operationId)}`);
        seen.set(op.operationId, where);
        assert.equal(op.tags?.length, 1, `${where} has no tag`);
        assert.notEqual(op.tags[0], 'Other', `${where} is missing from src/api/operation-ids.ts`);
      }
    }
    assert.ok(count >= 60, `only ${count} operations`);
    assert.equal(seen.get('listDevices'), 'GET /v2/projects/{project}/devices');
    assert.equal(seen.get('publishDeviceEvent'), 'POST /v2/projects/{project}/devices/{device}:publish');
    assert.equal(seen.get('listDeliveries'), 'GET /v2/projects/{project}/dataconnectors/{dc}/deliveries');
    assert.equal(seen.get('getDelivery'), 'GET /v2/projects/{project}/dataconnectors/{dc}/deliveries/{delivery}');
    assert.equal(
      seen.get('resendDelivery'),
      'POST /v2/projects/{project}/dataconnectors/{dc}/deliveries/{delivery}:resend',
    );
    assert.equal(seen.get('replayDataConnector'), 'POST /v2/projects/{project}/dataconnectors/{dc}:replay');
    assert.equal(seen.get('testDataConnector'), 'POST /v2/projects/{project}/dataconnectors/{dc}:test');
    assert.equal(seen.get('rotateDataConnectorSecret'), 'POST /v2/projects/{project}/dataconnectors/{dc}:rotateSecret');
    assert.equal(
      seen.get('getDataConnectorMetricsHistory'),
      'GET /v2/projects/{project}/dataconnectors/{dc}:metricsHistory',
    );
  });
});
