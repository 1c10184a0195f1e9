import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mockApi } from '../../test/api';
import { WHOAMI, renderApp } from '../../test/render';
import { canary } from './fixtures';

afterEach(() => vi.unstubAllGlobals());

const first = [
  canary({ id: 'aaaaaaaa-0000-0000-0000-000000000001' }),
  canary({ id: 'aaaaaaaa-0000-0000-0000-000000000002', status: 'Completed', waiting: undefined, version: '1.0.0' }),
];
const failed = canary({ id: 'aaaaaaaa-0000-0000-0000-000000000003', status: 'Failed', waiting: undefined, operator: 'other-operator' });
failed.clusters = failed.clusters!.map((c, i) => ({ ...c, status: ['failed', 'rolledBack', 'skipped', 'healthy'][i]! }));
const second = [failed];

function manager(who: object) {
  return mockApi({
    'GET /api/v1/whoami': who,
    'GET /api/v1/operators': { items: [{ name: 'sample-operator' }, { name: 'other-operator' }] },
    'GET /api/v1/deployments': (_req, url) => (url.searchParams.get('continue') === 'p2' ? { items: second } : { items: first, continue: 'p2' }),
  });
}

describe('Deployments', () => {
  it('lists deployments with status badges and relative times, and loads older pages', async () => {
    const calls = manager(WHOAMI.Viewer);
    renderApp('/deployments');
    const table = await screen.findByTestId('deployments-table');
    const rows = within(table).getAllByTestId('deployment-row');
    expect(rows.map((r) => r.dataset.status)).toEqual(['Validating', 'Completed']);
    expect(within(rows[0]!).getByRole('link', { name: 'aaaaaaaa' })).toHaveAttribute('href', '/deployments/aaaaaaaa-0000-0000-0000-000000000001');
    expect(rows[0]).toHaveTextContent('waiting: evaluation period');
    expect(rows[1]).toHaveTextContent('✓Completed');
    expect(rows[0]).toHaveTextContent('0/4 healthy');
    expect(within(rows[0]!).getAllByRole('time')[0]).toHaveAttribute('title', expect.stringContaining('2026-11-26T10:00:00.000Z'));
    expect(screen.queryByTestId('new-deployment')).toBeNull();
    await userEvent.click(screen.getByTestId('deployments-more'));
    await waitFor(() => expect(within(table).getAllByTestId('deployment-row')).toHaveLength(3));
    expect(within(table).getAllByTestId('deployment-row')[2]).toHaveTextContent('1/4 healthy · 1 failed, 1 rolled back, 1 skipped');
    expect(screen.queryByTestId('deployments-more')).toBeNull();
    expect(calls.filter((c) => c.path === '/api/v1/deployments').map((c) => c.url.searchParams.get('continue'))).toContain('p2');
  });

  it('says "waiting" once in the list, whatever the manager’s message starts with', async () => {
    const own = canary({ id: 'aaaaaaaa-0000-0000-0000-000000000004', waiting: { reason: 'queued', message: 'waiting for 1 deployment ahead' } });
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/operators': { items: [] }, 'GET /api/v1/deployments': { items: [own, first[0]!] } });
    renderApp('/deployments');
    const rows = within(await screen.findByTestId('deployments-table')).getAllByTestId('deployment-row');
    const texts = rows.map((r) => within(r).getByTestId('deployment-waiting').textContent);
    expect(texts[0]).toBe('waiting for 1 deployment ahead');
    expect(texts[1]).toMatch(/^waiting: evaluation period, .+ left$/);
  });

  it('keeps the filters in the URL and sends them to the manager', async () => {
    const calls = manager(WHOAMI.Operator);
    renderApp('/deployments?operator=sample-operator&status=Failed&active=true');
    await screen.findByTestId('deployments-table');
    const q = calls.filter((c) => c.path === '/api/v1/deployments').at(-1)!.url.searchParams;
    expect(Object.fromEntries(q)).toEqual({ operator: 'sample-operator', status: 'Failed', active: 'true', limit: '50' });
    expect(screen.getByTestId('filter-status')).toHaveValue('Failed');
    expect(screen.getByTestId('filter-active')).toBeChecked();
    expect(screen.getByTestId('new-deployment')).toHaveAttribute('href', '/deployments/new?operator=sample-operator');

    await userEvent.selectOptions(screen.getByTestId('filter-status'), '');
    await userEvent.click(screen.getByTestId('filter-active'));
    await waitFor(() => {
      const last = calls.filter((c) => c.path === '/api/v1/deployments').at(-1)!.url.searchParams;
      expect(Object.fromEntries(last)).toEqual({ operator: 'sample-operator', limit: '50' });
    });
  });

  it('shows tiles on request', async () => {
    manager(WHOAMI.Viewer);
    renderApp('/deployments?view=tiles');
    const tiles = await screen.findByTestId('deployments-tiles');
    expect(within(tiles).getAllByTestId('deployment-tile')).toHaveLength(2);
    expect(screen.getByTestId('view-tiles')).toHaveAttribute('aria-pressed', 'true');
    await userEvent.click(screen.getByTestId('view-table'));
    expect(await screen.findByTestId('deployments-table')).toBeInTheDocument();
  });
});
