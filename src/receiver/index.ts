// `sensorcloud/receiver`: what a service that receives Sensor Cloud pushes needs — signature verification and
// de-duplication — typed, and free of the rest of the package (its only dependency is jose).
export { SIGNATURE_HEADER, SignatureError, signatureHeaderOf, verifySignature } from './verify-signature.ts';
export type { HeadersLike, SignatureClaims, SignatureFailureReason, VerifyOptions } from './verify-signature.ts';
export { Deduplicator, MemoryDedupStore } from './deduplicator.ts';
export type { DedupStore, DeduplicatorOptions, MemoryDedupStoreOptions } from './deduplicator.ts';
export type { PushBody, PushEvent, PushMetadata } from './push-body.ts';
