// The `sensorcloud` command. `serve` runs the service; every other command is a client of a running one over the
// public /v2 API. Exit codes: 0 ok, 1 API error, 2 usage error, 3 authentication error, 4 a check failed
// (errors.ts).
import { CommanderError } from 'commander';
import { CliError, EXIT_API, EXIT_OK, EXIT_USAGE } from './errors.ts';
import { Output } from './output.ts';
import { buildProgram } from './program.ts';

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
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0)
        return EXIT_OK;
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
