// update_mask paths (contract §1.2): given in snake_case or camelCase, compared in camelCase.
import { badRequest } from './errors.ts';

/** A mask path in camelCase: `display_name` → `displayName`, `delivery_config.max_rate` → `deliveryConfig.maxRate`. */
export const camelPath = (path: string): string => path.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * The fields a mask lists, in camelCase: those of `fields` apply; read-only ones are accepted and ignored; any other
 * is a 400 naming the allowed ones. null without a mask (every field the body gives applies).
 */
export function parseMask(
  mask: ReadonlySet<string> | null,
  fields: readonly string[],
  readOnly: readonly string[],
): Set<string> | null {
  if (mask === null) return null;
  const out = new Set<string>();
  for (const raw of mask) {
    const path = camelPath(raw);
    if (fields.includes(path)) out.add(path);
    else if (!readOnly.includes(path))
      throw badRequest(`update_mask: unknown field "${raw}" (allowed: ${fields.join(', ')})`);
  }
  return out;
}
