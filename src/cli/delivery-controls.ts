// A data connector's delivery controls (extensions §X4) in the CLI: the options of `connectors create|update` as the
// `deliveryConfig` keys and update-mask paths they send, and how `get` and `list` show the controls. Bounds are the
// service's to check (its 400 names the field); only values that are not numbers at all stop here, as usage errors.
import type { Command } from 'commander';
import type { DataConnector, DeliveryConfig, DeliveryConfigInput } from '../wire/data-connectors.ts';
import { collect, parseInteger, parseNumber } from './arguments.ts';
import { UsageError } from './errors.ts';

/** The service's default maxConcurrency (also its most): a connector without a limit of its own. */
export const DEFAULT_MAX_CONCURRENCY = 64;

/** commander's values of the options below. */
export interface DeliveryOptions {
  maxConcurrency?: string;
  maxRate?: string;
  labelFilter?: string[];
  clearLabelFilters?: boolean;
}

/** The options create and update share. */
export const deliveryOptions = (command: Command) =>
  command
    .option('--max-concurrency <n>', 'at most this many pushes of this connector open at once: 1 to 64 (default 64)')
    .option('--max-rate <per-second>', 'at most this many push attempts a second, up to 10000; 0 = no limit')
    .option(
      '--label-filter <key=value|key>',
      'only events of devices carrying this label; `key` alone: any value (repeatable: every one must match)',
      collect,
    );

/**
 * `key=value` → that value; `key` or `key=` → "" (the key is present). The last of one key wins, as `--label`.
 * Built with fromEntries so that any key, `__proto__` too, reaches the service (which says what is wrong with it).
 */
export function parseLabelFilters(values: readonly string[] | undefined): Record<string, string> {
  return Object.fromEntries(
    (values ?? []).map((v) => {
      const eq = v.indexOf('=');
      const key = eq < 0 ? v : v.slice(0, eq);
      if (key.trim() === '') throw new UsageError(`--label-filter must be key=value or key, got "${v}"`);
      return [key, eq < 0 ? '' : v.slice(eq + 1)];
    }),
  );
}

/**
 * The deliveryConfig keys the options give, and their update-mask paths: only those, so an update changes nothing
 * else (the service merges key by key; label filters given replace the filters whole).
 */
export function deliveryInput(o: DeliveryOptions): { config: DeliveryConfigInput; mask: string[] } {
  if (o.labelFilter && o.clearLabelFilters)
    throw new UsageError('give --label-filter or --clear-label-filters, not both');
  const config: DeliveryConfigInput = {};
  if (o.maxConcurrency !== undefined) config.maxConcurrency = parseInteger(o.maxConcurrency, '--max-concurrency');
  if (o.maxRate !== undefined) config.maxRate = parseNumber(o.maxRate, '--max-rate');
  if (o.labelFilter || o.clearLabelFilters) config.labelFilters = parseLabelFilters(o.labelFilter);
  return { config, mask: Object.keys(config).map((key) => `deliveryConfig.${key}`) };
}

/** The controls of a connector; undefined from a service older than §X4, which leaves the key out. */
export const controlsOf = (c: DataConnector): DeliveryConfig | undefined =>
  (c as { deliveryConfig?: DeliveryConfig }).deliveryConfig;

export const isPaused = (c: DataConnector): boolean => controlsOf(c)?.paused === true;

export const rateText = (perSecond: number): string => (perSecond === 0 ? 'no limit' : `${perSecond} per second`);

/** `room=4, floor (any value)`; `(every device)` without filters. */
export function labelFiltersText(filters: Readonly<Record<string, string>>): string {
  const entries = Object.entries(filters);
  if (entries.length === 0) return '(every device)';
  return entries.map(([k, v]) => (v === '' ? `${k} (any value)` : `${k}=${v}`)).join(', ');
}

/** A list's cell for the limits: `8 at once, 5/s`, or `-` when neither is set. */
export function limitsText(d: DeliveryConfig | undefined): string {
  if (!d) return '-';
  const parts = [
    ...(d.maxConcurrency !== DEFAULT_MAX_CONCURRENCY ? [`${d.maxConcurrency} at once`] : []),
    ...(d.maxRate !== 0 ? [`${d.maxRate}/s`] : []),
  ];
  return parts.length ? parts.join(', ') : '-';
}

/** Whether a list needs the limits column (some connector has a limit of its own). */
export const hasLimits = (c: DataConnector): boolean => limitsText(controlsOf(c)) !== '-';

/** Whether a list needs the label filters column. */
export const hasLabelFilters = (c: DataConnector): boolean => Object.keys(controlsOf(c)?.labelFilters ?? {}).length > 0;
