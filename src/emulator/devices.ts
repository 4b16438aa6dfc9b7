// Emulated devices (contract §4.10): create, replace labels, delete. Callers authorise first (the API route
// checks emulator.* permissions; the demo and heartbeats act as the service itself). Label changes go through
// the event pipeline so the labelsChanged event is stored and queued in the same transaction.
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { DEVICE_TYPES, DEVICE_TYPE_NAMES } from '../domain/device-types.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { MAX_LABELS_PER_DEVICE, labelKeyProblem, labelValueProblem } from '../domain/labels.ts';
import { applyLabels, findProjectDevice, requireEmulated } from '../services/devices.ts';
import { inPieces } from '../store/jobs/in-pieces.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import type { EmulatedDeviceInput, EmulatedDeviceReplacement } from '../wire/emulator.ts';

/** The label every emulated device carries; the reference SDK and the console recognise emulated devices by it. */
export const VIRTUAL_SENSOR_LABEL = 'virtual-sensor';
export const MAX_PRODUCT_NUMBER_LENGTH = 64;

/** Label rules of §3.8 (shared with the label endpoints), plus the virtual-sensor marker. Keeps the given order. */
export function emulatedLabels(input: unknown): Record<string, string> {
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input)))
    throw badRequest('labels must be an object of strings');
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries((input ?? {}) as Record<string, unknown>)) {
    const problem = labelKeyProblem(key) ?? labelValueProblem(value);
    if (problem) throw badRequest(`labels: ${problem} (key "${key.slice(0, 130)}")`);
    out[key] = key === VIRTUAL_SENSOR_LABEL ? '' : (value as string);
  }
  out[VIRTUAL_SENSOR_LABEL] = '';
  if (Object.keys(out).length > MAX_LABELS_PER_DEVICE)
    throw badRequest(`labels: at most ${MAX_LABELS_PER_DEVICE} labels per device (virtual-sensor included)`);
  return out;
}

function checkType(type: unknown): string {
  if (typeof type !== 'string' || !DEVICE_TYPES[type])
    throw badRequest(`type must be one of ${DEVICE_TYPE_NAMES.join(', ')}`);
  return type;
}

/** Creates an emulated device: id `emu` + 20 characters, `reported` empty, no labelsChanged event (§5.4). */
export async function createEmulatedDevice(
  deps: Deps,
  projectId: string,
  input: EmulatedDeviceInput,
): Promise<DeviceRecord> {
  const type = checkType(input.type);
  const labels = emulatedLabels(input.labels);
  let productNumber = DEVICE_TYPES[type]!.productNumber;
  if (input.productNumber !== undefined) {
    if (typeof input.productNumber !== 'string' || input.productNumber.length > MAX_PRODUCT_NUMBER_LENGTH) {
      throw badRequest(`productNumber must be a string of at most ${MAX_PRODUCT_NUMBER_LENGTH} characters`);
    }
    productNumber = input.productNumber;
  }
  const now = nowMicros(deps);
  const device: DeviceRecord = {
    id: `emu${deps.ids.next()}`,
    projectId,
    type,
    productNumber,
    labels,
    reported: {},
    latestEvents: {},
    emulated: true,
    createTime: now,
    updateTime: now,
  };
  await deps.store.transaction(async (tx) => {
    if (!(await tx.projects.get(projectId))) throw notFound('project not found');
    await tx.devices.create(device);
  });
  return device;
}

/** Replaces the labels of an emulated device (PUT); emits labelsChanged when the set actually changed. */
export async function replaceEmulatedDevice(
  deps: Deps,
  projectId: string,
  deviceId: string,
  input: EmulatedDeviceReplacement,
): Promise<DeviceRecord> {
  const labels = emulatedLabels(input.labels);
  return deps.events.transaction(async (tx, emit) => {
    const device = requireEmulated(await findProjectDevice(tx, projectId, deviceId));
    if (input.type !== undefined && input.type !== device.type) {
      throw badRequest(`type cannot be changed: the device is of type ${device.type}`);
    }
    return applyLabels(deps, tx, emit, device, labels);
  });
}

/** Events of a history deleted per transaction: ~15 ms of SQLite's writer (a million events held it 1 s in one statement). */
export const HISTORY_PIECE = 5_000;

/**
 * Deletes an emulated device with its history and `reported`; deliveries already queued are kept. The history goes
 * first, a piece per transaction (store/jobs/in-pieces.ts); then the device with the events published meanwhile. Should
 * the process stop in the middle, the device is still there with the rest of its history, and a DELETE again ends it.
 */
export async function deleteEmulatedDevice(deps: Deps, projectId: string, deviceId: string): Promise<void> {
  requireEmulated(await findProjectDevice(deps.store, projectId, deviceId));
  await inPieces(deps.store, (tx) => tx.events.deleteByDevice(deviceId, HISTORY_PIECE));
  await deps.store.transaction(async (tx) => {
    requireEmulated(await findProjectDevice(tx, projectId, deviceId));
    await tx.devices.delete(deviceId);
  });
}
