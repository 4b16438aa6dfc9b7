// Service accounts and their keys on the wire (contract §3.5, §3.6, §4.5). A key's secret appears only in the answer
// that created it.
import { Type, type Static } from 'typebox';

export const MAX_DISPLAY_NAME_LENGTH = 256;

export const ServiceAccountSchema = Type.Object({
  name: Type.String(),
  email: Type.String(),
  displayName: Type.String(),
  enableBasicAuth: Type.Boolean(),
  createTime: Type.String(),
  updateTime: Type.String(),
});
export type ServiceAccount = Static<typeof ServiceAccountSchema>;

export const ServiceAccountListSchema = Type.Object({
  serviceAccounts: Type.Array(ServiceAccountSchema),
  nextPageToken: Type.String(),
});
export type ServiceAccountList = Static<typeof ServiceAccountListSchema>;

/** The body of create and patch. */
export const ServiceAccountInputSchema = Type.Object({
  displayName: Type.Optional(Type.String({ maxLength: MAX_DISPLAY_NAME_LENGTH })),
  enableBasicAuth: Type.Optional(Type.Boolean()),
});
export type ServiceAccountInput = Static<typeof ServiceAccountInputSchema>;

export const KeySchema = Type.Object({ name: Type.String(), id: Type.String(), createTime: Type.String() });
export type Key = Static<typeof KeySchema>;

export const KeyListSchema = Type.Object({ keys: Type.Array(KeySchema), nextPageToken: Type.String() });
export type KeyList = Static<typeof KeyListSchema>;

export const CreateKeyResponseSchema = Type.Object({ key: KeySchema, secret: Type.String() });
export type CreateKeyResponse = Static<typeof CreateKeyResponseSchema>;
