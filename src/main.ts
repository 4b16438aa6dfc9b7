// Composition root: config → data dir lock → listen → deps → store → bootstrap → api (+ background work).
import type { Server } from 'node:http';
import { join } from 'node:path';
import { createAccessTokenSigner } from './auth/access-tokens.ts';
import { loginThrottleFor } from './auth/login-throttle.ts';
import { loadOrCreateMasterKey, MASTER_KEY_CHECK } from './auth/master-key.ts';
import { createPasswordCheckSlots } from './auth/password-check-slots.ts';
import { createSecretBox } from './auth/secret-box.ts';
import { createApp, type App } from './api/app.ts';
import { createApiServer, listenApiServer } from './api/http-server.ts';
import { withListeningPort, type Config } from './config.ts';
import type { Deps } from './deps.ts';
import { createEventPipeline } from './events/pipeline.ts';
import { createThreadedDispatcher } from './delivery/dispatcher-thread.ts';
import { createDeliveryEngine } from './delivery/engine.ts';
import { withDeliveryQueue } from './delivery/enqueue.ts';
import { createHandoffPort, type HandoffPort } from './delivery/handoff.ts';
import type { ConnectorHealthListener } from './delivery/health.ts';
import { createConnectorHealth } from './alerts/connector-health.ts';
import { createRuleEvaluator } from './alerts/evaluator.ts';
import { createAlertsPort, type AlertsPort } from './alerts/notices.ts';
import { createAlertAnnouncer } from './alerts/stream.ts';
import { createAlertTimers } from './alerts/timers.ts';
import { createConfiguredMailer } from './alerts/email.ts';
import { createNotifier } from './alerts/notifier.ts';
import { startRetention } from './events/retention.ts';
import { startClusterRelay } from './events/cluster-relay.ts';
import { startDemo } from './emulator/demo.ts';
import { createHeartbeats } from './emulator/heartbeats.ts';
import { systemClock, type Clock } from './runtime/clock.ts';
import { createIdGenerator } from './runtime/ids.ts';
import { createLogger, type Logger } from './runtime/logger.ts';
import { systemRandom, type Random } from './runtime/random.ts';
import { bootstrapIfEmpty } from './services/bootstrap.ts';
import { MASTER_KEY_CHECK_SETTING } from './store/jobs/cluster.ts';
import { explainDataDirError, lockDataDir, prepareDataDir } from './store/operations/data-dir.ts';
import { openConfiguredStore } from './store/operations/open.ts';
import { createSqliteStore } from './store/sqlite/index.ts';
import { StartupError } from './runtime/startup-error.ts';
import type { Store } from './store/contract/store.ts';

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
  /** Where the delivery engine tells of connectors' health (the alerts' dataConnector trigger listens). */
  health: ConnectorHealthListener;
  /** The alerts' port (the services' `alerts`), with the notifier's attachment. */
  alerts: AlertsPort;
}

export function buildDeps(config: Config, overrides: DepsOverrides = {}): BuiltDeps {
  const clock = overrides.clock ?? systemClock;
  const random = overrides.random ?? systemRandom;
  const logger = overrides.logger ?? createLogger({ level: config.logLevel });
  const store = overrides.store ?? createSqliteStore(join(config.dataDir, 'sensorcloud.db'), { logger });
  const masterKey = loadOrCreateMasterKey(config, random);
  const ids = createIdGenerator(clock, random);
  const handoff = createHandoffPort();
  const events = withDeliveryQueue(createEventPipeline({ store, clock, ids, logger }), clock, handoff);
  // Notification rules (extensions §X5): evaluated in the pipeline after the delivery queue's consumer, and told of
  // connectors' health by the delivery engine.
  const announce = createAlertAnnouncer(events, () => ids.next());
  // The connector-health trigger needs the port and the port tells it of enabled connectors: the port calls it late.
  const alerts = createAlertsPort(announce, (c) => health.enabled(c));
  const alerting = { store, clock, logger, ids, announce, notify: alerts.notify };
  events.addConsumer(createRuleEvaluator(alerting));
  const health = createConnectorHealth(alerting);
  return {
    config,
    clock,
    random,
    logger,
    store,
    ids,
    secretBox: createSecretBox(masterKey, random),
    tokens: createAccessTokenSigner(masterKey),
    events,
    delivery: handoff,
    handoff,
    health,
    alerts,
    logins: {
      throttle: loginThrottleFor(store, clock),
      slots: createPasswordCheckSlots(clock, config.passwordChecks.total, config.passwordChecks.perClient),
    },
  };
}

