// Label rules (contract §3.8), shared by device labels, project labels, label filters and the label keys a data
// connector copies into its pushes.
import { badRequest } from './errors.ts';

export const MAX_LABELS_PER_DEVICE = 100;
export const MAX_LABEL_KEY_LENGTH = 128;
export const MAX_LABEL_VALUE_LENGTH = 1024;
export const MAX_LABELS_MESSAGE = 'Max labels reached for device.';

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const length = (s: string) => [...s].length; // characters, not UTF-16 units

/**
 * Why a label key is invalid, or null. Beyond §3.8, `__proto__` is refused on every path (add, edit, remove,
 * filters, connector label keys, project labels): a JavaScript object cannot hold it as an ordinary key, so it
 * would be accepted and then silently lost.
 */
export function labelKeyProblem(key: unknown): string | null {
  if (typeof key !== 'string') return 'label key must be a string';
  if (length(key) < 1 || length(key) > MAX_LABEL_KEY_LENGTH)
    return `label key must be 1 to ${MAX_LABEL_KEY_LENGTH} characters`;
  if (key.includes('=')) return "label key must not contain '='";
  if (key.includes('/')) return "label key must not contain '/'";
  if (CONTROL.test(key)) return 'label key must not contain control characters';
  if (key === '__proto__') return 'label key __proto__ is reserved';
  return null;
}

/** Why a label value is invalid, or null (§3.8). */
export function labelValueProblem(value: unknown): string | null {
  if (typeof value !== 'string') return 'label value must be a string';
  if (length(value) > MAX_LABEL_VALUE_LENGTH) return `label value must be at most ${MAX_LABEL_VALUE_LENGTH} characters`;
  return null;
}

/**
 * A map of label key to value (a value '' = the key is present: a connector's labelFilters, a rule's deviceLabels and
 * projectLabels) from an object's entries: at most `max` labels, each key and value valid; 400 naming `field`.
 */
export function labelMapOf(entries: [string, unknown][], field: string, max: number): Record<string, string> {
  if (entries.length > max) throw badRequest(`${field}: at most ${max} labels`);
  const out: Record<string, string> = {};
  for (const [key, value] of entries) {
    const problem = labelKeyProblem(key) ?? labelValueProblem(value);
    if (problem) throw badRequest(`${field}: ${problem} (${JSON.stringify(key.slice(0, 64))})`);
    out[key] = value as string;
  }
  return out;
}

/** Whether `labels` carry every label of `wanted` (a value '' = the key is present, whatever its value). */
export function carriesLabels(labels: Readonly<Record<string, string>>, wanted: Readonly<Record<string, string>>) {
  for (const key in wanted) {
    if (!Object.hasOwn(labels, key)) return false;
    const value = wanted[key]!;
    if (value !== '' && labels[key] !== value) return false;
  }
  return true;
}

export interface LabelFilter {
  key: string;
  /** null = the key is present with any value. */
  value: string | null;
}

/** A label filter (contract §4.6): `key=value` is an exact value; `key` or `key=` means the key is present. */
export function parseLabelFilter(raw: string): LabelFilter {
  const eq = raw.indexOf('=');
  const key = eq < 0 ? raw : raw.slice(0, eq);
  const value = eq < 0 ? '' : raw.slice(eq + 1);
  if (key === '') throw badRequest(`label_filters: "${raw}" has no key (expected key=value or key)`);
  const problem = labelKeyProblem(key);
  if (problem) throw badRequest(`label_filters: ${problem}`);
  return { key, value: value === '' ? null : value };
}
