// Every route module, registered in one place.
import type { Deps } from '../../deps.ts';
import type { App } from '../app.ts';
import { registerHealthRoutes } from './health.ts';
import { registerOrganizationRoutes } from './organizations.ts';
import { registerRoleRoutes } from './roles.ts';

export async function registerRoutes(app: App, deps: Deps): Promise<void> {
  registerHealthRoutes(app, deps);
  registerRoleRoutes(app, deps);
  registerOrganizationRoutes(app, deps);
}
