// Query parameters shared by the list and update routes, as strings: the query parser never coerces, the services
// parse and validate (contract §1.5, §1.6).
import { Type, type Static } from 'typebox';

/** Paging query parameters, spread into a route's querystring schema. */
export const PagingQuery = {
  pageSize: Type.Optional(Type.String({ description: 'Items per page: default 100, maximum 1000' })),
  pageToken: Type.Optional(Type.String({ description: 'nextPageToken of the previous page' })),
};
export const PageQuerySchema = Type.Object(PagingQuery);
export type PageQuery = Static<typeof PageQuerySchema>;

export const UpdateMaskQuery = {
  updateMask: Type.Optional(Type.String({ description: 'Comma-separated list of the fields to apply' })),
};
export const UpdateMaskQuerySchema = Type.Object(UpdateMaskQuery);
