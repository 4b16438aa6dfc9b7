// `emulator`: emulated devices (create, replace labels, delete) and publishing any of the 18 publishable event
// types with typed options (publish-options.ts). `devices create`, `devices delete` and `events publish` are the
// same commands under their everyday names.
import type { Command } from 'commander';
import { DEVICE_TYPE_NAMES } from '../../domain/device-types.ts';
import type { Device } from '../../wire/devices.ts';
import type { EmulatedDeviceInput, EmulatedDeviceReplacement } from '../../wire/emulator.ts';
import { collect, oneOf, parsePairs } from '../arguments.ts';
import { action, example, idOf, type Context } from '../context.ts';
import { addPublishOptions, publishBody } from '../publish-options.ts';
import { printDevice } from './resources.ts';

export const withCreateOptions = (command: Command) =>
  command
    .requiredOption('--type <type>', `device type: ${DEVICE_TYPE_NAMES.join(', ')}`)
    .option(
      '--label <key=value>',
      'label (repeatable); name and description are the display name and description',
      collect,
    )
    .option('--product-number <number>', "override the type's default product number");

export async function createEmulatedDevice(
  ctx: Context,
  o: { type: string; label?: string[]; productNumber?: string },
): Promise<void> {
  const body: EmulatedDeviceInput = {
    type: oneOf(o.type, DEVICE_TYPE_NAMES, '--type'),
    labels: parsePairs(o.label, '--label'),
    productNumber: o.productNumber,
  };
  printDevice(ctx, await ctx.client.call<Device>('POST', `projects/${await ctx.project()}/devices`, { body }));
}

export async function deleteEmulatedDevice(ctx: Context, device: string): Promise<void> {
  const name = await ctx.name(device, 'devices');
  ctx.out.done(await ctx.client.call('DELETE', name), `Deleted ${name}.`);
}

export async function publishEvent(
  ctx: Context,
  device: string,
  eventType: string,
  options: Record<string, unknown>,
): Promise<void> {
  const body = publishBody(eventType, options);
  const name = await ctx.name(device, 'devices');
  ctx.out.done(
    await ctx.client.call('POST', `${name}:publish`, { body }),
    `Published a ${eventType} event from ${idOf(name)}.`,
  );
}

export const publishCommand = (parent: Command, name: string) =>
  example(
    addPublishOptions(parent.command(`${name} <device> <event-type>`))
      .description('publish an event from an emulated device; it is stored, streamed and pushed to data connectors')
      .action(action(publishEvent)),
    'sensorcloud events publish emucvq2b1b0l4l9s3f2a9h0 temperature --value 21.5',
    'sensorcloud events publish emucvq2b1b0l4l9s3f2a9h0 objectPresent --state PRESENT --update-time 5m',
  );

export function registerEmulatorCommands(program: Command): void {
  const emulator = program.command('emulator').description('emulated devices and their events');

  example(
    withCreateOptions(emulator.command('create'))
      .description('create an emulated device (id emu…)')
      .action(action(createEmulatedDevice)),
    'sensorcloud emulator create --type humidity --label name="Cellar"',
  );

  example(
    emulator
      .command('update <device>')
      .description('replace the labels of an emulated device (virtual-sensor is kept); emits labelsChanged')
      .option('--label <key=value>', 'label (repeatable); labels not given are removed', collect)
      .action(
        action(async (ctx: Context, device: string, o: { label?: string[] }) => {
          const name = await ctx.name(device, 'devices');
          const current = await ctx.client.call<Device>('GET', name);
          const body: EmulatedDeviceReplacement = { type: current.type, labels: parsePairs(o.label, '--label') };
          printDevice(ctx, await ctx.client.call<Device>('PUT', name, { body }));
        }),
      ),
    'sensorcloud emulator update emucvq2b1b0l4l9s3f2a9h0 --label name="Room 5" --label room=5',
  );

  example(
    emulator
      .command('delete <device>')
      .description('delete an emulated device with its history')
      .action(action(deleteEmulatedDevice)),
    'sensorcloud emulator delete emucvq2b1b0l4l9s3f2a9h0',
  );

  publishCommand(emulator, 'publish');
}
