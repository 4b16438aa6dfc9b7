// A data connector's delivery controls (extensions §X4): how many pushes at once, how many a second, which devices'
// events, and paused. The line the connector's page shows, the paused notice and the confirmation of a pause, and
// the form section of connector-form.tsx with its check before sending (the API decides the ranges).
import { useLayoutEffect, useRef } from 'preact/hooks';
import { Field, FieldError, PairRows, Switch } from '../components.tsx';
import { labelText } from '../format.ts';
import { rowsToRecord } from '../form-errors.ts';

export interface DeliveryConfig {
  maxConcurrency: number;
  /** Push attempts per second; 0 = no limit. */
  maxRate: number;
  /** Label key → value; "" = the key is present. */
  labelFilters: Record<string, string>;
  paused: boolean;
}

const MAX_CONCURRENCY = 64;
const MAX_RATE = 10_000;

/** What a connector created without controls has (the API's defaults); older answers may lack the object. */
export const DEFAULT_DELIVERY_CONFIG: DeliveryConfig = {
  maxConcurrency: MAX_CONCURRENCY,
  maxRate: 0,
  labelFilters: {},
  paused: false,
};

export const deliveryConfigOf = (c: { deliveryConfig?: Partial<DeliveryConfig> }): DeliveryConfig => ({
  ...DEFAULT_DELIVERY_CONFIG,
  ...c.deliveryConfig,
});

const numberText = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 3 });

/** The controls in one line, in parts: "Up to 8 pushes at once", "at most 5 per second", "only devices with site=oslo, floor". */
function controlsParts(d: DeliveryConfig): string[] {
  const filters = Object.entries(d.labelFilters);
  return [
    d.maxConcurrency === 1 ? 'One push at a time' : `Up to ${numberText(d.maxConcurrency)} pushes at once`,
    d.maxRate > 0 ? `at most ${numberText(d.maxRate)} per second` : 'no rate limit',
    filters.length === 0 ? 'every device' : `only devices with ${filters.map(([k, v]) => labelText(k, v)).join(', ')}`,
  ];
}

export function ControlsLine({ config }: { config: DeliveryConfig }) {
  const parts = controlsParts(config);
  return (
    <span class="controls-line" data-testid="delivery-controls">
      {parts.map((p, i) => (
        <span key={p}>
          {i > 0 ? ' · ' : ''}
          {p}
        </span>
      ))}
    </span>
  );
}

const PAUSED_TITLE = 'Paused — events are queued, none is pushed.';
const EXPIRY_TEXT = 'an event queued for more than 12 hours expires without being sent';

/** Under the title of a paused connector. */
export function PausedNotice({ active, deliveriesHref }: { active: boolean; deliveriesHref: string }) {
  return (
    <div class="paused-notice" role="status" data-testid="paused">
      {active ? (
        <>
          <strong>{PAUSED_TITLE}</strong> Resume sends the queued events in the order they were due; {EXPIRY_TEXT}.{' '}
          <a href={`${deliveriesHref}?state=PENDING&state=RETRYING`}>Queued deliveries</a>
        </>
      ) : (
        <>
          <strong>Paused as well.</strong> Once enabled, its events queue and none is pushed until it is resumed.
        </>
      )}
    </div>
  );
}

