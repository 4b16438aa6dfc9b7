// Keyset page request at the store level, shared by every repository.

/** Rows strictly after `after` in the repository's order, at most `limit`. */
export interface Range<K = string> {
  after?: K | null;
  limit: number;
}
