// Every route module, registered in one place.
import type { Deps } from '../../deps.ts';
import type { App } from '../types.ts';
import { registerAlertRoutes } from './alerts.ts';
import { registerContactRoutes } from './contacts.ts';
import { registerDataConnectorRoutes } from './data-connectors.ts';
import { registerDeliveryRoutes } from './deliveries.ts';
import { registerDeviceRoutes } from './devices.ts';
import { registerMetricsRoutes } from './metrics.ts';
import { registerEmulatorRoutes } from './emulator.ts';
import { registerEventRoutes } from './events.ts';
import { registerHealthRoutes } from './health.ts';
import { registerInviteRoutes } from './invites.ts';
import { registerMemberRoutes } from './members.ts';
import { registerOauthRoutes } from './oauth.ts';
import { registerOrganizationRoutes } from './organizations.ts';
import { registerProjectRoutes } from './projects.ts';
import { registerRoleRoutes } from './roles.ts';
import { registerRuleRoutes } from './rules.ts';
import { registerServiceAccountRoutes } from './service-accounts.ts';
import { registerStreamRoutes } from './stream.ts';

export async function registerRoutes(app: App, deps: Deps): Promise<void> {
  registerHealthRoutes(app, deps);
  registerRoleRoutes(app, deps);
  registerOrganizationRoutes(app, deps);
  registerProjectRoutes(app, deps);
  registerMemberRoutes(app, deps);
  registerInviteRoutes(app, deps);
  registerServiceAccountRoutes(app, deps);
  registerOauthRoutes(app, deps);
  registerDeviceRoutes(app, deps);
  registerEmulatorRoutes(app, deps);
  registerEventRoutes(app, deps);
  registerStreamRoutes(app, deps);
  registerDataConnectorRoutes(app, deps);
  registerDeliveryRoutes(app, deps);
  registerMetricsRoutes(app, deps);
  registerRuleRoutes(app, deps);
  registerContactRoutes(app, deps);
  registerAlertRoutes(app, deps);
}