/** "Pause" asks first, saying what a pause does; Escape or Cancel keep the connector as it is. */
export function PauseConfirm({
  onConfirm,
  onCancel,
  busy,
}: {
  onConfirm: () => void;
  onCancel: () => void;
  busy: boolean;
}) {
  const button = useRef<HTMLButtonElement>(null);
  // Before the first paint (a layout effect): the focus is on "Pause pushes" and Escape cancels from the moment the
  // question shows. Escape is heard on the whole page, not only inside the box: with a plain effect, and the key
  // handled on the box, an Escape pressed as the box appeared (or after a click elsewhere) did nothing.
  const cancel = useRef(onCancel);
  cancel.current = onCancel;
  useLayoutEffect(() => {
    button.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') cancel.current();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class="confirm-box" role="group" aria-labelledby="pause-confirm-text">
      <p id="pause-confirm-text">
        Pausing stops every push of this connector: events keep queueing and are sent in order when you resume, but{' '}
        {EXPIRY_TEXT}.
      </p>
      <div class="form-actions">
        <button type="button" class="primary" ref={button} onClick={onConfirm} disabled={busy}>
          Pause pushes
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}

// ---- the form section ----

/** The controls as the form holds them: numbers as typed, filters as rows. */
export interface DeliveryDraft {
  maxConcurrency: string;
  maxRate: string;
  labelFilters: [string, string][];
  paused: boolean;
}

export const deliveryDraftOf = (d: DeliveryConfig): DeliveryDraft => ({
  maxConcurrency: String(d.maxConcurrency),
  maxRate: d.maxRate === 0 ? '' : String(d.maxRate),
  labelFilters: Object.entries(d.labelFilters),
  paused: d.paused,
});

/** The API's field paths → the section's fields (the `name` of their controls). */
export const DELIVERY_FIELDS = {
  'deliveryConfig.maxConcurrency': 'maxConcurrency',
  'deliveryConfig.maxRate': 'maxRate',
  'deliveryConfig.labelFilters': 'labelFilters',
  'deliveryConfig.paused': 'paused',
};

type Checked = { config: DeliveryConfig } | { field: string; text: string };

/**
 * The deliveryConfig to send, or what is wrong before sending: only what the API cannot be asked (text that is not a
 * number, a filter row without a key, a key given twice). Ranges are left to the API, whose refusal is shown at the
 * field. An empty rate is no limit, an empty concurrency the default.
 */
export function readDeliveryDraft(d: DeliveryDraft, form: HTMLFormElement | null): Checked {
  const badInput = (name: string) =>
    form?.querySelector<HTMLInputElement>(`input[name="${name}"]`)?.validity.badInput ?? false;
  const concurrencyText = d.maxConcurrency.trim();
  const maxConcurrency = concurrencyText === '' ? MAX_CONCURRENCY : Number(concurrencyText);
  if (badInput('maxConcurrency') || Number.isNaN(maxConcurrency))
    return { field: 'maxConcurrency', text: `Enter a whole number from 1 to ${MAX_CONCURRENCY}.` };
  const rateText = d.maxRate.trim();
  const maxRate = rateText === '' ? 0 : Number(rateText);
  if (badInput('maxRate') || Number.isNaN(maxRate))
    return { field: 'maxRate', text: 'Enter a number of pushes per second, or leave it empty for no limit.' };
  const filters = rowsToRecord(d.labelFilters, 'labelFilters', 'Label filter');
  if (!('record' in filters)) return filters;
  return { config: { maxConcurrency, maxRate, labelFilters: filters.record, paused: d.paused } };
}

export function DeliveryControlsFields({
  value,
  onChange,
  fieldError,
}: {
  value: DeliveryDraft;
  onChange: (d: DeliveryDraft) => void;
  fieldError: (field: string) => string | undefined;
}) {
  const set = (patch: Partial<DeliveryDraft>) => onChange({ ...value, ...patch });
  const filtersError = fieldError('labelFilters');
  return (
    <fieldset class="field wide form-section" aria-describedby="delivery-h-hint">
      <legend>Delivery controls</legend>
      <p class="muted small" id="delivery-h-hint">
        Limits on how this connector pushes. Events over a limit wait in the queue, for up to 12 hours.
      </p>
      <div class="field-pair">
        <Field
          label="Max concurrent pushes"
          hint={`1 to ${MAX_CONCURRENCY} pushes open at once, across every process (${MAX_CONCURRENCY} by default).`}
          error={fieldError('maxConcurrency')}
        >
          {(id, described, invalid) => (
            <input
              id={id}
              name="maxConcurrency"
              aria-describedby={described}
              aria-invalid={invalid}
              type="number"
              inputMode="numeric"
              min={1}
              max={MAX_CONCURRENCY}
              step={1}
              placeholder={String(MAX_CONCURRENCY)}
              value={value.maxConcurrency}
              onInput={(e) => set({ maxConcurrency: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <Field
          label="Max rate per second"
          hint={`Push attempts a second, at most ${numberText(MAX_RATE)}. Empty or 0: no limit.`}
          error={fieldError('maxRate')}
        >
          {(id, described, invalid) => (
            <input
              id={id}
              name="maxRate"
              aria-describedby={described}
              aria-invalid={invalid}
              type="number"
              inputMode="decimal"
              min={0}
              max={MAX_RATE}
              step="any"
              placeholder="no limit"
              value={value.maxRate}
              onInput={(e) => set({ maxRate: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
      </div>
      <fieldset
        class="field"
        aria-describedby={['label-filters-hint', filtersError ? 'label-filters-error' : ''].join(' ').trim()}
      >
        <legend>Only devices with these labels</legend>
        <small id="label-filters-hint">
          Events are pushed only from devices that carry every label listed, decided when the event is published. An
          empty value matches any value of the key.
        </small>
        <PairRows
          name="labelFilters"
          what="Label filter"
          keyPlaceholder="key, e.g. site"
          valuePlaceholder="any value"
          rows={value.labelFilters}
          invalid={Boolean(filtersError)}
          onChange={(labelFilters) => set({ labelFilters })}
        />
        <FieldError id="label-filters-error" text={filtersError} />
        <button type="button" onClick={() => set({ labelFilters: [...value.labelFilters, ['', '']] })}>
          Add label filter
        </button>
      </fieldset>
      <div class="field">
        <Switch
          name="paused"
          checked={value.paused}
          onChange={() => set({ paused: !value.paused })}
          describedBy="paused-hint"
        >
          Paused
        </Switch>
        <small id="paused-hint">
          While paused, events keep queueing and none is pushed; resuming sends them in order. An event queued for more
          than 12 hours expires.
        </small>
        <FieldError text={fieldError('paused')} />
      </div>
    </fieldset>
  );
}
