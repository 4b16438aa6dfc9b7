// A connector's delivery controls (extensions §X4) from the CLI, against a real service: `connectors create|update
// --max-concurrency --max-rate --label-filter` (update sends only the keys given, the service merges them, label
// filters replace the filters whole, --clear-label-filters empties them), `connectors pause|resume`, how `get` and
// `list` show the controls, --json and --quiet; usage errors before anything is sent, the service's 400 passed
// through; completion of the new commands and options.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { deliveryInput, labelFiltersText, limitsText, parseLabelFilters } from '../../src/cli/delivery-controls.ts';
import { UsageError } from '../../src/cli/errors.ts';
import { startService, type Service } from './harness.ts';

let s: Service;
/** A connector created without controls, and one created with them (the one the updates change). */
let plain = '';
let dc = '';
let dcId = '';

const URL = 'https://receiver.test/hook';
const DEFAULTS = { maxConcurrency: 64, maxRate: 0, labelFilters: {}, paused: false };

/** The connector as the service has it (Basic Auth). */
async function stored(name = dc): Promise<any> {
  const res = await s.api('GET', name);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

let setup: Promise<void> | null = null;
const ready = () =>
  (setup ??= (async () => {
    s = await startService();
    const login = await s.run(['login', '--from', `${s.dataDir}/bootstrap.json`]);
    assert.equal(login.code, 0, login.stderr);
  })());

describe('happy', () => {
  before(ready);

  it('create without the options: the defaults, shown by get; list has no column for them', async () => {
    const created = await s.json(['connectors', 'create', '--url', URL, '--events', 'touch']);
    plain = created.name;
    assert.deepEqual(created.deliveryConfig, DEFAULTS);
    const [table, list] = await Promise.all([
      s.run(['connectors', 'get', plain.split('/').pop()!]),
      s.run(['connectors', 'list']),
    ]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^status\s+ACTIVE$/m);
    assert.match(table.stdout, /^labelFilters\s+\(every device\)$/m);
    assert.match(table.stdout, /^maxConcurrency\s+64$/m);
    assert.match(table.stdout, /^maxRate\s+no limit$/m);
    const [header, row] = list.stdout.trimEnd().split('\n');
    assert.match(header!, /^ID\s+DISPLAY NAME\s+STATUS\s+EVENTS\s+URL$/);
    assert.match(row!, /\sACTIVE\s+touch\s/);
  });

  it('create with --max-concurrency, --max-rate and --label-filter (key=value, key, key=)', async () => {
    const created = await s.json([
      'connectors',
      'create',
      '--url',
      URL,
      '--events',
      'touch,temperature',
      '--max-concurrency',
      '4',
      '--max-rate',
      '2.5',
      '--label-filter',
      'site=oslo',
      '--label-filter',
      'floor',
      '--label-filter',
      'room=',
    ]);
    dc = created.name;
    dcId = dc.split('/').pop()!;
    const expected = { maxConcurrency: 4, maxRate: 2.5, labelFilters: { site: 'oslo', floor: '', room: '' } };
    assert.deepEqual(created.deliveryConfig, { ...expected, paused: false });
    assert.deepEqual((await stored()).deliveryConfig, { ...expected, paused: false });
    assert.deepEqual(created.events, ['touch', 'temperature'], 'the other options still apply');

    const table = await s.run(['connectors', 'get', dcId]);
    assert.match(table.stdout, /^labelFilters\s+site=oslo, floor \(any value\), room \(any value\)$/m);
    assert.match(table.stdout, /^maxConcurrency\s+4$/m);
    assert.match(table.stdout, /^maxRate\s+2\.5 per second$/m);

    const list = (await s.run(['connectors', 'list'])).stdout.trimEnd().split('\n');
    assert.match(list[0]!, /STATUS\s+EVENTS\s+LIMITS\s+LABEL FILTERS\s+URL$/);
    const mine = list.find((l) => l.startsWith(dcId))!;
    const other = list.find((l) => l.startsWith(plain.split('/').pop()!))!;
    assert.match(mine, /\s4 at once, 2\.5\/s\s+site=oslo, floor \(any value\), room \(any value\)\s+https:/);
    assert.match(other, /\s-\s+-\s+https:/, 'a connector without controls of its own');
  });

  it('create --paused, and --max-rate 0', async () => {
    const created = await s.json(['connectors', 'create', '--url', URL, '--paused', '--max-rate', '0']);
    assert.deepEqual(created.deliveryConfig, { ...DEFAULTS, paused: true });
    assert.equal(created.status, 'ACTIVE');
    assert.equal((await s.run(['connectors', 'delete', created.name])).code, 0);
  });

  it('update sends only the keys given: the service merges them with the rest', async () => {
    const before = await stored();
    const rate = await s.json(['connectors', 'update', dcId, '--max-rate', '0']);
    assert.deepEqual(rate.deliveryConfig, { ...before.deliveryConfig, maxRate: 0 });
    assert.deepEqual([rate.events, rate.httpConfig.url], [before.events, before.httpConfig.url], 'the rest stays');

    const both = await s.json(['connectors', 'update', dcId, '--max-concurrency', '8', '--display-name', 'limited']);
    assert.deepEqual(both.deliveryConfig, { ...before.deliveryConfig, maxRate: 0, maxConcurrency: 8 });
    assert.equal(both.displayName, 'limited');
    assert.match((await s.run(['connectors', 'get', dcId])).stdout, /^maxRate\s+no limit$/m);
  });

  it('--label-filter on update replaces the filters whole; --clear-label-filters empties them', async () => {
    const replaced = await s.json(['connectors', 'update', dcId, '--label-filter', 'site=bergen']);
    assert.deepEqual(replaced.deliveryConfig.labelFilters, { site: 'bergen' });
    assert.deepEqual([replaced.deliveryConfig.maxConcurrency, replaced.deliveryConfig.maxRate], [8, 0]);

    const cleared = await s.json(['connectors', 'update', dcId, '--clear-label-filters']);
    assert.deepEqual(cleared.deliveryConfig, { maxConcurrency: 8, maxRate: 0, labelFilters: {}, paused: false });
    assert.deepEqual((await stored()).deliveryConfig.labelFilters, {});
    assert.match((await s.run(['connectors', 'get', dcId])).stdout, /^labelFilters\s+\(every device\)$/m);
  });

  it('pause and resume: a one-line confirmation, PAUSED in get and list, kept by other updates', async () => {
    const paused = await s.run(['connectors', 'pause', dcId]);
    assert.equal(paused.code, 0, paused.stderr);
    assert.equal(
      paused.stdout,
      `${dc} is paused: events queue (for up to 12 hours) and none is pushed until it is resumed.\n`,
    );
    assert.equal((await stored()).deliveryConfig.paused, true);

    const [table, list] = await Promise.all([s.run(['connectors', 'get', dcId]), s.run(['connectors', 'list'])]);
    assert.match(table.stdout, /^status\s+ACTIVE, PAUSED: events queue/m);
    assert.match(list.stdout.split('\n').find((l) => l.startsWith(dcId))!, /\sACTIVE, PAUSED\s/);

    // Another update leaves the pause alone (the CLI sends only what was given).
    const limited = await s.json(['connectors', 'update', dcId, '--max-rate', '5']);
    assert.deepEqual([limited.deliveryConfig.paused, limited.deliveryConfig.maxRate], [true, 5]);
    // Pausing again is no error.
    assert.equal((await s.json(['connectors', 'pause', dc])).deliveryConfig.paused, true);

    const resumed = await s.run(['connectors', 'resume', dcId]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(resumed.stdout, `${dc} is resumed: queued events are pushed in order of due time.\n`);
    assert.deepEqual((await stored()).deliveryConfig, {
      maxConcurrency: 8,
      maxRate: 5,
      labelFilters: {},
      paused: false,
    });
    assert.match((await s.run(['connectors', 'get', dcId])).stdout, /^status\s+ACTIVE$/m);
  });

  it('pause and resume with --json print the connector, with --quiet its name; a disabled one is said so', async () => {
    const paused = await s.json(['connectors', 'pause', dcId]);
    assert.equal(paused.name, dc);
    assert.equal(paused.deliveryConfig.paused, true);
    assert.equal(paused.httpConfig.url, URL);
    const resumed = await s.json(['connectors', 'resume', dcId]);
    assert.equal(resumed.deliveryConfig.paused, false);
    const quiet = await s.run(['connectors', 'pause', dcId, '-q']);
    assert.deepEqual([quiet.code, quiet.stdout, quiet.stderr], [0, `${dc}\n`, '']);
    assert.equal((await s.run(['connectors', 'resume', dcId, '-q'])).stdout, `${dc}\n`);

    assert.equal((await s.run(['connectors', 'disable', plain])).code, 0);
    const disabled = await s.run(['connectors', 'pause', plain]);
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.match(disabled.stdout, /is paused: .* It is USER_DISABLED: nothing is pushed until it is enabled\.\n$/);
    const table = await s.run(['connectors', 'get', plain]);
    assert.match(table.stdout, /^status\s+USER_DISABLED, PAUSED: /m);
  });
});

describe('errors', () => {
  before(ready);

  it('exit 2 for values that are not numbers, bad filters and contradictions, before anything is sent', async () => {
    const updateTime = (await stored()).updateTime;
    const count = (await s.api('GET', `projects/${s.projectId}/dataconnectors`)).body.dataConnectors.length;
    const runs = await Promise.all([
      s.run(['connectors', 'update', dcId, '--max-concurrency', 'lots']),
      s.run(['connectors', 'update', dcId, '--max-concurrency', '2.5']),
      s.run(['connectors', 'update', dcId, '--max-rate', 'fast']),
      s.run(['connectors', 'update', dcId, '--max-rate', '']),
      s.run(['connectors', 'update', dcId, '--label-filter', '=oslo']),
      s.run(['connectors', 'update', dcId, '--label-filter', 'site=oslo', '--clear-label-filters']),
      s.run(['connectors', 'create', '--url', URL, '--max-rate', '5/s']),
      s.run(['connectors', 'create', '--url', URL, '--label-filter', '']),
      s.run(['connectors', 'pause']),
      s.run(['connectors', 'resume', dcId, 'extra']),
    ]);
    assert.deepEqual(
      runs.map((r) => r.code),
      Array(runs.length).fill(2),
      runs.map((r) => r.stderr).join(''),
    );
    for (const r of runs) assert.equal(r.stdout, '');
    assert.equal(runs[0]!.stderr, 'error: --max-concurrency must be a number, got "lots"\n');
    assert.equal(runs[1]!.stderr, 'error: --max-concurrency must be an integer, got "2.5"\n');
    assert.equal(runs[2]!.stderr, 'error: --max-rate must be a number, got "fast"\n');
    assert.match(runs[3]!.stderr, /--max-rate must be a number, got ""/);
    assert.equal(runs[4]!.stderr, 'error: --label-filter must be key=value or key, got "=oslo"\n');
    assert.equal(runs[5]!.stderr, 'error: give --label-filter or --clear-label-filters, not both\n');
    assert.match(runs[6]!.stderr, /--max-rate must be a number, got "5\/s"/);
    assert.match(runs[7]!.stderr, /--label-filter must be key=value or key, got ""/);
    assert.match(runs[8]!.stderr, /missing required argument 'connector'/);
    assert.equal((await stored()).updateTime, updateTime, 'nothing was sent');
    const after = (await s.api('GET', `projects/${s.projectId}/dataconnectors`)).body.dataConnectors.length;
    assert.equal(after, count, 'nothing was created');
  });

  it("exit 1 with the service's message for values out of its bounds; nothing changes", async () => {
    const before = await stored();
    const count = (await s.api('GET', `projects/${s.projectId}/dataconnectors`)).body.dataConnectors.length;
    const runs = await Promise.all([
      s.run(['connectors', 'update', dcId, '--max-concurrency', '0']),
      s.run(['connectors', 'update', dcId, '--max-concurrency', '65', '--max-rate', '1']),
      s.run(['connectors', 'update', dcId, '--max-rate', '-1']),
      s.run(['connectors', 'create', '--url', URL, '--max-rate', '10001']),
      s.run(['connectors', 'update', dcId, '--label-filter', 'site/room=x']),
      s.run(['connectors', 'update', dcId, '--label-filter', '__proto__']),
    ]);
    assert.deepEqual(
      runs.map((r) => r.code),
      [1, 1, 1, 1, 1, 1],
      runs.map((r) => r.stderr).join(''),
    );
    for (const r of runs) assert.equal(r.stdout, '');
    assert.match(runs[0]!.stderr, /^error: deliveryConfig\.maxConcurrency must be a whole number from 1 to 64/);
    assert.match(runs[1]!.stderr, /^error: deliveryConfig\.maxConcurrency must be/);
    assert.match(runs[2]!.stderr, /^error: deliveryConfig\.maxRate must be/);
    assert.match(runs[3]!.stderr, /^error: deliveryConfig\.maxRate must be .*10000/);
    assert.match(runs[4]!.stderr, /^error: deliveryConfig\.labelFilters: label key must not contain '\/'/);
    assert.match(runs[5]!.stderr, /^error: deliveryConfig\.labelFilters: label key __proto__ is reserved/);
    const after = await stored();
    assert.deepEqual([after.updateTime, after.deliveryConfig], [before.updateTime, before.deliveryConfig]);
    assert.equal(
      (await s.api('GET', `projects/${s.projectId}/dataconnectors`)).body.dataConnectors.length,
      count,
      'nothing was created',
    );
  });

  it('exit 1 for pause and resume of an unknown connector', async () => {
    const [pause, resume] = await Promise.all([
      s.run(['connectors', 'pause', 'cvq2b1r0l4l9s3f2a9m0']),
      s.run(['connectors', 'resume', 'cvq2b1r0l4l9s3f2a9m0']),
    ]);
    assert.deepEqual([pause.code, resume.code], [1, 1]);
    assert.match(pause.stderr, /not found/);
    assert.match(resume.stderr, /not found/);
  });
});

describe('completion', () => {
  before(ready);

  it('bash completes pause, resume and the new options', async () => {
    const bash = await s.run(['completion', 'bash']);
    assert.equal(bash.code, 0, bash.stderr);
    const complete = (words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `${bash.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _sensorcloud; echo "\${COMPREPLY[*]}"`,
        ],
        { encoding: 'utf8' },
      ).trim();
    assert.equal(complete(['sensorcloud', 'connectors', 'pa']), 'pause');
    assert.equal(complete(['sensorcloud', 'connectors', 'res']), 'resume resend');
    assert.equal(complete(['sensorcloud', 'connectors', 'create', '--max-']), '--max-concurrency --max-rate');
    assert.equal(complete(['sensorcloud', 'connectors', 'create', '--la']), '--label-keys --label-filter');
    assert.equal(complete(['sensorcloud', 'connectors', 'update', 'x', '--clear-l']), '--clear-label-filters');
  });
});

describe('parsing', () => {
  it('--label-filter: key=value, key and key= (present), the last of a key wins', () => {
    assert.deepEqual(parseLabelFilters(['site=oslo', 'floor', 'room=', 'a=b=c', 'site=bergen']), {
      site: 'bergen',
      floor: '',
      room: '',
      a: 'b=c',
    });
    assert.deepEqual(parseLabelFilters(undefined), {});
    assert.deepEqual(Object.keys(parseLabelFilters(['__proto__=x'])), ['__proto__'], 'sent, for the service to refuse');
    for (const bad of ['', '=x', ' =x', '='])
      assert.throws(() => parseLabelFilters([bad]), UsageError, JSON.stringify(bad));
  });

  it('the body and mask an update sends: only the keys given', () => {
    assert.deepEqual(deliveryInput({}), { config: {}, mask: [] });
    assert.deepEqual(deliveryInput({ maxRate: '0' }), {
      config: { maxRate: 0 },
      mask: ['deliveryConfig.maxRate'],
    });
    assert.deepEqual(deliveryInput({ maxConcurrency: '16', labelFilter: ['a=1'] }), {
      config: { maxConcurrency: 16, labelFilters: { a: '1' } },
      mask: ['deliveryConfig.maxConcurrency', 'deliveryConfig.labelFilters'],
    });
    assert.deepEqual(deliveryInput({ clearLabelFilters: true }), {
      config: { labelFilters: {} },
      mask: ['deliveryConfig.labelFilters'],
    });
    assert.throws(() => deliveryInput({ maxConcurrency: '1e', maxRate: '1' }), /--max-concurrency must be a number/);
    assert.throws(() => deliveryInput({ maxRate: 'Infinity' }), /--max-rate must be a number/);
  });

  it('how the controls read', () => {
    assert.equal(labelFiltersText({}), '(every device)');
    assert.equal(labelFiltersText({ site: 'oslo', floor: '' }), 'site=oslo, floor (any value)');
    assert.equal(limitsText({ maxConcurrency: 64, maxRate: 0, labelFilters: {}, paused: false }), '-');
    assert.equal(limitsText({ maxConcurrency: 2, maxRate: 0, labelFilters: {}, paused: true }), '2 at once');
    assert.equal(limitsText({ maxConcurrency: 64, maxRate: 0.5, labelFilters: {}, paused: false }), '0.5/s');
    assert.equal(limitsText(undefined), '-');
  });
});
