// Every client command group, registered in the order `sensorcloud --help` lists them.
import type { Command } from 'commander';
import { registerCompletionCommand } from './completion.ts';
import { registerConnectorCommands } from './connectors.ts';
import { registerDeviceCommands } from './devices.ts';
import { registerEmulatorCommands } from './emulator.ts';
import { registerEventCommands } from './events.ts';
import { registerInviteCommands } from './invites.ts';
import { registerKeyCommands } from './keys.ts';
import { registerListenCommand } from './listen.ts';
import { registerLoginCommands } from './login.ts';
import { registerMemberCommands } from './members.ts';
import { registerOrganizationCommands } from './organizations.ts';
import { registerProjectCommands } from './projects.ts';
import { registerRoleCommands } from './roles.ts';
import { registerServiceAccountCommands } from './service-accounts.ts';

export function registerCommands(program: Command): void {
  registerLoginCommands(program);
  registerOrganizationCommands(program);
  registerProjectCommands(program);
  registerMemberCommands(program);
  registerInviteCommands(program);
  registerRoleCommands(program);
  registerServiceAccountCommands(program);
  registerKeyCommands(program);
  registerDeviceCommands(program);
  registerEmulatorCommands(program);
  registerEventCommands(program);
  registerConnectorCommands(program);
  registerListenCommand(program);
  registerCompletionCommand(program);
}
