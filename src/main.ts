// Composition root: config → deps → store → bootstrap → api (+ background work) → listen.
import { join } from 'node:path';
import { createAccessTokenSigner } from './auth/access-tokens.ts';
import { loadOrCreateMasterKey } from './auth/master-key.ts';
import { createSecretBox } from './auth/secret-box.ts';
import { createApp, type App } from './api/app.ts';
import type { Config } from './config.ts';
import type { Deps } from './deps.ts';
import { createEventPipeline } from './events/pipeline.ts';
import { createThreadedDispatcher } from './delivery/dispatcher-thread.ts';
import { createDeliveryEngine } from './delivery/engine.ts';
import { withDeliveryQueue } from './delivery/enqueue.ts';
import { createHandoffPort, type HandoffPort } from './delivery/handoff.ts';
import { startRetention } from './events/retention.ts';
import { startDemo } from './emulator/demo.ts';
import { createHeartbeats } from './emulator/heartbeats.ts';
import { systemClock, type Clock } from './runtime/clock.ts';
import { createIdGenerator } from './runtime/ids.ts';
import { createLogger, type Logger } from './runtime/logger.ts';
import { systemRandom, type Random } from './runtime/random.ts';
import { bootstrapIfEmpty } from './services/bootstrap.ts';
import { createSqliteStore } from './store/sqlite/index.ts';
import type { Store } from './store/store.ts';

export interface DepsOverrides {
  clock?: Clock;
  random?: Random;
  logger?: Logger;
  store?: Store;
}

/**
 * The services' dependencies, and what the composition root keeps for the delivery engine: the hand-off port (the
 * same object the services know only as `delivery`, its one notice).
 */
export interface BuiltDeps extends Deps {
  handoff: HandoffPort;
}

export function buildDeps(config: Config, overrides: DepsOverrides = {}): BuiltDeps {
  const clock = overrides.clock ?? systemClock;
  const random = overrides.random ?? systemRandom;
  const logger = overrides.logger ?? createLogger({ level: config.logLevel });
  const store = overrides.store ?? createSqliteStore(join(config.dataDir, 'sensorcloud.db'), { logger });
  const masterKey = loadOrCreateMasterKey(config.dataDir, random);
  const ids = createIdGenerator(clock, random);
  const handoff = createHandoffPort();
  return {
    config, clock, random, logger, store, ids,
    secretBox: createSecretBox(masterKey, random),
    tokens: createAccessTokenSigner(masterKey),
    events: withDeliveryQueue(createEventPipeline({ store, clock, ids, logger }), clock, handoff),
    delivery: handoff,
    handoff,
  };
}

export interface Service {
  deps: BuiltDeps;
  app: App;
  /** Base URL the server listens on. */
  url: string;
  close(): Promise<void>;
}

/** Starts everything and listens. Resolves once the port is open. */
export async function startService(config: Config, overrides: DepsOverrides = {}): Promise<Service> {
  const deps = buildDeps(config, overrides);
  const boot = await bootstrapIfEmpty(deps);
  if (boot) deps.logger.info({ file: boot.file }, 'first start: created organization, project, admin user and service account; credentials written to bootstrap.json');
  // Built before listening so a bad SENSORCLOUD_CA_FILE fails the start before the port opens.
  const dispatcher = createThreadedDispatcher({ config, logger: deps.logger, clock: deps.clock });
  const app = await createApp(deps);
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  const retention = startRetention(deps);
  const heartbeats = createHeartbeats(deps);
  heartbeats.start();
  const engine = createDeliveryEngine(deps, dispatcher);
  engine.start();
  const demo = config.demo ? await startDemo(deps, boot ? { projectId: boot.contents.project.split('/')[1]! } : {}) : null;
  let closed = false;
  return {
    deps, app, url,
    async close() {
      if (closed) return;
      closed = true;
      await retention.stop();
      await demo?.stop();
      await heartbeats.stop();
      await app.close();
      await engine.stop();
      await dispatcher.close();
      await deps.store.close();
    },
  };
}
