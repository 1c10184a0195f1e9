import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GetResult } from '../../api/types';
import { mockApi } from '../../test/api';
import { WHOAMI, renderApp } from '../../test/render';

afterEach(() => vi.unstubAllGlobals());

type Audit = GetResult<'/api/v1/audit'>;
const page1: Audit = {
  items: [
    { id: 3, time: '2026-11-26T11:59:00Z', actor: 'otto', action: 'deployment.pause', targetKind: 'deployment', targetName: 'd-1', result: 'success', details: { reason: 'load test' }, requestId: 'R3' },
    { id: 2, time: '2026-11-26T11:58:00Z', actor: 'vic', action: 'deployment.rollback', targetKind: 'route', targetName: 'POST /api/v1/deployments/{id}/rollback', result: 'denied' },
  ],
  continue: 'c2',
};
const page2: Audit = { items: [{ id: 1, time: '2026-11-26T11:00:00Z', actor: 'ada', action: 'cluster.create', targetKind: 'cluster', targetName: 'dev-1', result: 'success' }] };

function routes(who: object) {
  return {
    'GET /api/v1/whoami': who,
    'GET /api/v1/audit': (_r: Request, url: URL) => (url.searchParams.get('continue') === 'c2' ? page2 : page1),
  };
}

describe('Audit', () => {
  it('is for Admins only: others see why and the log is not asked for', async () => {
    const calls = mockApi(routes(WHOAMI.Operator));
    renderApp('/audit');
    expect(await screen.findByTestId('audit-forbidden')).toHaveTextContent('The audit log is for Admins.');
    expect(calls.some((c) => c.path === '/api/v1/audit')).toBe(false);
  });

  it('shows entries with the URL filters, and pages on with continue', async () => {
    const calls = mockApi(routes(WHOAMI.Admin));
    renderApp('/audit?actor=otto&action=deployment.pause');
    const rows = await screen.findAllByTestId('audit-row');
    expect(rows).toHaveLength(2);
    expect(rows[0]).toHaveTextContent('deployment.pause');
    expect(within(rows[0]!).getByRole('link', { name: 'd-1' })).toHaveAttribute('href', '/deployments/d-1');
    expect(rows[1]).toHaveTextContent('denied');
    const first = calls.find((c) => c.path === '/api/v1/audit')!.url.searchParams;
    expect([first.get('actor'), first.get('action'), first.get('continue')]).toEqual(['otto', 'deployment.pause', null]);
    expect(screen.getByTestId('audit-filter-actor')).toHaveValue('otto');

    await userEvent.click(screen.getByTestId('audit-more'));
    expect(await screen.findAllByTestId('audit-row')).toHaveLength(3);
    expect(calls.filter((c) => c.path === '/api/v1/audit').at(-1)!.url.searchParams.get('continue')).toBe('c2');
    expect(screen.queryByTestId('audit-more')).toBeNull();
  });

  it('applies new filters to the URL and the query', async () => {
    const calls = mockApi(routes(WHOAMI.Admin));
    renderApp('/audit');
    await screen.findAllByTestId('audit-row');
    await userEvent.type(screen.getByTestId('audit-filter-targetKind'), 'cluster');
    await userEvent.click(screen.getByTestId('audit-apply'));
    await vi.waitFor(() => expect(calls.filter((c) => c.path === '/api/v1/audit').at(-1)!.url.searchParams.get('targetKind')).toBe('cluster'));
    expect(screen.getByTestId('audit-filter-targetKind')).toHaveValue('cluster');
  });
});
