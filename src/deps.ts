// The dependency bundle main.ts builds once and passes down. Nothing in the service is a module singleton.
import type { AccessTokenSigner } from './auth/access-tokens.ts';
import type { SecretBox } from './auth/secret-box.ts';
import type { Config } from './config.ts';
import type { HandoffPort } from './delivery/queue.ts';
import type { EventPipeline } from './events/pipeline.ts';
import type { Clock } from './runtime/clock.ts';
import type { IdGenerator } from './runtime/ids.ts';
import type { Logger } from './runtime/logger.ts';
import type { Random } from './runtime/random.ts';
import type { Store } from './store/store.ts';

export interface Deps {
  config: Config;
  clock: Clock;
  random: Random;
  ids: IdGenerator;
  store: Store;
  logger: Logger;
  secretBox: SecretBox;
  tokens: AccessTokenSigner;
  /** The one path every device event takes (store + reported + consumers, then subscribers). */
  events: EventPipeline;
  /** Where the running delivery engine takes fresh queue rows straight from the pipeline (delivery/queue.ts). */
  deliveryHandoff: HandoffPort;
}

/** Now, in integer microseconds (the store's time unit). */
export const nowMicros = (deps: Pick<Deps, 'clock'>): number => Math.floor(deps.clock.now() * 1000);
