// PostgreSQL's text cannot hold the NUL character (U+0000); SQLite's can. So that the two backends store the same
// things, both treat a statement with NUL in a text parameter alike: no stored text holds one, so a statement that
// only reads or deletes finds nothing (an unknown id stays a 404), and any other write is refused as a whole with a
// 400. The API refuses NUL earlier, naming the field (api/body.ts); this catches what reaches a store otherwise.
import { badRequest } from '../../domain/errors.ts';

/** A statement that writes rows other than by deleting them (INSERT, REPLACE INTO, UPDATE … SET), wherever it stands. */
const WRITES = /\bINSERT\b|\bREPLACE\s+INTO\b|\bUPDATE\s+\w+(?:\s+\w+)?\s+SET\b/i;

/** Whether the statement only reads or deletes: with NUL in a parameter, it finds nothing. */
export const findsNothing = (sql: string): boolean => !WRITES.test(sql);

/** The 400 for a write of text holding NUL. */
export const nulRefused = (): Error => badRequest('text may not contain the NUL character (U+0000)');

/** Whether a parameter is text holding NUL. */
export const holdsNul = (params: readonly unknown[]): boolean =>
  params.some((p) => typeof p === 'string' && p.includes('\u0000'));
