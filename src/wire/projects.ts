// Projects on the wire (contract §3.2, §4.1): the project, its list, and the bodies of create, patch and the label
// batch.
import { Type, type Static } from 'typebox';
import { PagingQuery } from './paging.ts';

export const ProjectLocationSchema = Type.Object({
  latitude: Type.Union([Type.Number(), Type.Null()]),
  longitude: Type.Union([Type.Number(), Type.Null()]),
  timeLocation: Type.String(),
});
export type ProjectLocation = Static<typeof ProjectLocationSchema>;

/** Keys in contract order. */
export const ProjectSchema = Type.Object({
  name: Type.String(),
  displayName: Type.String(),
  organization: Type.String(),
  organizationDisplayName: Type.String(),
  sensorCount: Type.Integer(),
  cloudConnectorCount: Type.Integer(),
  inventory: Type.Boolean(),
  location: ProjectLocationSchema,
  labels: Type.Record(Type.String(), Type.String()),
});
export type Project = Static<typeof ProjectSchema>;

export const ProjectListSchema = Type.Object({ projects: Type.Array(ProjectSchema), nextPageToken: Type.String() });
export type ProjectList = Static<typeof ProjectListSchema>;

export const ProjectListQuerySchema = Type.Object({
  ...PagingQuery,
  organization: Type.Optional(Type.String({ description: 'organizations/{o}: only its projects' })),
  query: Type.Optional(Type.String({ description: 'case-insensitive substring of displayName' })),
});
export type ProjectListQuery = Static<typeof ProjectListQuerySchema>;

/** A location in a request: absent parts are unset (null or ""). */
export const LocationInputSchema = Type.Object({
  latitude: Type.Optional(Type.Number()),
  longitude: Type.Optional(Type.Number()),
  timeLocation: Type.Optional(Type.String()),
});
export type LocationInput = Static<typeof LocationInputSchema>;

export const CreateProjectRequestSchema = Type.Object({
  organization: Type.String({ description: 'organizations/{o}' }),
  displayName: Type.String({ description: '1 to 256 characters' }),
  location: Type.Optional(LocationInputSchema),
});
export type CreateProjectRequest = Static<typeof CreateProjectRequestSchema>;

export const ProjectPatchSchema = Type.Object({
  displayName: Type.Optional(Type.String()),
  organization: Type.Optional(Type.String({ description: 'immutable; a differing value is a 400' })),
  location: Type.Optional(LocationInputSchema),
});
export type ProjectPatch = Static<typeof ProjectPatchSchema>;

/** POST /projects:batchUpdate. */
export const ProjectLabelBatchSchema = Type.Object({
  projects: Type.Array(Type.String(), { description: 'projects/{p} names' }),
  addLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
  removeLabels: Type.Optional(Type.Array(Type.String())),
});
export type ProjectLabelBatch = Static<typeof ProjectLabelBatchSchema>;
