import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GetResult } from '../../api/types';
import { mockApi } from '../../test/api';
import { WHOAMI, renderApp } from '../../test/render';
import { smallFleet } from '../fleet/fixtures';

afterEach(() => vi.unstubAllGlobals());

const sample: GetResult<'/api/v1/operators/{name}'> = {
  id: 'op-1',
  name: 'sample-operator',
  namespace: 'sample',
  chart: { repository: 'oci://registry.local/charts', name: 'sample-operator', credentials: { set: true, username: 'robot' } },
  versions: ['0.3.0', '0.2.0'],
  removedVersions: [{ version: '0.1.0', reason: 'source', removedAt: '2026-11-20T10:00:00Z' }],
  refresh: { checkedAt: '2026-11-26T11:00:00Z', nextAt: '2026-11-26T11:00:30Z', failures: 0 },
  createdAt: '2026-11-01T00:00:00Z',
  updatedAt: '2026-11-26T11:00:00Z',
};

const health: GetResult<'/api/v1/operators/{name}/health'> = {
  operatorName: 'sample-operator',
  overallHealth: 'Unhealthy',
  clusters: [
    { clusterName: 'dev-1', health: 'Healthy', pods: { ready: 1, total: 1 }, crdReconciliation: 'Active', webhookStatus: 'NotConfigured', lastChecked: '2026-11-26T11:59:00Z' },
    {
      clusterName: 'stg-1',
      health: 'Unhealthy',
      pods: { ready: 0, total: 1, crashLooping: 1, messages: ['pod sample-0 is crash-looping'] },
      crdReconciliation: 'Stale',
      webhookStatus: 'NotConfigured',
      crds: {
        baseline: { capturedAt: '2026-11-26T11:00:00Z', source: 'deployment-start', resources: 40, failing: 4, metrics: true },
        operatorFailures: { notReconciling: 3, newlyFailing: 0 },
        tenantFailures: { failingBefore: 4, failingReconciled: 2 },
      },
      metrics: { health: 'Unhealthy', read: 'Passed', window: { errorRate: 0.3, errors: 30, reconciles: 100 }, before: { errorRate: 0.01 } },
    },
  ],
};

function routes(who: object, extra: Record<string, unknown> = {}) {
  return {
    'GET /api/v1/whoami': who,
    'GET /api/v1/operators': { items: [sample, { ...sample, id: 'op-2', name: 'cert-manager', namespace: 'cert-manager', removedVersions: [], refresh: { error: 'repository unreachable', failures: 3 } }] },
    'GET /api/v1/operators/sample-operator': sample,
    'GET /api/v1/operators/sample-operator/health': health,
    'GET /api/v1/fleet': smallFleet,
    ...extra,
  };
}

describe('Operators', () => {
  it('lists operators, filtered by the name in the URL', async () => {
    mockApi(routes(WHOAMI.Viewer));
    renderApp('/operators?name=cert');
    const table = await screen.findByTestId('operators-table');
    const rows = within(table).getAllByTestId('operator-row');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toHaveTextContent('cert-manager');
    expect(rows[0]).toHaveTextContent('failing');
    expect(within(rows[0]!).getByRole('link', { name: 'cert-manager' })).toHaveAttribute('href', '/operators/cert-manager');
  });

  it('shows versions with the removed one marked, the chart source and health per cluster', async () => {
    mockApi(routes(WHOAMI.Viewer));
    renderApp('/operators/sample-operator');
    expect(await screen.findByRole('heading', { name: 'Operator sample-operator' })).toBeInTheDocument();
    expect(screen.getByTestId('operator-chart')).toHaveTextContent('oci://registry.local/charts sample-operator (credentials set for robot)');
    const versions = within(screen.getByTestId('operator-versions')).getAllByTestId('operator-version');
    expect(versions.map((v) => v.dataset.version)).toEqual(['0.3.0', '0.2.0', '0.1.0']);
    expect(versions[0]).toHaveTextContent('latest');
    await waitFor(() => expect(versions[0]).toHaveTextContent('1 cluster'));
    expect(versions[2]).toHaveAttribute('data-removed', 'true');
    expect(versions[2]).toHaveTextContent('removed from the chart source');
    const rows = await screen.findAllByTestId('operator-health-row');
    expect(screen.getByRole('table', { name: 'Health per cluster' })).toBe(screen.getByTestId('operator-health'));
    const stg = rows.find((r) => r.dataset.cluster === 'stg-1')!;
    expect(stg).toHaveTextContent('Unhealthy');
    expect(stg).toHaveTextContent('pod sample-0 is crash-looping');
    expect(stg).toHaveTextContent('0.2.0 (latest 0.3.0)');
    // Whose failures they are, the operator's own error rate and the baseline it was judged against.
    expect(stg).toHaveTextContent("the operator's: 3 failing; the tenants': 6 failing (4 before)");
    expect(within(stg).getByTestId('operator-health-errors')).toHaveTextContent('30.0 % (30 of 100)before: 1.0 %');
    expect(within(stg).getByTestId('operator-health-baseline')).toHaveTextContent("the deployment's start");
    expect(within(stg).getByTestId('operator-health-baseline')).toHaveTextContent('4 of 40 failing then');
    const dev = rows.find((r) => r.dataset.cluster === 'dev-1')!;
    expect(within(dev).getByTestId('operator-health-errors')).toHaveTextContent('not read');
    expect(within(dev).getByTestId('operator-health-baseline')).toHaveTextContent('no baseline');
    expect(screen.queryByTestId('operator-refresh')).toBeNull(); // a Viewer has no refresh button
  });

  it('lets an Operator refresh the versions and shows what changed', async () => {
    const calls = mockApi(
      routes(WHOAMI.Operator, {
        'POST /api/v1/operators/sample-operator/refresh': { operator: 'sample-operator', added: ['0.4.0'], removed: [], versions: ['0.4.0', '0.3.0', '0.2.0'] },
      }),
    );
    renderApp('/operators/sample-operator');
    await userEvent.click(await screen.findByTestId('operator-refresh'));
    expect(await screen.findByTestId('operator-refresh-result')).toHaveTextContent('added 0.4.0');
    expect(calls.some((c) => c.method === 'POST' && c.path === '/api/v1/operators/sample-operator/refresh')).toBe(true);
  });

  it('shows the manager error for an unknown operator', async () => {
    mockApi(routes(WHOAMI.Viewer));
    renderApp('/operators/nope');
    expect(await screen.findByTestId('error')).toHaveTextContent('no route GET /api/v1/operators/nope');
  });
});
