// The sensor emulator's bodies on the wire (contract §4.10, §5.3, §5.5): create and replace an emulated device,
// publish an event. The device they answer with is devices.ts's.
import { Type, type Static } from 'typebox';

const Labels = Type.Record(Type.String(), Type.String());

export const EmulatedDeviceInputSchema = Type.Object({
  type: Type.String({ description: 'Device type, e.g. temperature, humidity, ccon' }),
  labels: Type.Optional(Labels),
  productNumber: Type.Optional(Type.String({ description: 'Overrides the default product number of the type' })),
});
export type EmulatedDeviceInput = Static<typeof EmulatedDeviceInputSchema>;

/** PUT: the new label set (virtual-sensor is always kept; absent = no labels besides it); type must not change. */
export const EmulatedDeviceReplacementSchema = Type.Object({
  type: Type.Optional(Type.String({ description: 'Must equal the device type' })),
  labels: Type.Optional(Labels),
});
export type EmulatedDeviceReplacement = Static<typeof EmulatedDeviceReplacementSchema>;

/** Any object: the publish rules (services/publish.ts) check it and name the problem. */
export const PublishRequestSchema = Type.Object(
  {},
  {
    description: 'Exactly one key, the event type, with its data: {"temperature":{"value":21.5}}',
    additionalProperties: true,
  },
);
