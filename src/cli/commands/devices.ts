// `devices`: list (every filter of the API, across projects too), get, labels (set/remove on one device, batch on
// many), transfer, and the emulator's create and delete under their everyday names.
import type { Command } from 'commander';
import type {
  BatchUpdateDevicesRequest,
  BatchUpdateDevicesResponse,
  Device,
  Label,
  TransferDevicesRequest,
  TransferDevicesResponse,
} from '../../wire/devices.ts';
import { collect, parseInteger, parsePairs } from '../arguments.ts';
import { action, example, idOf, type Context } from '../context.ts';
import { ApiError, UsageError } from '../errors.ts';
import { createEmulatedDevice, deleteEmulatedDevice, withCreateOptions } from './emulator.ts';
import { deviceColumns, organizationName, printDevice } from './resources.ts';

interface ListOptions {
  type?: string[];
  label?: string[];
  productNumber?: string[];
  id?: string[];
  query?: string;
  orderBy?: string;
  allProjects?: boolean;
  organization?: string;
  in?: string[];
  limit?: string;
}

export function registerDeviceCommands(program: Command): void {
  const devices = program.command('devices').description('devices, their labels and transfers');

  example(
    devices
      .command('list')
      .description('devices of the project (or of several projects with --all-projects), every page')
      .option('--type <type>', 'device type (repeatable, ORed)', collect)
      .option(
        '--label <key[=value]>',
        'label filter: key=value exact, key present (repeatable, all must hold)',
        collect,
      )
      .option('--product-number <number>', 'product number (repeatable)', collect)
      .option('--id <device-id>', 'device id (repeatable)', collect)
      .option('--query <text>', 'id, type, label key or value contains this')
      .option(
        '--order-by <path>',
        'name, type, productNumber, labels.<key>, reported.<type>.<field>; "-" prefix descends',
      )
      .option('--all-projects', 'every readable project of --organization (default: the only organization)')
      .option('--organization <organization>', 'with --all-projects: the organization')
      .option('--in <project>', 'with --all-projects: only these projects (repeatable)', collect)
      .option('--limit <n>', 'at most this many devices')
      .action(
        action(async (ctx: Context, o: ListOptions) => {
          const query: Record<string, string | string[] | undefined> = {
            deviceTypes: o.type,
            labelFilters: o.label,
            productNumbers: o.productNumber,
            deviceIds: o.id,
            query: o.query,
            orderBy: o.orderBy,
          };
          let project: string;
          if (o.allProjects) {
            project = '-';
            if (o.in) query.projects = o.in.map((p) => (p.startsWith('projects/') ? p : `projects/${p}`));
            else query.organization = await organizationName(ctx, o.organization);
          } else {
            if (o.organization || o.in) throw new UsageError('--organization and --in go with --all-projects');
            project = await ctx.project();
          }
          const limit = o.limit === undefined ? Infinity : parseInteger(o.limit, '--limit', 1);
          const items = await ctx.client.list<Device>(`projects/${project}/devices`, 'devices', query, limit);
          ctx.out.list(
            items,
            o.allProjects
              ? [{ header: 'PROJECT', value: (d: Device) => d.name.split('/')[1]! }, ...deviceColumns]
              : deviceColumns,
            (d) => d.name,
            'devices',
          );
        }),
      ),
    'sensorcloud devices list --type temperature --label room=4',
    'sensorcloud devices list --all-projects --order-by -reported.temperature.value',
  );

  example(
    devices
      .command('get <device>')
      .description('one device with its labels and latest reported values')
      .action(
        action(async (ctx: Context, device: string) => {
          printDevice(ctx, await ctx.client.call<Device>('GET', await ctx.name(device, 'devices')));
        }),
      ),
    'sensorcloud devices get emucvq2b1b0l4l9s3f2a9h0',
  );

  example(
    withCreateOptions(devices.command('create'))
      .description('create an emulated device (same as `emulator create`)')
      .action(action(createEmulatedDevice)),
    'sensorcloud devices create --type temperature --label name="Room 4"',
  );

  example(
    devices
      .command('delete <device>')
      .description('delete an emulated device with its history (same as `emulator delete`)')
      .action(action(deleteEmulatedDevice)),
    'sensorcloud devices delete emucvq2b1b0l4l9s3f2a9h0',
  );

  const labels = devices.command('labels').description('labels of devices');
  example(
    labels
      .command('set <device> <key=value...>')
      .description('add labels, or change their values')
      .action(
        action(async (ctx: Context, device: string, pairs: string[]) => {
          const name = await ctx.name(device, 'devices');
          const results: Label[] = [];
          for (const [key, value] of Object.entries(parsePairs(pairs, 'a label'))) {
            try {
              results.push(await ctx.client.call('POST', `${name}/labels`, { body: { key, value } }));
            } catch (err) {
              // The key exists (409): change its value instead.
              if (!(err instanceof ApiError && err.status === 409)) throw err;
              results.push(
                await ctx.client.call('PATCH', `${name}/labels/${encodeURIComponent(key)}`, { body: { value } }),
              );
            }
          }
          if (ctx.out.json) return ctx.out.printJson(results);
          ctx.out.list(
            results,
            [
              { header: 'KEY', value: (l) => l.key },
              { header: 'VALUE', value: (l) => l.value },
            ],
            (l) => l.name,
            'labels',
          );
        }),
      ),
    'sensorcloud devices labels set emucvq2b1b0l4l9s3f2a9h0 room=4 floor=2',
  );

  example(
    labels
      .command('remove <device> <key...>')
      .description('remove labels from a device')
      .action(
        action(async (ctx: Context, device: string, keys: string[]) => {
          const name = await ctx.name(device, 'devices');
          for (const key of keys) await ctx.client.call('DELETE', `${name}/labels/${encodeURIComponent(key)}`);
          ctx.out.done({}, `Removed ${keys.length} label${keys.length === 1 ? '' : 's'} from ${idOf(name)}.`);
        }),
      ),
    'sensorcloud devices labels remove emucvq2b1b0l4l9s3f2a9h0 floor',
  );

  example(
    labels
      .command('batch <device...>')
      .description('add and remove labels on many devices of the project in one call')
      .option('--add <key=value>', 'label to add or change (repeatable)', collect)
      .option('--remove <key>', 'label key to remove (repeatable)', collect)
      .action(
        action(async (ctx: Context, list: string[], o: { add?: string[]; remove?: string[] }) => {
          if (!o.add && !o.remove) throw new UsageError('give --add key=value or --remove key');
          const names = await Promise.all(list.map((d) => ctx.name(d, 'devices')));
          const project = `projects/${await ctx.project()}`;
          const body: BatchUpdateDevicesRequest = {
            devices: names,
            addLabels: o.add ? parsePairs(o.add, '--add') : undefined,
            removeLabels: o.remove,
          };
          const res = await ctx.client.call<BatchUpdateDevicesResponse>('POST', `${project}/devices:batchUpdate`, {
            body,
          });
          if (ctx.out.json) return ctx.out.printJson(res);
          for (const e of res.batchErrors) ctx.out.error(`${e.device}: ${e.status.code} ${e.status.message}`);
          if (!ctx.out.quiet)
            ctx.out.line(`Labels changed on ${names.length - res.batchErrors.length} of ${names.length} devices.`);
          if (res.batchErrors.length > 0)
            throw new ApiError(
              `${res.batchErrors.length} device${res.batchErrors.length === 1 ? '' : 's'} not changed`,
              200,
            );
        }),
      ),
    'sensorcloud devices labels batch d1 d2 --add room=4 --remove draft',
  );

  example(
    devices
      .command('transfer <device...>')
      .description('move devices (ids or projects/<source>/devices/<id>) into a project, with labels and history')
      .requiredOption('--to <project>', 'the target project')
      .action(
        action(async (ctx: Context, list: string[], o: { to: string }) => {
          const target = o.to.startsWith('projects/') ? o.to : `projects/${o.to}`;
          // A bare id is looked up in every readable project, to name its source project.
          const names = await Promise.all(
            list.map(async (d) =>
              d.startsWith('projects/') ? d : (await ctx.client.call<Device>('GET', `projects/-/devices/${d}`)).name,
            ),
          );
          const body: TransferDevicesRequest = { devices: names };
          const res = await ctx.client.call<TransferDevicesResponse>('POST', `${target}/devices:transfer`, { body });
          if (ctx.out.json) return ctx.out.printJson(res);
          for (const e of res.transferErrors) ctx.out.error(`${e.device}: ${e.status.code} ${e.status.message}`);
          if (ctx.out.quiet) for (const n of res.transferredDevices) ctx.out.line(n);
          else ctx.out.line(`Transferred ${res.transferredDevices.length} of ${names.length} devices into ${target}.`);
          if (res.transferErrors.length > 0)
            throw new ApiError(
              `${res.transferErrors.length} device${res.transferErrors.length === 1 ? '' : 's'} not transferred`,
              200,
            );
        }),
      ),
    'sensorcloud devices transfer emucvq2b1b0l4l9s3f2a9h0 --to cvq2b1b0l4l9s3f2a9g1',
  );
}
