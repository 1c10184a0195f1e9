import { render, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { RelativeTime, relativeText } from './RelativeTime';

const now = Date.parse('2026-11-26T12:00:00Z');

describe('relativeText', () => {
  it.each([
    [now, 'now'],
    [now - 3_000, 'now'],
    [now - 45_000, '45 seconds ago'],
    [now - 3 * 60_000, '3 minutes ago'],
    [now + 2 * 3600_000, 'in 2 hours'],
    [now - 24 * 3600_000, 'yesterday'],
    [now - 3 * 24 * 3600_000, '3 days ago'],
  ])('%d', (when, want) => {
    expect(relativeText(when, now)).toBe(want);
  });
});

describe('<RelativeTime>', () => {
  it('shows relative text with the absolute time on hover', () => {
    render(<RelativeTime value="2026-11-26T11:57:00Z" now={now} />);
    const el = screen.getByText('3 minutes ago');
    expect(el.tagName).toBe('TIME');
    expect(el).toHaveAttribute('datetime', '2026-11-26T11:57:00.000Z');
    expect(el.getAttribute('title')).toContain('2026-11-26T11:57:00.000Z');
    expect(el.getAttribute('title')).toContain('2026');
  });

  it('is relative to the time of the render that shows a new value', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(now);
      const { rerender } = render(<RelativeTime value="2026-11-26T11:59:00Z" />);
      expect(screen.getByText('1 minute ago')).toBeInTheDocument();
      // 30 s later the page shows a time 20 s after the first render: 10 s ago, not "in 20 seconds".
      vi.setSystemTime(now + 30_000);
      rerender(<RelativeTime value="2026-11-26T12:00:20Z" />);
      expect(screen.getByText('10 seconds ago')).toBeInTheDocument();
    } finally {
      vi.useRealTimers();
    }
  });

  it('shows a dash for a missing or zero time', () => {
    const { container } = render(
      <>
        <RelativeTime value={undefined} now={now} />
        <RelativeTime value="0001-01-01T00:00:00Z" now={now} />
        <RelativeTime value="not a time" now={now} />
      </>,
    );
    expect(container.textContent).toBe('———');
  });
});
