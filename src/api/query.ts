// Query strings (contract §1.6): every parameter in camelCase or snake_case; arrays as repeated keys and
// merged across spellings; the camelCase value wins for scalars; empty values count as absent.
import { parse } from 'node:querystring';

/** Parameters that are arrays (repeated keys). Everything else is a scalar. */
const ARRAY_KEYS = new Set([
  'eventTypes',
  'deviceIds',
  'deviceTypes',
  'labelFilters',
  'productNumbers',
  'projects',
  'state',
]);

const toCamel = (k: string) => k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

export function parseQuery(raw: string): Record<string, string | string[]> {
  const parsed = parse(raw);
  const out: Record<string, string | string[]> = {};
  const scalarFromCamel = new Set<string>();
  for (const [key, value] of Object.entries(parsed)) {
    const camel = toCamel(key);
    const values = (Array.isArray(value) ? value : [value ?? '']).filter((v) => v !== '');
    if (values.length === 0) continue;
    if (ARRAY_KEYS.has(camel)) {
      out[camel] = [...((out[camel] as string[] | undefined) ?? []), ...values];
    } else if (key === camel) {
      out[camel] = values[0]!;
      scalarFromCamel.add(camel);
    } else if (!scalarFromCamel.has(camel)) {
      out[camel] = values[0]!;
    }
  }
  return out;
}
