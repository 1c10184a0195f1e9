import { useEffect, useId, useRef, useState, type ReactNode } from 'react';

export interface ConfirmButtonProps {
  /** The button's text ("Pause"). */
  label: string;
  /** The dialog's heading ("Pause deployment d-12?"). */
  title: string;
  /** What happens, in a sentence or two. */
  message?: ReactNode;
  /** The confirming button's text (default: label). */
  confirmLabel?: string;
  /** A destructive action: the confirming button is red and Cancel has the focus. */
  danger?: boolean;
  /** Ask for a reason or comment ({label, required}); it is passed to onConfirm. */
  reason?: { label: string; required?: boolean };
  /** Runs on confirmation; a rejection is shown in the dialog, which stays open. */
  onConfirm: (reason: string) => Promise<unknown>;
  disabled?: boolean;
  className?: string;
  /** data-testid of the button; the dialog's confirm button is `${testId}-confirm`. */
  testId?: string;
}

/**
 * A button that asks first: a modal dialog (role=dialog, aria-modal) with Cancel and the
 * confirming button, Escape to cancel, focus kept inside and returned to the button.
 */
export function ConfirmButton(p: ConfirmButtonProps) {
  const [open, setOpen] = useState(false);
  const trigger = useRef<HTMLButtonElement>(null);
  const close = () => {
    setOpen(false);
    trigger.current?.focus();
  };
  return (
    <>
      <button
        ref={trigger}
        type="button"
        className={p.className ?? (p.danger ? 'danger' : undefined)}
        disabled={p.disabled}
        onClick={() => setOpen(true)}
        data-testid={p.testId}
        aria-haspopup="dialog"
      >
        {p.label}
      </button>
      {open && <ConfirmDialog {...p} onClose={close} />}
    </>
  );
}

function ConfirmDialog(p: ConfirmButtonProps & { onClose: () => void }) {
  const titleId = useId();
  const reasonId = useId();
  const box = useRef<HTMLDivElement>(null);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');

  useEffect(() => {
    const first = box.current?.querySelector<HTMLElement>(p.reason ? 'textarea' : p.danger ? '[data-cancel]' : '[data-confirm]');
    first?.focus();
  }, [p.reason, p.danger]);

  function onKeyDown(e: React.KeyboardEvent) {
    if (e.key === 'Escape' && !busy) {
      e.stopPropagation();
      p.onClose();
      return;
    }
    if (e.key !== 'Tab' || !box.current) return;
    const f = [...box.current.querySelectorAll<HTMLElement>('button:not(:disabled), textarea, a[href]')];
    if (f.length === 0) return;
    const first = f[0]!;
    const last = f[f.length - 1]!;
    if (e.shiftKey && document.activeElement === first) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && document.activeElement === last) {
      e.preventDefault();
      first.focus();
    }
  }

  async function confirm() {
    if (p.reason?.required && reason.trim() === '') {
      setError(`${p.reason.label} is required.`);
      return;
    }
    setBusy(true);
    setError('');
    try {
      await p.onConfirm(reason.trim());
      p.onClose();
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  }

  return (
    <div className="dialog-backdrop">
      <div ref={box} className="dialog" role="dialog" aria-modal="true" aria-labelledby={titleId} onKeyDown={onKeyDown}>
        <h2 id={titleId}>{p.title}</h2>
        {p.message && <div>{p.message}</div>}
        {p.reason && (
          <p>
            <label htmlFor={reasonId}>
              {p.reason.label}
              {p.reason.required ? ' (required)' : ' (optional)'}
            </label>
            <textarea id={reasonId} rows={3} cols={50} value={reason} onChange={(e) => setReason(e.target.value)} />
          </p>
        )}
        {error && (
          <p role="alert" className="notice error">
            {error}
          </p>
        )}
        <div className="actions">
          <button type="button" data-cancel onClick={p.onClose} disabled={busy}>
            Cancel
          </button>
          <button
            type="button"
            data-confirm
            className={p.danger ? 'danger' : 'primary'}
            onClick={confirm}
            disabled={busy}
            data-testid={p.testId ? `${p.testId}-confirm` : undefined}
          >
            {busy ? 'Working…' : (p.confirmLabel ?? p.label)}
          </button>
        </div>
      </div>
    </div>
  );
}
