// Every client command group, registered in the order `sensorcloud --help` lists them.
import type { Command } from 'commander';
import { registerAlertCommands } from './alerts.ts';
import { registerCompletionCommand } from './completion.ts';
import { registerConnectorCommands } from './connectors.ts';
import { registerContactCommands } from './contacts.ts';
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
import { registerRuleCommands } from './rules.ts';
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
  registerRuleCommands(program);
  registerAlertCommands(program);
  registerContactCommands(program);
  registerListenCommand(program);
  registerCompletionCommand(program);
}
