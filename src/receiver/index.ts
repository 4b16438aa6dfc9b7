// The receiver kit: what a service that receives Sensor Cloud pushes needs — signature verification and
// de-duplication — typed, free of the rest of the service and of any dependency (node:crypto only). Packed as the
// stand-alone package `sensorcloud-receiver` (packages/receiver), and `sensorcloud/receiver` inside this repository.
export {
  PREVIOUS_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  SignatureError,
  signatureHeaderOf,
  verifySignature,
} from './verify-signature.ts';
export type {
  HeadersLike,
  SignatureClaims,
  SignatureFailureReason,
  SignatureHeaderFailure,
  SignatureSecrets,
  VerifyOptions,
} from './verify-signature.ts';
export { Deduplicator, MemoryDedupStore } from './deduplicator.ts';
export type { DedupStore, DeduplicatorOptions, MemoryDedupStoreOptions } from './deduplicator.ts';
export type { PushBody, PushEvent, PushMetadata } from './push-body.ts';
