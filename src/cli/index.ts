// The `sensorcloud` command. `serve` runs the service; every other command is a client of a running one over the
// public /v2 API. Exit codes: 0 ok, 1 API error, 2 usage error, 3 authentication error (errors.ts).
import { Command, CommanderError, Option } from 'commander';
import { registerCommands } from './commands/index.ts';
import { CliError, EXIT_API, EXIT_OK, EXIT_USAGE } from './errors.ts';
import { Output } from './output.ts';
import { registerServeCommand } from './serve.ts';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('sensorcloud')
    .description('Sensor Cloud: a self-hostable cloud for networked sensor devices, and its command-line client')
    // Before any subcommand is added, so every one of them inherits it: usage errors become exit 2 here.
    .exitOverride()
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .option('--profile <name>', 'use this saved profile (env SENSORCLOUD_PROFILE; default: the current one)')
    .option('--project <project>', 'project id or projects/<id> (default: the profile\'s project, else the only one visible)')
    .option('--json', 'print one JSON document (NDJSON for streams) instead of a table')
    .option('-q, --quiet', 'print only names (or nothing); no notes or progress')
    .addOption(new Option('--no-color', 'no colours (also when NO_COLOR is set or output is not a terminal)'));
  program.addHelpText('after', `
Examples:
  $ sensorcloud login --from data/bootstrap.json
  $ sensorcloud projects list
  $ sensorcloud devices create --type temperature --label name="Room 4"
  $ sensorcloud events tail --type touch

Environment: SENSORCLOUD_URL, SENSORCLOUD_KEY_ID and SENSORCLOUD_KEY_SECRET (optional SENSORCLOUD_SERVICE_ACCOUNT,
SENSORCLOUD_PROJECT) override the profile, so CI needs no login. Exit codes: 0 ok, 1 API error, 2 usage error,
3 authentication error.
`);
  registerServeCommand(program);
  registerCommands(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  // `sensorcloud … | head` closes the pipe early: that is not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(EXIT_OK);
    throw err;
  });
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return EXIT_OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander printed the message (or the help) already.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0) return EXIT_OK;
      return EXIT_USAGE;
    }
    const out = new Output(program.opts());
    if (err instanceof CliError) {
      out.error(err.message);
      return err.exitCode;
    }
    out.error(`unexpected failure: ${(err as Error).stack ?? String(err)}`);
    return EXIT_API;
  }
}

const code = await main(process.argv);
// `serve` keeps running (its listener holds the process); every other command ends here.
if (code !== EXIT_OK) process.exit(code);
else process.exitCode = code;
