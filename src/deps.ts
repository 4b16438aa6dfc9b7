// The dependency bundle main.ts builds once and passes down. Nothing in the service is a module singleton.
import type { AlertNotices } from './alerts/notices.ts';
import type { AccessTokenSigner } from './auth/access-tokens.ts';
import type { LoginThrottle } from './auth/login-throttle.ts';
import type { PasswordCheckSlots } from './auth/password-check-slots.ts';
import type { SecretBox } from './auth/secret-box.ts';
import type { Config } from './config.ts';
import type { DeliveryNotices } from './delivery/handoff.ts';
import type { EventPipeline } from './events/pipeline.ts';
import type { Clock } from './runtime/clock.ts';
import type { IdGenerator } from './runtime/ids.ts';
import type { Logger } from './runtime/logger.ts';
import type { Random } from './runtime/random.ts';
import type { Store } from './store/contract/store.ts';

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
  /** What the services tell delivery (a connector's queue was dropped); how the engine works is not theirs. */
  delivery: DeliveryNotices;
  /** What the services tell the alerts engine: a transition to announce, notifications to send, a connector enabled. */
  alerts: AlertNotices;
  /** Password logins: the throttle of failed ones, and the checks that may run at once (the state of this process). */
  logins: { throttle: LoginThrottle; slots: PasswordCheckSlots };
}
