// `npm run fuzz -- --runs N [--seed S]`: a deeper fuzz campaign than the suite's (campaign.ts), with progress.
// Exits 1 with the failing request (shrunk by fast-check) when a property fails.
import { parseArgs } from 'node:util';
import { runApiCampaign } from './campaign.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '10000' }, seed: { type: 'string' } } });
const runs = Number(values.runs);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
  process.stderr.write('usage: npm run fuzz -- --runs <N> [--seed <S>]\n');
  process.exit(2);
}
process.stdout.write(`fuzz: ${runs} requests, seed ${seed} (repeat with --seed ${seed})\n`);
const started = Date.now();
try {
  const report = await runApiCampaign({ runs, seed, log: (line) => process.stdout.write(`${line}\n`) });
  process.stdout.write(`fuzz: passed in ${Math.round((Date.now() - started) / 1000)} s: ${JSON.stringify(report)}\n`);
} catch (err) {
  process.stderr.write(`fuzz: FAILED (seed ${seed})\n${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