export interface Service {
  deps: BuiltDeps;
  app: App;
  /** Base URL the server listens on. */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts everything and listens; resolves once the API answers. The order keeps a start that fails from leaving
 * credentials behind: the data dir is checked and locked (one process per data dir), the port is bound, and only
 * then are the database, the master key and bootstrap.json created, bootstrap.json naming the URL actually
 * listened on. Mistakes of the operator are StartupErrors (or ConfigErrors, from loadConfig).
 */
export async function startService(config: Config, overrides: DepsOverrides = {}): Promise<Service> {
  prepareDataDir(config.dataDir, config.sources.dataDir);
  const lock = lockDataDir(config.dataDir, config.sources.dataDir);
  const undo: Array<() => unknown> = [() => lock.release()];
  try {
    const logger = overrides.logger ?? createLogger({ level: config.logLevel });
    // Before the port opens, so that a SENSORCLOUD_CA_FILE the TLS stack refuses fails the start before anything else.
    const dispatcher = createThreadedDispatcher({ config, logger, clock: overrides.clock ?? systemClock });
    undo.unshift(() => dispatcher.close());
    const api = createApiServer(config);
    const port = await listenApiServer(api, config);
    undo.unshift(() => closeServer(api.server));

    let deps: BuiltDeps;
    try {
      const store = overrides.store ?? (await openConfiguredStore(config, logger));
      undo.unshift(() => store.close());
      deps = buildDeps(withListeningPort(config, port), { ...overrides, logger, store });
    } catch (err) {
      throw explainDataDirError(err, config.dataDir, config.sources.dataDir) ?? err;
    }
    await checkClusterMasterKey(deps);
    const boot = await bootstrapIfEmpty(deps).catch((err: unknown) => {
      throw explainDataDirError(err, config.dataDir, config.sources.dataDir) ?? err;
    });
    if (boot)
      deps.logger.info(
        { file: boot.file },
        'first start: created organization, project, admin user and service account; credentials written to bootstrap.json',
      );
    const app = await createApp(deps, { server: api });
    await app.ready();
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = `http://${host}:${port}`;
    const relay = await startClusterRelay(deps, deps.ids.next());
    const retention = startRetention(deps);
    const heartbeats = createHeartbeats(deps);
    heartbeats.start();
    const engine = createDeliveryEngine(deps, dispatcher, {
      leaseMs: config.deliveryLeaseMs,
      deliveryLog: config.deliveryLog,
    });
    engine.start();
    // Notification rules (extensions §X5): the notifier sends what transitions queue (through the same dispatcher as
    // pushes, and the SMTP relay when one is set); the timers fire trigger delays, escalations and reminders.
    const mailer = createConfiguredMailer(config, deps.logger);
    const notifier = createNotifier({ ...deps, dispatcher, mailer });
    notifier.start();
    deps.alerts.attachNotifier(notifier.wake);
    const timers = createAlertTimers({ ...deps, announce: deps.alerts.announce, notify: deps.alerts.notify });
    timers.start();
    const demo = config.demo
      ? await startDemo(deps, boot ? { projectId: boot.contents.project.split('/')[1]! } : {})
      : null;
    let closed = false;
    return {
      deps,
      app,
      url,
      async close() {
        if (closed) return;
        closed = true;
        relay.stop();
        await retention.stop();
        await demo?.stop();
        await heartbeats.stop();
        await timers.stop();
        // No new connections from here, and a 503 with the error body for requests on open ones; the app's close
        // ends the event streams, then the server has closed.
        api.refuse('the service is stopping');
        const serverClosed = closeServer(api.server);
        await app.close();
        await serverClosed;
        await engine.stop();
        deps.alerts.attachNotifier(null);
        await notifier.stop();
        mailer?.close();
        await dispatcher.close();
        await deps.store.close();
        lock.release();
      },
    };
  } catch (err) {
    for (const step of undo)
      await Promise.resolve()
        .then(step)
        .catch(() => undefined);
    throw err;
  }
}

/**
 * Every process of a cluster must hold the key the database's secrets are sealed with. The first process to start
 * seals a check value; a process whose key cannot open it refuses to start, rather than failing requests later.
 */
async function checkClusterMasterKey(deps: BuiltDeps): Promise<void> {
  const cluster = deps.store.cluster;
  if (cluster === null) return;
  const sealed = await cluster.settle(MASTER_KEY_CHECK_SETTING, deps.secretBox.seal(MASTER_KEY_CHECK));
  let opened: string | null = null;
  try {
    opened = deps.secretBox.open(sealed);
  } catch {
    opened = null;
  }
  if (opened !== MASTER_KEY_CHECK) {
    throw new StartupError(
      `the master key ${deps.config.masterKeyFile} is not the one this database's secrets are sealed with: give every process the cluster's key with SENSORCLOUD_MASTER_KEY_FILE (docs/deployment.md)`,
    );
  }
}

/** Stops accepting connections and resolves once every open one has ended (idle keep-alive ones are closed now). */
function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
