// The `sensorcloud` command. `serve` runs the service; client commands talk to a running one over HTTP.
import { Command } from 'commander';
import { registerServeCommand } from './serve.ts';

const program = new Command();
program.name('sensorcloud').description('Sensor Cloud: a self-hostable cloud for networked sensor devices');
registerServeCommand(program);
await program.parseAsync(process.argv);
