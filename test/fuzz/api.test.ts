// The fuzz and abuse campaign (campaign.ts) as part of the suite, with fixed seeds so a failure here reproduces:
// in process, where every answer but 200 is checked to have changed nothing, and against a real `serve` process
// over HTTP, which must survive it (and socket-level abuse) with bounded memory. About a minute on CI; deeper
// campaigns: `npm run fuzz -- --runs 20000 [--seed N]`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runApiCampaign } from './campaign.ts';
import { runProcessCampaign } from './process-campaign.ts';

describe('fuzz and abuse over every operation of the OpenAPI document and the token endpoint', () => {
  it('in process: no 5xx, every error in the contract shape, no change of state unless 200, heap bounded', {
    timeout: 600_000,
  }, async () => {
    const report = await runApiCampaign({ runs: Number(process.env.FUZZ_RUNS ?? 2000), seed: 0x5eed });
    assert.ok(
      report.reached >= report.operations * 0.6,
      `only ${report.reached} of ${report.operations} operations ever answered 200: the generator rarely passes validation`,
    );
    for (const status of ['400', '401', '403', '404'])
      assert.ok((report.statuses[status] ?? 0) > 0, `no ${status} in ${JSON.stringify(report.statuses)}`);
    assert.ok(report.heapUsedMb < 400, `heap after the campaign: ${report.heapUsedMb} MB`);
  });

  it('a real process: the same answers over HTTP, then it survives slow clients and garbage, memory bounded', {
    timeout: 600_000,
  }, async () => {
    const report = await runProcessCampaign({ runs: Number(process.env.FUZZ_PROCESS_RUNS ?? 800), seed: 0xab05e });
    assert.ok(
      report.reached >= report.operations * 0.3,
      `only ${report.reached} of ${report.operations} operations answered 200`,
    );
    assert.ok(report.rssMb < 400, `resident memory of the service after the campaign: ${report.rssMb} MB`);
  });
});
