// Small building blocks shared by the screens. All text is rendered as text (Preact escapes it); no screen sets
// innerHTML.
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.ts';
import { explainError, type FieldMap } from './form-errors.ts';
import { reasonFor } from './permissions.ts';
import { onNavigate } from './router.ts';

let nextId = 0;
/** A stable id for label/control pairs. */
export function useId(prefix = 'f'): string {
  const ref = useRef<string>();
  if (!ref.current) ref.current = `${prefix}-${++nextId}`;
  return ref.current;
}

/** An API error in words, next to what caused it; announced to screen readers. */
export function ErrorText({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  const help = (error as { help?: string }).help;
  return (
    <p class="error" role="alert">
      {explainError(error).text}
      {error instanceof ApiError ? ` (HTTP ${error.status})` : ''}
      {help ? (
        <>
          {' '}
          · <a href={new URL(help, location.origin).pathname + new URL(help, location.origin).hash}>what this means</a>
        </>
      ) : null}
    </p>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {children}
    </p>
  );
}

/** What is wrong with one field, in words, under it (the control names it in aria-describedby). */
export function FieldError({ id, text }: { id?: string; text?: string | null }) {
  return text ? (
    <div class="field-error" id={id}>
      {text}
    </div>
  ) : null;
}

/**
 * A list's state filter: a chip per state, pressed when shown (none pressed: every state); "All states" clears it.
 * `onChange` gets the states chosen, in the order of `states`. `children` follow at the row's end (a Refresh button).
 */
export function StateChips({
  states,
  selected,
  onChange,
  children,
}: {
  states: readonly (readonly [state: string, kind: string, label: string, meaning: string])[];
  selected: readonly string[];
  onChange: (states: string[]) => void;
  children?: ComponentChildren;
}) {
  const toggle = (state: string) =>
    onChange(
      selected.includes(state)
        ? selected.filter((s) => s !== state)
        : states.map((s) => s[0]).filter((s) => s === state || selected.includes(s)),
    );
  return (
    <div class="state-chips" role="group" aria-label="Show only these states">
      {states.map(([state, , label, meaning]) => (
        <button
          key={state}
          type="button"
          class="tab"
          aria-pressed={selected.includes(state)}
          title={meaning}
          onClick={() => toggle(state)}
        >
          {label}
        </button>
      ))}
      {selected.length > 0 ? (
        <button type="button" class="link" onClick={() => onChange([])}>
          All states
        </button>
      ) : null}
      {children}
    </div>
  );
}

/** Key/value rows of a form (device labels, label filters, webhook headers), each with its Remove button. */
export function PairRows(props: {
  name: string;
  what: string;
  keyPlaceholder: string;
  valuePlaceholder: string;
  rows: [string, string][];
  invalid: boolean;
  onChange: (rows: [string, string][]) => void;
}) {
  const { rows, onChange } = props;
  return (
    <>
      {rows.map(([k, v], i) => (
        <div class="header-row filter-row" key={i}>
          <label class="visually-hidden" for={`${props.name}-k-${i}`}>
            {props.what} {i + 1} key
          </label>
          <input
            id={`${props.name}-k-${i}`}
            name={props.name}
            placeholder={props.keyPlaceholder}
            aria-invalid={props.invalid ? true : undefined}
            value={k}
            onInput={(e) => onChange(rows.map((r, j) => (j === i ? [(e.target as HTMLInputElement).value, r[1]] : r)))}
          />
          <label class="visually-hidden" for={`${props.name}-v-${i}`}>
            {props.what} {i + 1} value
          </label>
          <input
            id={`${props.name}-v-${i}`}
            name={props.name}
            placeholder={props.valuePlaceholder}
            value={v}
            onInput={(e) => onChange(rows.map((r, j) => (j === i ? [r[0], (e.target as HTMLInputElement).value] : r)))}
          />
          <button
            type="button"
            onClick={() => onChange(rows.filter((_, j) => j !== i))}
            aria-label={`Remove ${props.what.toLowerCase()} ${i + 1}`}
          >
            Remove
          </button>
        </div>
      ))}
    </>
  );
}

/** An on/off setting of a form: a checkbox shown as a switch (role switch), its label beside it. */
export function Switch({
  name,
  checked,
  onChange,
  describedBy,
  children,
}: {
  name: string;
  checked: boolean;
  onChange: () => void;
  describedBy?: string;
  children: ComponentChildren;
}) {
  return (
    <label class="check-label switch-label">
      <input
        type="checkbox"
        role="switch"
        aria-checked={checked}
        name={name}
        aria-describedby={describedBy}
        checked={checked}
        onChange={onChange}
      />{' '}
      {children}
    </label>
  );
}

/**
 * A labelled form control; `hint` and `error` (what is wrong with the value, from `useAction().fieldError`) are read
 * with the control: `describedBy` names both, and `invalid` is for its aria-invalid.
 */
export function Field(props: {
  label: string;
  hint?: string;
  error?: string | null;
  wide?: boolean;
  children: (id: string, describedBy?: string, invalid?: true) => ComponentChildren;
}) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = props.error ? `${id}-error` : undefined;
  return (
    <div class={props.wide ? 'field wide' : 'field'}>
      <label for={id}>{props.label}</label>
      {props.children(id, [hintId, errorId].filter(Boolean).join(' ') || undefined, props.error ? true : undefined)}
      {props.hint ? <small id={hintId}>{props.hint}</small> : null}
      <FieldError id={errorId} text={props.error} />
    </div>
  );
}

