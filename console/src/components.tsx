// Small building blocks shared by the screens. All text is rendered as text (Preact escapes it); no screen sets
// innerHTML.
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorText } from './api.ts';
import { reasonFor } from './permissions.ts';

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
      {errorText(error)}
      {help ? <> · <a href={new URL(help, location.origin).pathname + new URL(help, location.origin).hash}>what this means</a></> : null}
    </p>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return <p class="notice" role="status">{children}</p>;
}

/** A labelled form control; `hint` is read with the control. */
export function Field(props: { label: string; hint?: string; children: (id: string, describedBy?: string) => ComponentChildren; wide?: boolean }) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  return (
    <div class={props.wide ? 'field wide' : 'field'}>
      <label for={id}>{props.label}</label>
      {props.children(id, hintId)}
      {props.hint ? <small id={hintId}>{props.hint}</small> : null}
    </div>
  );
}

/** A button for an action the role may not allow: disabled with the reason when it does not. */
export function ActionButton(props: JSX.ButtonHTMLAttributes<HTMLButtonElement> & { allowed?: boolean; permission?: string }) {
  const { allowed = true, permission, children, ...rest } = props;
  if (allowed) return <button type="button" {...rest}>{children}</button>;
  return <button type="button" {...rest} disabled title={permission ? reasonFor(permission) : undefined} aria-disabled="true">{children}</button>;
}

/** Two-step destructive action: the first click asks, the second does it. */
export function ConfirmButton(props: { label: string; confirm: string; onConfirm: () => void | Promise<void>; class?: string; busy?: boolean }) {
  const [asking, setAsking] = useState(false);
  useEffect(() => {
    if (!asking) return;
    const t = setTimeout(() => setAsking(false), 6000);
    return () => clearTimeout(t);
  }, [asking]);
  if (!asking) return <button type="button" class={props.class ?? 'danger'} onClick={() => setAsking(true)} disabled={props.busy}>{props.label}</button>;
  return (
    <span class="confirm">
      <button type="button" class="danger solid" onClick={() => { setAsking(false); void props.onConfirm(); }}>{props.confirm}</button>
      <button type="button" onClick={() => setAsking(false)}>Cancel</button>
    </span>
  );
}

/** Copies text to the clipboard; says so, or selects the text to copy by hand where the clipboard is refused. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <button type="button" onClick={async () => {
      try {
        await navigator.clipboard.writeText(text);
        setState('copied');
      } catch {
        setState('failed');
      }
      setTimeout(() => setState('idle'), 2500);
    }}>{state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy refused: select the text' : label}</button>
  );
}

export function Badge({ kind, children }: { kind: string; children: ComponentChildren }) {
  return <span class={`badge badge-${kind}`}>{children}</span>;
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return <p class="muted" aria-live="polite">{what}…</p>;
}

/** Keyset paging: the API gives only "next"; earlier tokens are kept to go back. */
export function Pager(props: { page: number; hasNext: boolean; onPrev: () => void; onNext: () => void; label: string }) {
  return (
    <nav class="pager" aria-label={props.label}>
      <button type="button" onClick={props.onPrev} disabled={props.page === 0}>Previous</button>
      <span>Page {props.page + 1}</span>
      <button type="button" onClick={props.onNext} disabled={!props.hasNext}>Next</button>
    </nav>
  );
}

/** Runs an async action and keeps its error and busy state for the form that started it. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (fn: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      return true;
    } catch (err) {
      setError(err);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}

/** Loads data for a screen; `reload` fetches again. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setError(null);
    fn().then((d) => live && setData(d), (e) => live && setError(e));
    return () => void (live = false);
  }, [...deps, tick]);
  return { data, error, reload: () => setTick((n) => n + 1), setData };
}

/** A page heading that also names the document (screen readers and browser history). */
export function Title({ children, sub, actions }: { children: string; sub?: ComponentChildren; actions?: ComponentChildren }) {
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
