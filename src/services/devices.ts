// Devices and labels (contract §3.7, §3.8, §4.6, §5.4): the device presenter, get, label CRUD, labels on many
// devices (batchUpdate) and transfer. Every label change that alters a device emits exactly one labelsChanged
// event through the pipeline, in the same transaction as the change.
import type { Deps } from '../deps.ts';
import { nowMicros } from '../runtime/clock.ts';
import { LABELS_CHANGED, presentReported } from '../domain/device-types.ts';
import { badRequest, conflict, notFound } from '../domain/errors.ts';
import { checkBatchSize } from '../domain/batches.ts';
import { MAX_LABELS_MESSAGE, MAX_LABELS_PER_DEVICE, labelKeyProblem, labelValueProblem } from '../domain/labels.ts';
import { concreteProjectId, deviceName, labelName, parseDeviceName } from '../domain/names.ts';
import type { Emit } from '../events/pipeline.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import type { Repos } from '../store/contract/store.ts';
import type {
  BatchError as WireBatchError,
  BatchUpdateDevicesRequest,
  BatchUpdateDevicesResponse,
  Device,
  Label,
  LabelInput,
  LabelPatch,
  TransferDevicesRequest,
  TransferDevicesResponse,
} from '../wire/devices.ts';
import { projectPermissions, requireProject } from './access.ts';
import type { Principal } from '../auth/principal.ts';

/** The wire shape of §3.7, keys in contract order. */
export function presentDevice(d: DeviceRecord): Device {
  return {
    name: deviceName(d.projectId, d.id),
    type: d.type,
    productNumber: d.productNumber,
    labels: { ...d.labels },
    reported: presentReported(d.type, d.reported),
  };
}

/** The wire shape of §3.8. */
export const presentLabel = (d: Pick<DeviceRecord, 'projectId' | 'id'>, key: string, value: string): Label => ({
  name: labelName(d.projectId, d.id, key),
  key,
  value,
});

export interface LabelsChanged {
  added: Record<string, string>;
  modified: Record<string, string>;
  removed: string[];
}

/** The labelsChanged data between two label sets (§5.2), or null when nothing changed. */
export function diffLabels(before: Record<string, string>, after: Record<string, string>): LabelsChanged | null {
  const change: LabelsChanged = { added: {}, modified: {}, removed: [] };
  for (const [k, v] of Object.entries(after)) {
    if (!Object.hasOwn(before, k)) change.added[k] = v;
    else if (before[k] !== v) change.modified[k] = v;
  }
  for (const k of Object.keys(before)) if (!Object.hasOwn(after, k)) change.removed.push(k);
  const changed = Object.keys(change.added).length + Object.keys(change.modified).length + change.removed.length > 0;
  return changed ? change : null;
}

/** Stores the new labels and emits labelsChanged when the set changed. Returns the device as it is now. */
export async function applyLabels(
  deps: Pick<Deps, 'clock'>,
  tx: Repos,
  emit: Emit,
  device: DeviceRecord,
  labels: Record<string, string>,
): Promise<DeviceRecord> {
  const change = diffLabels(device.labels, labels);
  if (!change) return device;
  const now = nowMicros(deps);
  const updated: DeviceRecord = { ...device, labels, updateTime: now };
  await tx.devices.updateLabels(device.id, labels, now);
  await emit(updated, LABELS_CHANGED, change, now);
  return updated;
}

/** GET one device; `-` finds it in any project the caller can read (§1.10). */
export async function getDevice(
  deps: Deps,
  principal: Principal,
  projectParam: string,
  deviceId: string,
): Promise<DeviceRecord> {
  if (projectParam === '-') {
    const device = await deps.store.devices.get(deviceId);
    if (!device) throw notFound('device not found');
    const project = await deps.store.projects.get(device.projectId);
    if (!project || !projectPermissions(principal, project).has('device.read')) throw notFound('device not found');
    return device;
  }
  await requireProject(deps, principal, projectParam, 'device.read');
  const device = await deps.store.devices.get(deviceId);
  if (!device || device.projectId !== projectParam) throw notFound('device not found');
  return device;
}

/** The device with this id in this project: 404 otherwise (also when it lives in another project). */
export async function findProjectDevice(
  repos: Pick<Repos, 'devices'>,
  projectId: string,
  deviceId: string,
): Promise<DeviceRecord> {
  const device = await repos.devices.get(deviceId);
  if (!device || device.projectId !== projectId) throw notFound('device not found');
  return device;
}

/** What opening a stream of the project's events (or of one device's) needs: device.read, and the device there. */
export async function requireStreamScope(
  deps: Deps,
  principal: Principal,
  projectId: string,
  deviceId: string | null,
): Promise<void> {
  await requireProject(deps, principal, projectId, 'device.read');
  if (deviceId !== null) await findProjectDevice(deps.store, projectId, deviceId);
}