/** A button for an action the role may not allow: disabled with the reason when it does not. */
export function ActionButton(
  props: JSX.ButtonHTMLAttributes<HTMLButtonElement> & { allowed?: boolean; permission?: string },
) {
  const { allowed = true, permission, children, ...rest } = props;
  if (allowed)
    return (
      <button type="button" {...rest}>
        {children}
      </button>
    );
  return (
    <button
      type="button"
      {...rest}
      disabled
      title={permission ? reasonFor(permission) : undefined}
      aria-disabled="true"
    >
      {children}
    </button>
  );
}

/** Two-step destructive action: the first click asks, the second does it. */
export function ConfirmButton(props: {
  label: string;
  confirm: string;
  onConfirm: () => void | Promise<void>;
  class?: string;
  busy?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  useEffect(() => {
    if (!asking) return;
    const t = setTimeout(() => setAsking(false), 6000);
    return () => clearTimeout(t);
  }, [asking]);
  if (!asking)
    return (
      <button type="button" class={props.class ?? 'danger'} onClick={() => setAsking(true)} disabled={props.busy}>
        {props.label}
      </button>
    );
  return (
    <span class="confirm">
      <button
        type="button"
        class="danger solid"
        onClick={() => {
          setAsking(false);
          void props.onConfirm();
        }}
      >
        {props.confirm}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** Copies text to the clipboard; says so, or selects the text to copy by hand where the clipboard is refused. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <button
      type="button"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setState('copied');
        } catch {
          setState('failed');
        }
        setTimeout(() => setState('idle'), 2500);
      }}
    >
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy refused: select the text' : label}
    </button>
  );
}

export function Badge({ kind, children }: { kind: string; children: ComponentChildren }) {
  return <span class={`badge badge-${kind}`}>{children}</span>;
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p class="muted" aria-live="polite">
      {what}…
    </p>
  );
}

/** "Load more" under a list read a page at a time, with how many rows are shown. */
export function LoadMore({ shown, busy, onMore }: { shown: number; busy: boolean; onMore: () => void }) {
  return (
    <div class="pager">
      <span class="muted small">{shown} shown</span>
      <button type="button" onClick={onMore} disabled={busy}>
        {busy ? 'Loading…' : 'Load more'}
      </button>
    </div>
  );
}

/** Keyset paging: the API gives only "next"; earlier tokens are kept to go back. */
export function Pager(props: {
  page: number;
  hasNext: boolean;
  onPrev: () => void;
  onNext: () => void;
  label: string;
}) {
  return (
    <nav class="pager" aria-label={props.label}>
      <button type="button" onClick={props.onPrev} disabled={props.page === 0}>
        Previous
      </button>
      <span>Page {props.page + 1}</span>
      <button type="button" onClick={props.onNext} disabled={!props.hasNext}>
        Next
      </button>
    </nav>
  );
}

