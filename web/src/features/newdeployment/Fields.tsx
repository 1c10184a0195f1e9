// Labelled inputs that show the error the form or the manager found at their field.
import { useId, type ReactNode } from 'react';
import type { Field } from './model';

export interface FieldProps {
  field: Field;
  label: string;
  hint?: ReactNode;
  error?: string;
}

/** The hint and the error under an input, with the ids its aria-describedby names. */
function useDescribed(p: FieldProps) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [p.hint ? hintId : '', p.error ? errorId : ''].filter(Boolean).join(' ') || undefined;
  const notes = (
    <>
      {p.hint && (
        <span id={hintId} className="hint">
          {p.hint}
        </span>
      )}
      {p.error && (
        <span id={errorId} className="field-error" data-testid={`error-${p.field}`}>
          {p.error}
        </span>
      )}
    </>
  );
  return { id, describedBy, notes };
}

export function TextField(
  p: FieldProps & { value: string; onChange: (v: string) => void; inputMode?: 'decimal' | 'numeric' | 'text'; placeholder?: string },
) {
  const { id, describedBy, notes } = useDescribed(p);
  return (
    <div className="form-field">
      <label htmlFor={id}>{p.label}</label>
      <input
        id={id}
        type="text"
        value={p.value}
        inputMode={p.inputMode}
        placeholder={p.placeholder}
        onChange={(e) => p.onChange(e.target.value)}
        aria-invalid={p.error ? true : undefined}
        aria-describedby={describedBy}
        data-testid={`field-${p.field}`}
      />
      {notes}
    </div>
  );
}

export function TextArea(p: FieldProps & { value: string; onChange: (v: string) => void; rows?: number; placeholder?: string }) {
  const { id, describedBy, notes } = useDescribed(p);
  return (
    <div className="form-field wide">
      <label htmlFor={id}>{p.label}</label>
      <textarea
        id={id}
        className="mono"
        rows={p.rows ?? 5}
        value={p.value}
        placeholder={p.placeholder}
        spellCheck={false}
        onChange={(e) => p.onChange(e.target.value)}
        aria-invalid={p.error ? true : undefined}
        aria-describedby={describedBy}
        data-testid={`field-${p.field}`}
      />
      {notes}
    </div>
  );
}

export function SelectField(p: FieldProps & { value: string; onChange: (v: string) => void; options: { value: string; label: string }[] }) {
  const { id, describedBy, notes } = useDescribed(p);
  return (
    <div className="form-field">
      <label htmlFor={id}>{p.label}</label>
      <select
        id={id}
        value={p.value}
        onChange={(e) => p.onChange(e.target.value)}
        aria-invalid={p.error ? true : undefined}
        aria-describedby={describedBy}
        data-testid={`field-${p.field}`}
      >
        {p.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      {notes}
    </div>
  );
}

export function CheckField(p: FieldProps & { checked: boolean; onChange: (v: boolean) => void }) {
  const { id, describedBy, notes } = useDescribed(p);
  return (
    <div className="form-field check">
      <span className="check-line">
        <input
          id={id}
          type="checkbox"
          checked={p.checked}
          onChange={(e) => p.onChange(e.target.checked)}
          aria-invalid={p.error ? true : undefined}
          aria-describedby={describedBy}
          data-testid={`field-${p.field}`}
        />
        <label htmlFor={id}>{p.label}</label>
      </span>
      {notes}
    </div>
  );
}
