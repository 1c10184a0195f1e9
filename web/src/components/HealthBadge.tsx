// Health and drift as badges: colour always with a symbol and words, never colour alone.

export type Tone = 'ok' | 'warn' | 'bad' | 'unknown';

const HEALTH: Record<string, { tone: Tone; symbol: string }> = {
  Healthy: { tone: 'ok', symbol: '✓' },
  Degraded: { tone: 'warn', symbol: '!' },
  Unhealthy: { tone: 'bad', symbol: '✗' },
  Unknown: { tone: 'unknown', symbol: '?' },
};

export function healthTone(health: string | undefined): Tone {
  return HEALTH[health ?? '']?.tone ?? 'unknown';
}

/** "✓ Healthy", "✗ Unhealthy" …; reason goes into the title (hover) and the accessible name. */
export function HealthBadge({ health, reason }: { health: string | undefined; reason?: string }) {
  const h = health || 'Unknown';
  const { tone, symbol } = HEALTH[h] ?? { tone: 'unknown' as Tone, symbol: '?' };
  return (
    <span className={`status status-${tone}`} title={reason || undefined} data-health={h}>
      <span aria-hidden="true">{symbol}</span>
      {h}
      {reason ? <span className="visually-hidden">: {reason}</span> : null}
    </span>
  );
}

/** A status word with a tone: "Running", "Failed" … */
export function StatusBadge({ tone, children, testId }: { tone: Tone; children: React.ReactNode; testId?: string }) {
  return (
    <span className={`status status-${tone}`} data-testid={testId}>
      {children}
    </span>
  );
}
