// Rotating a data connector's signature secret without a gap (extensions §X3), for roles with dataconnector.update:
// a modal dialog to choose the overlap (none, 1 h, 24 h, 7 days) and, optionally, one's own secret; then the new
// secret, shown this once with a copy button, and until when the previous one still signs pushes. Loaded when it is
// first opened (connector.tsx), as it is used rarely; what the pages show while an overlap runs is in rotation.tsx.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { CopyButton, ErrorText, Field, FieldError, useAction } from '../components.tsx';
import { formatTime } from '../format.ts';
import { type Connector, endText, rotationEnd } from './rotation.tsx';

/** The overlaps offered, in seconds; 24 h is the API's default. */
const OVERLAPS = [
  { seconds: 0, label: 'None: switch at once', hint: 'the receiver must have the new secret before the next push' },
  { seconds: 3600, label: '1 hour', hint: '' },
  { seconds: 86_400, label: '24 hours', hint: 'recommended' },
  { seconds: 604_800, label: '7 days', hint: 'the longest' },
] as const;

interface Rotated {
  dataConnector: Connector;
  signatureSecret: string;
}

export function RotateSecretDialog(props: {
  base: string;
  connector: Connector;
  onRotated: () => void;
  onClose: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [overlap, setOverlap] = useState(86_400);
  const [own, setOwn] = useState('');
  const [done, setDone] = useState<{ secret: string | null; until: string | null } | null>(null);
  const action = useAction({ signatureSecret: 'secret', overlap: 'overlap' });
  const signed = props.connector.httpConfig.signatureSecret !== '';
  const running = rotationEnd(props.connector);

  useEffect(() => {
    const dialog = ref.current!;
    dialog.showModal();
    const closed = () => props.onClose();
    dialog.addEventListener('close', closed);
    return () => dialog.removeEventListener('close', closed);
  }, []);
  // Escape would lose a secret shown only once: once it is on screen, only "I have stored it" closes the dialog.
  // The focus goes to what comes next: copying the secret, or closing.
  useEffect(() => {
    const dialog = ref.current!;
    if (done) dialog.querySelector<HTMLButtonElement>('.secret-line button, .form-actions button')?.focus();
    const cancel = (e: Event) => {
      if (done?.secret) e.preventDefault();
    };
    dialog.addEventListener('cancel', cancel);
    return () => dialog.removeEventListener('cancel', cancel);
  }, [done]);

  const rotate = async (e: Event) => {
    e.preventDefault();
    await action.run(async () => {
      const res = await api<Rotated>('POST', `${props.base}:rotateSecret`, {
        ...(own !== '' ? { signatureSecret: own } : {}),
        overlap: `${overlap}s`,
      });
      setOwn('');
      setDone({ secret: own === '' ? res.signatureSecret : null, until: rotationEnd(res.dataConnector) });
      props.onRotated();
    });
  };

  return (
    <dialog ref={ref} class="dialog" aria-labelledby="rotate-h">
      {done ? (
        <div class="dialog-body">
          <h2 id="rotate-h">{done.secret ? 'Store the new secret now' : 'The secret was rotated'}</h2>
          {done.secret ? (
            <div class="secret-box">
              <p>
                <strong>This is the only time it is shown.</strong> Give it to the receiver now; it is never shown
                again. If it is lost, rotate again.
              </p>
              <div class="secret-line">
                <code class="secret" data-testid="new-secret">
                  {done.secret}
                </code>
                <CopyButton text={done.secret} label="Copy secret" />
              </div>
            </div>
          ) : (
            <p>The secret you entered signs every push from now on.</p>
          )}
          <p data-testid="rotated-overlap">
            {done.until ? (
              <>
                The previous secret is accepted until <strong>{endText(done.until)}</strong>: until then every push also
                carries <code>X-Service-Signature-Previous</code>, signed with it, so the receiver can switch to the new
                secret in that time.
              </>
            ) : (
              <>
                <strong>No overlap:</strong> every push from now on is signed with the new secret only.
              </>
            )}
          </p>
          <div class="form-actions">
            <button type="button" class="primary" onClick={() => ref.current!.close()}>
              {done.secret ? 'I have stored it' : 'Close'}
            </button>
          </div>
        </div>
      ) : (
        <form class="dialog-body" ref={action.form} onSubmit={rotate} onInput={action.onInput} noValidate>
          <h2 id="rotate-h">Rotate the signature secret</h2>
          <p class="muted small">
            A new secret signs every push from now on. During the overlap each push is signed twice: with the new secret
            in <code>X-Service-Signature</code> and with the current one in <code>X-Service-Signature-Previous</code>,
            so the receiver keeps accepting pushes while it switches to the new secret.
          </p>
          {!signed ? (
            <p class="alert alert-warn">
              This connector does not sign its pushes yet: the new secret applies at once, with no previous secret.
            </p>
          ) : running ? (
            <p class="alert alert-warn">
              A rotation is under way: the secret in use now becomes the previous one, and the one before it (accepted
              until {formatTime(running)}) stops signing at once.
            </p>
          ) : null}
          {signed ? (
            <fieldset class="field" aria-describedby={action.fieldError('overlap') ? 'overlap-error' : undefined}>
              <legend>Overlap: how long the current secret still signs pushes</legend>
              {OVERLAPS.map((o) => (
                <label key={o.seconds} class="check-label option-line">
                  <input
                    type="radio"
                    name="overlap"
                    value={o.seconds}
                    checked={overlap === o.seconds}
                    onChange={() => setOverlap(o.seconds)}
                  />{' '}
                  <span>
                    {o.label}
                    {o.hint ? <span class="muted small"> ({o.hint})</span> : null}
                  </span>
                </label>
              ))}
              <FieldError id="overlap-error" text={action.fieldError('overlap')} />
            </fieldset>
          ) : null}
          <Field
            label="Your own secret (optional)"
            hint="Leave empty for a random secret of 32 hex characters, made by the service and shown once."
            error={action.fieldError('secret')}
          >
            {(id, described, invalid) => (
              <input
                id={id}
                name="secret"
                type="password"
                autocomplete="new-password"
                maxLength={256}
                aria-describedby={described}
                aria-invalid={invalid}
                value={own}
                onInput={(e) => setOwn((e.target as HTMLInputElement).value)}
              />
            )}
          </Field>
          <ErrorText error={action.error} />
          <div class="form-actions">
            <button type="submit" class="primary" disabled={action.busy}>
              {action.busy ? 'Rotating…' : 'Rotate secret'}
            </button>
            <button type="button" onClick={() => ref.current!.close()}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}