/** Emulator operations (publish, replace, delete) touch emulated devices only (§1.4: 400 otherwise). */
export function requireEmulated(device: DeviceRecord): DeviceRecord {
  if (!device.emulated) throw badRequest(`device ${device.id} is not an emulated device`);
  return device;
}

export async function addLabel(
  deps: Deps,
  principal: Principal,
  projectParam: string,
  deviceId: string,
  body: LabelInput,
): Promise<{ device: DeviceRecord; key: string; value: string }> {
  const projectId = concreteProjectId(projectParam);
  await requireProject(deps, principal, projectId, 'device.update');
  // A proto3 JSON client leaves an empty value out; absent means "".
  const key = body.key;
  const value = body.value ?? '';
  const problem = labelKeyProblem(key) ?? labelValueProblem(value);
  return deps.events.transaction(async (tx, emit) => {
    const device = await findProjectDevice(tx, projectId, deviceId);
    if (problem) throw badRequest(problem);
    const k = key as string;
    if (Object.hasOwn(device.labels, k)) throw conflict(`label ${k} already exists on the device`);
    if (Object.keys(device.labels).length >= MAX_LABELS_PER_DEVICE) throw badRequest(MAX_LABELS_MESSAGE);
    const updated = await applyLabels(deps, tx, emit, device, { ...device.labels, [k]: value as string });
    return { device: updated, key: k, value: value as string };
  });
}

/** A label key named in a path: one that can never be stored (e.g. `__proto__`) is a 400, as when adding it. */
function checkPathKey(key: string): void {
  const problem = labelKeyProblem(key);
  if (problem) throw badRequest(problem);
}

export async function updateLabel(
  deps: Deps,
  principal: Principal,
  projectParam: string,
  deviceId: string,
  key: string,
  body: LabelPatch,
  mask: Set<string> | null,
): Promise<{ device: DeviceRecord; key: string; value: string }> {
  const projectId = concreteProjectId(projectParam);
  await requireProject(deps, principal, projectId, 'device.update');
  checkPathKey(key);
  for (const field of mask ?? [])
    if (field !== 'value' && field !== 'key') throw badRequest(`update_mask: unknown field ${field}`);
  if (body.key !== undefined && body.key !== '' && body.key !== key)
    throw badRequest('key in the body must match the label key in the path');
  const applyValue = mask === null || mask.has('value');
  const value = body.value ?? '';
  const problem = applyValue ? labelValueProblem(value) : null;
  return deps.events.transaction(async (tx, emit) => {
    const device = await findProjectDevice(tx, projectId, deviceId);
    if (!Object.hasOwn(device.labels, key)) throw notFound('label not found');
    if (problem) throw badRequest(problem);
    if (!applyValue) return { device, key, value: device.labels[key]! };
    const updated = await applyLabels(deps, tx, emit, device, { ...device.labels, [key]: value as string });
    return { device: updated, key, value: value as string };
  });
}

export async function deleteLabel(
  deps: Deps,
  principal: Principal,
  projectParam: string,
  deviceId: string,
  key: string,
): Promise<void> {
  const projectId = concreteProjectId(projectParam);
  await requireProject(deps, principal, projectId, 'device.update');
  checkPathKey(key);
  await deps.events.transaction(async (tx, emit) => {
    const device = await findProjectDevice(tx, projectId, deviceId);
    if (!Object.hasOwn(device.labels, key)) throw notFound('label not found');
    const labels = { ...device.labels };
    delete labels[key];
    await applyLabels(deps, tx, emit, device, labels);
  });
}

export type BatchErrorCode = 'INVALID_ARGUMENT' | 'NOT_FOUND' | 'PERMISSION_DENIED' | 'INTERNAL_ERROR';
/** The wire's batch error, its code narrowed to the ones this service gives. */
export type BatchError = WireBatchError & { status: { code: BatchErrorCode } };
const batchError = (device: string, code: BatchErrorCode, message: string): BatchError => ({
  device,
  status: { code, message },
});

