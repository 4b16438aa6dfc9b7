// What every scenario gets: the settings of this run (full or --quick), the shared TLS material and receiver,
// a progress logger, the ceiling measured earlier in the same run, and a service starter.
import type { Receiver } from './receiver.ts';
import type { ServiceProcess } from './service.ts';
import type { BenchTls } from './tls.ts';

export interface Settings {
  quick: boolean;
  /** Closed-loop concurrency, the same for the ceiling and the service. */
  concurrency: number;
  /** Devices the publish load is spread over. */
  devices: number;
  throughputMs: number;
  warmupMs: number;
  latencyRates: number[];
  latencyMs: number;
  latencyGraceMs: number;
  drainTimeoutMs: number;
  publishMs: number;
  fanoutConnectors: number;
  fanoutEvents: number;
  fanoutTimeoutMs: number;
  isolationSilent: number;
  isolationRate: number;
  isolationMs: number;
  backlogEvents: number;
  backlogRealMax: number;
  backlogRealMs: number;
  backlogRateMs: number;
  backlogDrainMs: number;
  apiMs: number;
  apiDevices: number;
  memoryProjects: number;
  memoryConnectorsPerProject: number;
  memoryDevicesPerProject: number;
  memoryIdleMs: number;
  memoryLoadMs: number;
}

export function settingsFor(quick: boolean, concurrency: number): Settings {
  return {
    quick,
    concurrency,
    devices: 10,
    throughputMs: quick ? 5_000 : 30_000,
    warmupMs: quick ? 1_000 : 3_000,
    latencyRates: [500, 1000, 2000],
    latencyMs: quick ? 2_000 : 6_000,
    latencyGraceMs: quick ? 1_500 : 4_000,
    drainTimeoutMs: quick ? 5_000 : 20_000,
    publishMs: quick ? 3_000 : 15_000,
    fanoutConnectors: 100,
    fanoutEvents: quick ? 50 : 600,
    fanoutTimeoutMs: quick ? 8_000 : 30_000,
    isolationSilent: 50,
    isolationRate: 500,
    isolationMs: quick ? 2_000 : 10_000,
    backlogEvents: quick ? 20_000 : 1_000_000,
    backlogRealMax: quick ? 5_000 : 50_000,
    backlogRealMs: quick ? 5_000 : 20_000,
    backlogRateMs: quick ? 3_000 : 10_000,
    // Long enough for PostgreSQL's drain of 1,000,000 rows (~13,000/s here); SQLite's ends in about 45 s.
    backlogDrainMs: quick ? 10_000 : 120_000,
    apiMs: quick ? 2_000 : 8_000,
    apiDevices: 150,
    memoryProjects: quick ? 10 : 100,
    memoryConnectorsPerProject: 100,
    memoryDevicesPerProject: 1_000,
    memoryIdleMs: quick ? 2_000 : 5_000,
    memoryLoadMs: quick ? 4_000 : 15_000,
  };
}

export interface BenchContext {
  settings: Settings;
  tls: BenchTls;
  receiver: Receiver;
  log: (line: string) => void;
  /** Filled by the ceiling scenario: relay forwards per second at the shared concurrency. */
  ceiling: { throughput: number | null };
  /** Extra node flags for the service (e.g. --cpu-prof when --profile is given). */
  serviceNodeArgs: string[];
  /** `env`: settings of this service only (e.g. the delivery log turned off). */
  startService(env?: Record<string, string>): Promise<ServiceProcess>;
}

export type ScenarioStatus = 'pass' | 'fail' | 'info' | 'incomplete' | 'skipped' | 'error';

export interface Check {
  what: string;
  value: number | null;
  goal: string;
  pass: boolean | null;
}

export interface ScenarioResult {
  name: string;
  title: string;
  status: ScenarioStatus;
  /** One line for the summary table. */
  headline: string;
  goal: string | null;
  checks: Check[];
  ratioToCeiling: number | null;
  figures: Record<string, unknown>;
  notes: string[];
  durationSeconds: number;
}

export interface Scenario {
  name: string;
  title: string;
  goal: string | null;
  /** Scenarios that report a ratio to the ceiling need it measured in the same run. */
  needsCeiling: boolean;
  run(ctx: BenchContext, out: ScenarioOutput): Promise<void>;
}

/** What a scenario fills in while it runs; whatever it measured survives a later failure. */
export class ScenarioOutput {
  headline = '';
  checks: Check[] = [];
  ratioToCeiling: number | null = null;
  figures: Record<string, unknown> = {};
  notes: string[] = [];

  check(what: string, value: number | null, goal: string, pass: boolean | null): void {
    this.checks.push({ what, value, goal, pass });
  }
}
