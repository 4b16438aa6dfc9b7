// The `sensorcloud` command tree: global options, `serve`, and every client command group. Building it loads
// no command's implementation beyond its definition (the service code of serve and admin is imported only when
// they run).
import { Command, Option } from 'commander';
import { packageVersion } from '../delivery/push-headers.ts';
import { registerAdminCommands } from './admin.ts';
import { registerCommands } from './commands/index.ts';
import { EXAMPLES, example } from './context.ts';
import { registerServeCommand } from './serve.ts';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('sensorcloud')
    .description('Sensor Cloud: a self-hostable cloud for networked sensor devices, and its command-line client')
    // Before any subcommand is added, so every one of them inherits it: usage errors become exit 2 here.
    .exitOverride()
    .version(packageVersion(), '-V, --version', 'print the version of sensorcloud')
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .option('--profile <name>', 'use this saved profile (env SENSORCLOUD_PROFILE; default: the current one)')
    .option(
      '--project <project>',
      "project id or projects/<id> (default: the profile's project, else the only one visible)",
    )
    .option('--json', 'print one JSON document (NDJSON for streams) instead of a table')
    .option('-q, --quiet', 'print only names (or nothing); no notes or progress')
    .addOption(new Option('--no-color', 'no colours (also when NO_COLOR is set or output is not a terminal)'));
  program.addHelpText(
    'after',
    `
Examples:
  $ sensorcloud login --from data/bootstrap.json
  $ sensorcloud projects list
  $ sensorcloud devices create --type temperature --label name="Room 4"
  $ sensorcloud events tail --type touch

Environment: SENSORCLOUD_URL, SENSORCLOUD_KEY_ID and SENSORCLOUD_KEY_SECRET (optional SENSORCLOUD_SERVICE_ACCOUNT,
SENSORCLOUD_PROJECT) override the profile, so CI needs no login. Exit codes: 0 ok, 1 API error, 2 usage error,
3 authentication error, 4 a check failed (\`connectors test\`: the push was not delivered).
`,
  );
  registerServeCommand(program);
  registerAdminCommands(program);
  registerCommands(program);
  // A group (`devices`, `devices labels` …) shows the first example of each of its first commands.
  const withGroupExamples = (command: Command): void => {
    for (const sub of command.commands) {
      if (sub.commands.length === 0) continue;
      withGroupExamples(sub);
      const lines = sub.commands
        .slice(0, 3)
        .map((c) => EXAMPLES.get(c)?.[0])
        .filter((l): l is string => l !== undefined);
      if (lines.length > 0) example(sub, ...lines);
    }
  };
  withGroupExamples(program);
  return program;
}
