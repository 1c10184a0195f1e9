import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mockApi } from '../../test/api';
import { WHOAMI, fakeViewport, renderApp } from '../../test/render';
import { bigFleet, smallFleet } from './fixtures';
import { COL_W, ROW_H, reveal } from './FleetGrid';

/** The text a sighted user reads in el: its text without what is hidden from assistive technology (icons). */
function visibleText(el: Element): string {
  const copy = el.cloneNode(true) as Element;
  copy.querySelectorAll('[aria-hidden="true"]').forEach((h) => h.remove());
  return copy.textContent ?? '';
}

/** The words of s, as axe-core's label-content-name-mismatch rule splits them (letters and digits). */
function words(s: string): string[] {
  return s.normalize('NFKD').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

/** part occurs in whole as a contiguous run. */
function isRunOf(part: string[], whole: string[]): boolean {
  return whole.some((_, i) => part.every((w, j) => whole[i + j] === w));
}

let restore: () => void;
beforeEach(() => {
  restore = fakeViewport(1200, 700);
});
afterEach(() => {
  restore();
  vi.unstubAllGlobals();
});

describe('Fleet', () => {
  it('shows each cell with version, health and drift, one bad cluster as one bad cell', async () => {
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/fleet': smallFleet });
    renderApp('/');
    const grid = await screen.findByRole('grid', { name: /Fleet: 2 operators by 4 clusters/ });
    const cells = within(grid).getAllByTestId('fleet-cell');
    expect(cells).toHaveLength(4);
    const bad = cells.filter((c) => c.dataset.health === 'Unhealthy');
    expect(bad).toHaveLength(1);
    expect(bad[0]).toHaveAttribute('data-cluster', 'stg-1');
    expect(bad[0]).toHaveTextContent('0.2.0');
    expect(bad[0]).toHaveTextContent('Unhealthy');
    expect(bad[0]).toHaveTextContent('↑ 0.3.0');
    expect(within(bad[0]!).getByRole('link')).toHaveAccessibleName('sample-operator on stg-1: 0.2.0, Unhealthy, 0.3.0 is the latest, CrashLoopBackOff');
    // Label in name (WCAG 2.5.3): each cell's visible words are a run of its accessible name's.
    for (const link of within(grid).getAllByRole('link').filter((l) => l.closest('[data-testid="fleet-cell"]'))) {
      expect(isRunOf(words(visibleText(link)), words(link.getAttribute('aria-label') ?? ''))).toBe(true);
    }
    const dev = cells.find((c) => c.dataset.operator === 'sample-operator' && c.dataset.cluster === 'dev-1')!;
    expect(within(dev).getByRole('link')).toHaveAttribute('href', '/deployments/d-1');
    expect(screen.getByTestId('fleet-group-Production')).toHaveAccessibleName('Production · 2 clusters');
    expect(screen.getByTestId('fleet-summary')).toHaveTextContent('2 operators × 4 clusters, 4 installed');
    expect(within(grid).getAllByRole('columnheader').map((h) => h.getAttribute('aria-colindex'))).toContain('5');
  });

  it('heads each environment with a short label that fits one column, the whole in its name and title', async () => {
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/fleet': smallFleet });
    renderApp('/');
    const grid = await screen.findByRole('grid');
    const groups = ['Dev', 'Staging', 'Production'].map((e) => screen.getByTestId(`fleet-group-${e}`));
    expect(groups.map((g) => g.textContent)).toEqual(['Dev · 1', 'Staging · 1', 'Production · 2']);
    expect(groups.map((g) => g.getAttribute('title'))).toEqual(['Dev · 1 cluster', 'Staging · 1 cluster', 'Production · 2 clusters']);
    expect(within(grid).getByRole('columnheader', { name: 'Staging · 1 cluster' })).toBe(groups[1]);
    // One line, cut with an ellipsis rather than wrapped: the browser tests measure it in both themes.
  });

  it('counts one operator and one cluster in the singular', async () => {
    const one = { ...smallFleet, operators: smallFleet.operators!.slice(1), clusters: smallFleet.clusters!.slice(0, 1), cells: smallFleet.cells!.slice(2, 3) };
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/fleet': one });
    renderApp('/');
    expect(await screen.findByRole('grid', { name: 'Fleet: 1 operator by 1 cluster' })).toBeInTheDocument();
    expect(screen.getByTestId('fleet-summary')).toHaveTextContent('1 operator × 1 cluster, 1 installed');
  });

  it('puts the filters in the URL and asks the manager for one environment', async () => {
    const calls = mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/fleet': smallFleet });
    renderApp('/fleet?environment=Production&health=Unhealthy');
    expect(await screen.findByTestId('fleet-summary')).toBeInTheDocument();
    expect(calls.find((c) => c.path === '/api/v1/fleet')?.url.searchParams.get('environment')).toBe('Production');
    expect(screen.getByTestId('filter-environment')).toHaveValue('Production');
    expect(screen.getByTestId('filter-health')).toHaveValue('Unhealthy');
    // The small fleet's Production has one unhealthy cluster (prod-2) and no unhealthy cell.
    expect(screen.getByRole('grid', { name: /Fleet: 2 operators by 1 cluster$/ })).toBeInTheDocument();
    await userEvent.type(screen.getByTestId('filter-operator'), 'nomatch');
    expect(await screen.findByTestId('fleet-empty')).toHaveTextContent('Nothing in the fleet matches');
  });

  it('keeps only a window of a 50 × 2000 fleet in the DOM and moves it on scroll', async () => {
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/fleet': bigFleet(50, 2000) });
    renderApp('/');
    const grid = await screen.findByRole('grid', { name: /50 operators by 2000 clusters/ });
    expect(grid).toHaveAttribute('aria-rowcount', '52');
    expect(grid).toHaveAttribute('aria-colcount', '2001');
    const first = within(grid).getAllByTestId('fleet-cell');
    // 700 px high and 1200 px wide: some 12 rows × 9 columns with overscan, not 100 000 cells.
    expect(first.length).toBeGreaterThan(20);
    expect(first.length).toBeLessThan(400);
    expect(first[0]).toHaveAttribute('data-cluster', 'cluster-0000');
    act(() => {
      grid.scrollTop = 30 * ROW_H;
      grid.scrollLeft = 1500 * COL_W;
      fireEvent.scroll(grid);
    });
    await waitFor(() => {
      const cells = within(grid).getAllByTestId('fleet-cell');
      expect(cells.some((c) => c.dataset.cluster === 'cluster-1500' && c.dataset.operator === 'operator-30')).toBe(true);
      expect(cells.some((c) => c.dataset.cluster === 'cluster-0000')).toBe(false);
      expect(cells.length).toBeLessThan(400);
    });
  });

  it('moves between cells with the keyboard, one tab stop', async () => {
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/fleet': bigFleet(5, 40) });
    renderApp('/');
    const grid = await screen.findByRole('grid');
    const head = within(grid).getByRole('link', { name: 'operator-00' });
    expect(head).toHaveAttribute('tabindex', '0');
    head.focus();
    await userEvent.keyboard('{ArrowRight}{ArrowRight}{ArrowDown}');
    await waitFor(() => expect(document.activeElement).toHaveAccessibleName(/^operator-01 on cluster-0001: 2.0.0/));
    expect(within(grid).getAllByRole('link').filter((l) => l.getAttribute('tabindex') === '0')).toHaveLength(1);
    await userEvent.keyboard('{Control>}{End}{/Control}');
    await waitFor(() => expect(document.activeElement).toHaveAccessibleName(/^operator-04 on cluster-0039: 2.0.0/));
    expect(grid.scrollLeft).toBeGreaterThan(30 * COL_W);
    await userEvent.keyboard('{Home}');
    await waitFor(() => expect(document.activeElement).toHaveAccessibleName('operator-04'));
    expect(grid.scrollLeft).toBe(0);
  });

  it('scrolls just enough to show the active cell (reveal)', () => {
    // viewport 700 high with an 80 px header: row 0 at 80 is in view; row 20 at 1200 is not.
    expect(reveal(0, 700, 80, 80, 56)).toBe(0);
    expect(reveal(0, 700, 80, 1200, 56)).toBe(556);
    expect(reveal(1000, 700, 80, 900, 56)).toBe(820);
  });

  it('follows a cell that turns healthy under the health filter, and clearing the filter shows all again', async () => {
    const degraded = structuredClone(smallFleet);
    degraded.cells![2]!.health = 'Degraded';
    let current = degraded;
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/fleet': () => current });
    const { queryClient } = renderApp('/?health=Degraded');
    const grid = await screen.findByRole('grid', { name: /1 operator by 1 cluster$/ });
    expect(within(grid).getAllByTestId('fleet-cell').map((c) => c.dataset.cluster)).toEqual(['dev-1']);
    current = smallFleet;
    await act(() => queryClient.invalidateQueries({ queryKey: ['fleet'] }));
    expect(await screen.findByTestId('fleet-empty')).toBeInTheDocument();
    await userEvent.selectOptions(screen.getByTestId('filter-health'), '');
    expect(screen.getByTestId('filter-health')).toHaveValue('');
    expect(await screen.findByRole('grid', { name: /2 operators by 4 clusters/ })).toBeInTheDocument();
  });

  it('refuses an unknown environment in the URL with a clear message', async () => {
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/fleet': smallFleet });
    renderApp('/fleet?environment=Prod');
    expect(await screen.findByTestId('error')).toHaveTextContent('Unknown environment “Prod”: choose Dev, Staging or Production.');
  });

  it('says when the fleet cannot be read', async () => {
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/fleet': () => new Response(JSON.stringify({ message: 'store unavailable' }), { status: 503 }) });
    renderApp('/');
    expect(await screen.findByTestId('error')).toHaveTextContent('Could not load the fleet: store unavailable');
  });
});
