import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GetResult } from '../../api/types';
import { mockApi } from '../../test/api';
import { WHOAMI, renderApp } from '../../test/render';
import { smallFleet } from '../fleet/fixtures';

afterEach(() => vi.unstubAllGlobals());

type Cluster = GetResult<'/api/v1/clusters/{name}'>;
const prod2: Cluster = {
  name: 'prod-2',
  environment: 'Production',
  health: 'Unhealthy',
  healthReason: 'API server unreachable: dial tcp 10.0.0.2:6443: connection refused',
  kubernetesVersion: 'v1.32.1',
  lastChecked: '2026-11-26T11:58:00Z',
  createdAt: '2026-11-01T00:00:00Z',
};
const dev1: Cluster = { name: 'dev-1', environment: 'Dev', health: 'Healthy', kubernetesVersion: 'v1.33.0', lastChecked: '2026-11-26T11:59:00Z' };

describe('Clusters', () => {
  it('lists clusters with health, reason and Kubernetes version, asking the manager with the URL filters', async () => {
    const calls = mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/clusters': { items: [prod2] } });
    renderApp('/clusters?environment=Production&health=Unhealthy');
    const rows = await screen.findAllByTestId('cluster-row');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toHaveTextContent('prod-2');
    expect(rows[0]).toHaveTextContent('✗Unhealthy');
    expect(rows[0]).toHaveTextContent('API server unreachable');
    expect(rows[0]).toHaveTextContent('v1.32.1');
    const q = calls.find((c) => c.path === '/api/v1/clusters')!.url.searchParams;
    expect([q.get('environment'), q.get('health'), q.get('limit')]).toEqual(['Production', 'Unhealthy', '1000']);
  });

  it('reads every page of a long list', async () => {
    mockApi({
      'GET /api/v1/whoami': WHOAMI.Viewer,
      'GET /api/v1/clusters': (_req: Request, url: URL) => (url.searchParams.get('continue') === 'p2' ? { items: [dev1] } : { items: [prod2], continue: 'p2' }),
    });
    renderApp('/clusters');
    expect((await screen.findAllByTestId('cluster-row')).map((r) => r.dataset.cluster)).toEqual(['prod-2', 'dev-1']);
  });

  it('refuses an unknown filter value in the URL', async () => {
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/clusters': { items: [] } });
    renderApp('/clusters?health=Sick');
    expect(await screen.findByTestId('error')).toHaveTextContent('health is Healthy, Unhealthy or Unknown');
  });

  it('shows a cluster with its operators and checks it on demand', async () => {
    const calls = mockApi({
      'GET /api/v1/whoami': WHOAMI.Viewer,
      'GET /api/v1/clusters/dev-1': dev1,
      'GET /api/v1/clusters/dev-1/health': { name: 'dev-1', health: 'Healthy', kubernetesVersion: 'v1.33.0' },
      'GET /api/v1/fleet': smallFleet,
    });
    renderApp('/clusters/dev-1');
    expect(await screen.findByRole('heading', { name: 'Cluster dev-1' })).toBeInTheDocument();
    expect(screen.getByTestId('cluster-health')).toHaveTextContent('Healthy');
    const ops = await screen.findAllByTestId('cluster-operator');
    expect(ops.map((o) => o.dataset.operator)).toEqual(['cert-manager', 'sample-operator']);
    expect(within(ops[1]!).getByRole('link', { name: 'd-1' })).toHaveAttribute('href', '/deployments/d-1');
    await userEvent.click(screen.getByTestId('cluster-check'));
    expect(await screen.findByText('Checked: Healthy')).toBeInTheDocument();
    expect(calls.find((c) => c.path === '/api/v1/clusters/dev-1/health')!.url.searchParams.get('refresh')).toBe('true');
  });
});
