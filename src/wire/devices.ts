// Devices and labels on the wire (contract §3.7, §3.8, §4.6): the device, its list and list query, labels, and the
// bodies and answers of devices:batchUpdate and devices:transfer.
import { Type, type Static } from 'typebox';
import { PagingQuery } from './paging.ts';

/** Keys in contract order. */
export const DeviceSchema = Type.Object({
  name: Type.String(),
  type: Type.String(),
  productNumber: Type.String(),
  labels: Type.Record(Type.String(), Type.String()),
  reported: Type.Record(Type.String(), Type.Unknown()),
});
export type Device = Static<typeof DeviceSchema>;

export const DeviceListSchema = Type.Object({ devices: Type.Array(DeviceSchema), nextPageToken: Type.String() });
export type DeviceList = Static<typeof DeviceListSchema>;

const Strings = (description: string) => Type.Optional(Type.Array(Type.String(), { description }));
/** Query parameters of GET /projects/{p}/devices, after camel-casing (src/api/query.ts). */
export const DeviceListParamsSchema = Type.Object({
  ...PagingQuery,
  deviceIds: Strings('Device ids (repeated key; ORed)'),
  deviceTypes: Strings('Device types (repeated key; ORed)'),
  productNumbers: Strings('Product numbers (repeated key; ORed)'),
  labelFilters: Strings('key=value (exact) or key (present); all must hold'),
  query: Type.Optional(
    Type.String({ description: 'Case-insensitive substring of the id, type, or any label key or value' }),
  ),
  orderBy: Type.Optional(
    Type.String({
      description: 'name|id, type, productNumber, labels.<key>, reported.<eventType>.<field>; "-" prefix = descending',
    }),
  ),
  organization: Type.Optional(Type.String({ description: 'organizations/{o}; only with the wildcard project "-"' })),
  projects: Strings('projects/{p} (repeated key); only with the wildcard project "-"'),
});
export type DeviceListParams = Static<typeof DeviceListParamsSchema>;

export const LabelSchema = Type.Object({ name: Type.String(), key: Type.String(), value: Type.String() });
export type Label = Static<typeof LabelSchema>;

/** POST …/labels. A proto3 JSON client leaves an empty value out; absent means "". */
export const LabelInputSchema = Type.Object({ key: Type.String(), value: Type.Optional(Type.String()) });
export type LabelInput = Static<typeof LabelInputSchema>;

export const LabelPatchSchema = Type.Object({ key: Type.Optional(Type.String()), value: Type.Optional(Type.String()) });
export type LabelPatch = Static<typeof LabelPatchSchema>;

/** One device a batch could not change; code is one of INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, INTERNAL_ERROR. */
export const BatchErrorSchema = Type.Object({
  device: Type.String(),
  status: Type.Object({ code: Type.String(), message: Type.String() }),
});
export type BatchError = Static<typeof BatchErrorSchema>;

/** POST /projects/{p}/devices:batchUpdate. */
export const BatchUpdateDevicesRequestSchema = Type.Object({
  devices: Type.Array(Type.String(), { description: 'projects/{p}/devices/{d} or bare device ids' }),
  addLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
  removeLabels: Type.Optional(Type.Array(Type.String())),
});
export type BatchUpdateDevicesRequest = Static<typeof BatchUpdateDevicesRequestSchema>;

export const BatchUpdateDevicesResponseSchema = Type.Object({ batchErrors: Type.Array(BatchErrorSchema) });
export type BatchUpdateDevicesResponse = Static<typeof BatchUpdateDevicesResponseSchema>;

/** POST /projects/{target}/devices:transfer. */
export const TransferDevicesRequestSchema = Type.Object({
  devices: Type.Array(Type.String(), { description: 'projects/{source}/devices/{d}' }),
});
export type TransferDevicesRequest = Static<typeof TransferDevicesRequestSchema>;

export const TransferDevicesResponseSchema = Type.Object({
  transferredDevices: Type.Array(Type.String()),
  transferErrors: Type.Array(BatchErrorSchema),
});
export type TransferDevicesResponse = Static<typeof TransferDevicesResponseSchema>;