/**
 * The clear() of every mounted action. A message stops applying, and goes, when the URL changes (another page,
 * Back, another project, a filter) or another action starts anywhere on the page; a field's error goes as soon as
 * the field is edited (`onInput` on the form, or `edited`).
 */
const actions = new Set<() => void>();
onNavigate(() => {
  for (const clear of actions) clear();
});

/**
 * Runs an async action and keeps its busy state and its messages for the form or button that started it: `notice`
 * (what succeeded), `error` (a failure that concerns the form as a whole, shown at its top) and `fieldError(name)`
 * (a failure that concerns one field: `fields` maps the API's field paths to the form's field names, which are
 * the `name` attributes of its controls).
 */
export function useAction(fields: FieldMap = {}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<ComponentChildren>(null);
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const form = useRef<HTMLFormElement>(null);
  const self = useRef<() => void>();
  useEffect(() => {
    const clear = () => {
      setError(null);
      setNotice(null);
      setFieldErrors({});
    };
    self.current = clear;
    actions.add(clear);
    return () => void actions.delete(clear);
  }, []);
  /**
   * The outcome of an attempt that failed: one field's error (the field gets the focus, so its error is read with
   * it) or the form's (scrolled into view). It replaces the messages of the attempt before.
   */
  const fail = (field: string | null, text: string, err: unknown = new Error(text)) => {
    for (const clear of actions) if (clear !== self.current) clear();
    setNotice(null);
    setError(field === null ? err : null);
    setFieldErrors(field === null ? {} : { [field]: text });
    requestAnimationFrame(() => {
      if (field === null) form.current?.querySelector('.error')?.scrollIntoView({ block: 'nearest' });
      else form.current?.querySelector<HTMLElement>(`[name="${field}"]`)?.focus();
    });
  };
  const run = async (fn: () => Promise<unknown>, success?: ComponentChildren): Promise<boolean> => {
    for (const clear of actions) if (clear !== self.current) clear();
    setBusy(true);
    setError(null);
    setNotice(null);
    setFieldErrors({});
    try {
      await fn();
      if (success !== undefined) setNotice(success);
      return true;
    } catch (err) {
      // At the top of the form, the error itself: ErrorText adds its status and the link to its explanation.
      const { field, text } = explainError(err, fields);
      fail(field, text, err);
      return false;
    } finally {
      setBusy(false);
    }
  };
  const edited = (field: string) =>
    setFieldErrors((all) => {
      if (!(field in all)) return all;
      const rest = { ...all };
      delete rest[field];
      return rest;
    });
  return {
    busy,
    error,
    setError,
    notice,
    setNotice,
    run,
    fail,
    edited,
    form,
    fieldError: (field: string): string | undefined => fieldErrors[field],
    /** For the form's onInput: editing a control clears the error of its field (its `name`). */
    onInput: (e: Event) => {
      const name = (e.target as HTMLInputElement).name;
      if (name) edited(name);
    },
  };
}

/** Loads data for a screen; `reload` fetches again. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setError(null);
    fn().then(
      (d) => live && setData(d),
      (e) => live && setError(e),
    );
    return () => void (live = false);
  }, [...deps, tick]);
  return { data, error, reload: () => setTick((n) => n + 1), setData };
}

/** A page heading that also names the document (screen readers and browser history). */
export function Title({
  children,
  sub,
  actions,
}: {
  children: string;
  sub?: ComponentChildren;
  actions?: ComponentChildren;
}) {
  useEffect(() => {
    document.title = `${children} · Sensor Cloud`;
  }, [children]);
  return (
    <div class="page-head">
      <div class="page-title">
        <h1>{children}</h1>
        {sub ? <div class="page-sub">{sub}</div> : null}
      </div>
      {actions ? <div class="page-actions">{actions}</div> : null}
    </div>
  );
}
