import { render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
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
