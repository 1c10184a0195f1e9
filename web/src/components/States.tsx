// Loading and error states shared by the pages.
export function Loading({ what }: { what: string }) {
  return (
    <p role="status" className="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function ErrorNotice({ error, what }: { error: Error; what?: string }) {
  return (
    <p role="alert" className="notice error" data-testid="error">
      {what ? `Could not load ${what}: ` : ''}
      {error.message}
    </p>
  );
}
