import { useEffect, useState } from 'react';

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];
const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const abs = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'medium' });

/** "3 minutes ago", "in 2 hours", "now": when relative to now (both in ms). */
export function relativeText(when: number, now: number): string {
  const secs = Math.round((when - now) / 1000);
  if (Math.abs(secs) < 5) return 'now';
  for (const [unit, size] of UNITS) {
    if (Math.abs(secs) >= size || unit === 'second') return rtf.format(Math.trunc(secs / size), unit);
  }
  return 'now';
}

/** The absolute time, as shown on hover: "Nov 26, 2026, 9:30:05 PM" plus the ISO time. */
export function absoluteText(d: Date): string {
  return `${abs.format(d)} (${d.toISOString()})`;
}

/**
 * A timestamp as relative text ("3 minutes ago") with the absolute time in the title (hover)
 * and in a <time dateTime>, refreshed every 15 s. Missing or invalid times show an em dash.
 */
export function RelativeTime({ value, now: fixedNow }: { value: string | null | undefined; now?: number }) {
  // Read at each render (a new value shown later is relative to then); the tick re-renders.
  const [, tick] = useState(0);
  useEffect(() => {
    if (fixedNow !== undefined) return;
    const t = setInterval(() => tick((n) => n + 1), 15_000);
    return () => clearInterval(t);
  }, [fixedNow]);
  const d = value ? new Date(value) : null;
  if (!d || Number.isNaN(d.getTime()) || d.getTime() <= 0) return <span className="muted">—</span>;
  return (
    <time dateTime={d.toISOString()} title={absoluteText(d)}>
      {relativeText(d.getTime(), fixedNow ?? Date.now())}
    </time>
  );
}