/** Labels on many devices (§4.6 batchUpdate rules): per-device errors, one transaction, one event per changed device. */
export async function batchUpdateLabels(
  deps: Deps,
  principal: Principal,
  projectParam: string,
  body: BatchUpdateDevicesRequest,
): Promise<BatchUpdateDevicesResponse> {
  const projectId = concreteProjectId(projectParam);
  await requireProject(deps, principal, projectId, 'device.update');
  const { devices, addLabels, removeLabels } = body;
  if (!Array.isArray(devices) || devices.length === 0 || !devices.every((d) => typeof d === 'string')) {
    throw badRequest('devices must be a non-empty array of device names');
  }
  checkBatchSize(devices, 'devices');
  if (addLabels === undefined && removeLabels === undefined) throw badRequest('addLabels or removeLabels is required');
  if (addLabels !== undefined && (typeof addLabels !== 'object' || Array.isArray(addLabels)))
    throw badRequest('addLabels must be an object of label keys to values');
  if (
    removeLabels !== undefined &&
    (!Array.isArray(removeLabels) || !removeLabels.every((k) => typeof k === 'string'))
  ) {
    throw badRequest('removeLabels must be an array of label keys');
  }
  const add = (addLabels ?? {}) as Record<string, unknown>;
  const remove = (removeLabels ?? []) as string[];

  const both = remove.find((k) => Object.hasOwn(add, k));
  if (both !== undefined) throw badRequest(`label ${both} is in both addLabels and removeLabels`);
  // A bad key or value is the batch's INVALID_ARGUMENT for each device (contract §4.6), removals included.
  let labelProblem: string | null = null;
  for (const [k, v] of Object.entries(add)) {
    const p = labelKeyProblem(k) ?? labelValueProblem(v);
    if (p) {
      labelProblem = `addLabels.${k}: ${p}`;
      break;
    }
  }
  for (const k of remove) {
    const p = labelKeyProblem(k);
    if (p && labelProblem === null) labelProblem = `removeLabels: ${p}`;
  }

  return deps.events.transaction(async (tx, emit) => {
    const batchErrors: BatchError[] = [];
    const seen = new Set<string>();
    for (const raw of devices as string[]) {
      const parsed = parseDeviceName(raw, projectId);
      if (!parsed) {
        batchErrors.push(batchError(raw, 'INVALID_ARGUMENT', 'device must be of the form projects/{p}/devices/{d}'));
        continue;
      }
      const name = deviceName(parsed.project, parsed.device);
      const device = parsed.project === projectId ? await tx.devices.get(parsed.device) : null;
      if (!device || device.projectId !== projectId) {
        batchErrors.push(batchError(name, 'NOT_FOUND', 'device not found'));
        continue;
      }
      if (labelProblem) {
        batchErrors.push(batchError(name, 'INVALID_ARGUMENT', labelProblem));
        continue;
      }
      if (seen.has(device.id)) continue; // listed twice: the second application changes nothing
      seen.add(device.id);
      const labels = { ...device.labels };
      for (const k of remove) delete labels[k];
      for (const [k, v] of Object.entries(add)) labels[k] = v as string;
      const count = Object.keys(labels).length;
      if (count > MAX_LABELS_PER_DEVICE && count > Object.keys(device.labels).length) {
        batchErrors.push(batchError(name, 'INVALID_ARGUMENT', MAX_LABELS_MESSAGE));
        continue;
      }
      await applyLabels(deps, tx, emit, device, labels);
    }
    return { batchErrors };
  });
}

/**
 * Moves devices into the target project (§4.6 transfer rules) with their labels, reported state and history.
 * No labelsChanged is emitted; queued deliveries stay with the source's connectors.
 */
export async function transferDevices(
  deps: Deps,
  principal: Principal,
  targetParam: string,
  body: TransferDevicesRequest,
): Promise<TransferDevicesResponse> {
  const targetId = concreteProjectId(targetParam);
  await requireProject(deps, principal, targetId, 'device.transfer');
  const { devices } = body;
  if (!Array.isArray(devices) || devices.length === 0 || !devices.every((d) => typeof d === 'string')) {
    throw badRequest('devices must be a non-empty array of device names');
  }
  checkBatchSize(devices, 'devices');
  return deps.store.transaction(async (tx) => {
    const transferredDevices: string[] = [];
    const transferErrors: BatchError[] = [];
    const now = nowMicros(deps);
    for (const raw of devices as string[]) {
      // A bare id names the device wherever it is.
      const parsed = parseDeviceName(raw) ?? (raw !== '' && !raw.includes('/') ? { project: null, device: raw } : null);
      if (!parsed) {
        transferErrors.push(batchError(raw, 'INVALID_ARGUMENT', 'device must be of the form projects/{p}/devices/{d}'));
        continue;
      }
      const device = await tx.devices.get(parsed.device);
      if (device && device.projectId === targetId) {
        transferredDevices.push(raw); // already in the target, e.g. a retried call
        continue;
      }
      const sourceId = parsed.project === null || parsed.project === '-' ? device?.projectId : parsed.project;
      const source = sourceId ? await tx.projects.get(sourceId) : null;
      const permissions = source ? projectPermissions(principal, source) : new Set<string>();
      if (!source || permissions.size === 0) {
        transferErrors.push(batchError(raw, 'NOT_FOUND', 'device not found'));
        continue;
      }
      if (!permissions.has('device.transfer')) {
        transferErrors.push(
          batchError(raw, 'PERMISSION_DENIED', `permission device.transfer required on projects/${source.id}`),
        );
        continue;
      }
      if (!device || device.projectId !== source.id) {
        transferErrors.push(batchError(raw, 'NOT_FOUND', 'device not found'));
        continue;
      }
      await tx.devices.move(device.id, targetId, now);
      transferredDevices.push(raw);
    }
    return { transferredDevices, transferErrors };
  });
}
