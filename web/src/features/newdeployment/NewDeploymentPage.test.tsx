import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { json, mockApi, type Handler } from '../../test/api';
import { WHOAMI, renderApp } from '../../test/render';
import { canary, ID } from '../deployments/fixtures';
import { CLUSTERS, OPERATORS, PLAN } from './fixtures';

afterEach(() => vi.unstubAllGlobals());

function manager(who: object, post: Handler) {
  return mockApi({
    'GET /api/v1/whoami': who,
    'GET /api/v1/operators': OPERATORS,
    'GET /api/v1/clusters': CLUSTERS,
    'POST /api/v1/deployments': post,
    [`GET /api/v1/deployments/${ID}`]: canary({ status: 'Queued', waiting: undefined }),
    [`GET /api/v1/deployments/${ID}/events`]: (req) =>
      req.headers.get('Accept') === 'text/event-stream'
        ? new Response(new ReadableStream(), { headers: { 'Content-Type': 'text/event-stream' } })
        : { items: [] },
    'GET /api/v1/approvals': { items: [] },
  });
}

const body = (c: { body: string }) => JSON.parse(c.body) as Record<string, unknown>;

describe('New deployment', () => {
  it('plans a Canary with the design’s defaults, shows the plan, then deploys it and opens the deployment', async () => {
    const calls = manager(WHOAMI.Operator, (_req, url) => (url.searchParams.get('dryRun') === 'true' ? PLAN : json(canary({ status: 'Queued' }), 202)));
    renderApp('/deployments/new?operator=sample-operator');
    await waitFor(() => expect(screen.getByTestId('field-version')).toHaveValue('2.0.0'));
    expect(screen.getByTestId('field-operator')).toHaveValue('sample-operator');
    expect(screen.getByTestId('strategy-Canary')).toBeChecked();
    expect(screen.getByLabelText('Initial percentage')).toHaveValue('10');
    expect(screen.getByLabelText('Increment percentage')).toHaveValue('20');
    expect(screen.getByLabelText('Evaluation period')).toHaveValue('PT5M');
    expect(screen.getByLabelText('Success threshold')).toHaveValue('0.95');
    for (const c of ['dev-1', 'stg-1', 'prod-1']) await userEvent.click(await screen.findByTestId(`target-cluster-${c}`));
    await userEvent.type(screen.getByTestId('field-values'), 'replicaCount: 2');
    expect(screen.queryByTestId('submit')).toBeNull();
    await userEvent.click(screen.getByTestId('plan-button'));

    const plan = await screen.findByTestId('plan');
    const dry = calls.find((c) => c.method === 'POST')!;
    expect(dry.url.searchParams.get('dryRun')).toBe('true');
    expect(body(dry)).toEqual({
      operator: 'sample-operator',
      version: '2.0.0',
      strategy: 'Canary',
      clusters: ['dev-1', 'stg-1', 'prod-1'],
      values: { replicaCount: 2 },
      canaryConfig: { initialPercentage: 10, incrementPercentage: 20, evaluationPeriod: 'PT5M', successThreshold: 0.95 },
    });
    expect(within(plan).getAllByTestId('plan-stage').map((s) => s.textContent)).toEqual([
      expect.stringContaining('dev-1'),
      expect.stringContaining('stg-1'),
      expect.stringContaining('prod-1'),
    ]);
    expect(within(plan).getAllByTestId('plan-approval').map((a) => a.dataset.kind)).toEqual(['breakingCRD', 'production']);
    expect(within(plan).getAllByTestId('plan-approval')[1]).toHaveTextContent('by an EnvironmentOwner of Production (or an Admin)');
    const breaking = within(plan)
      .getAllByTestId('plan-crd')
      .filter((c) => c.dataset.status === 'breaking');
    expect(breaking).toHaveLength(1);
    expect(breaking[0]).toHaveTextContent('spec.size: field became required');
    expect(within(plan).getByTestId('plan-already')).toHaveTextContent('Already on 2.0.0: dev-1.');

    await userEvent.click(screen.getByTestId('submit'));
    expect(await screen.findByTestId('timeline')).toBeInTheDocument();
    const real = calls.filter((c) => c.method === 'POST')[1]!;
    expect(real.url.searchParams.get('dryRun')).toBeNull();
    expect(body(real)).toEqual(body(dry));
  });

  it('shows the manager’s error at its field, and other errors for the form', async () => {
    let answer: Response = json(
      {
        code: 'InvalidArgument',
        message: 'canaryConfig.evaluationPeriod: must be an ISO 8601 duration such as PT5M',
        details: { field: 'canaryConfig.evaluationPeriod', reason: 'format' },
      },
      400,
    );
    manager(WHOAMI.Admin, () => answer);
    renderApp('/deployments/new?operator=sample-operator&version=1.0.0');
    await userEvent.click(await screen.findByTestId('target-cluster-dev-1'));
    const period = screen.getByTestId('field-canaryConfig.evaluationPeriod');
    await userEvent.clear(period);
    await userEvent.type(period, '5 minutes');
    await userEvent.click(screen.getByTestId('plan-button'));
    const err = await screen.findByTestId('error-canaryConfig.evaluationPeriod');
    expect(err).toHaveTextContent('must be an ISO 8601 duration such as PT5M');
    expect(period).toHaveAttribute('aria-invalid', 'true');
    expect(period.getAttribute('aria-describedby')).toContain(err.id);
    expect(screen.getByTestId('field-version')).toHaveValue('1.0.0');

    answer = json({ code: 'Conflict', message: 'operator "sample-operator" already has an active deployment on cluster "dev-1"' }, 409);
    await userEvent.click(screen.getByTestId('plan-button'));
    expect(await screen.findByTestId('form-error')).toHaveTextContent('already has an active deployment');
    expect(screen.queryByTestId('error-canaryConfig.evaluationPeriod')).toBeNull();
  });

  it('checks the form before asking, and asks again after a change', async () => {
    const calls = manager(WHOAMI.Operator, () => PLAN);
    renderApp('/deployments/new');
    await screen.findByTestId('target-cluster-dev-1');
    await userEvent.click(screen.getByTestId('plan-button'));
    expect(screen.getByTestId('error-operator')).toHaveTextContent('Choose an operator.');
    expect(screen.getByTestId('error-clusters')).toHaveTextContent('Choose at least one cluster.');
    expect(calls.some((c) => c.method === 'POST')).toBe(false);

    await userEvent.selectOptions(screen.getByTestId('field-operator'), 'sample-operator');
    expect(screen.getByTestId('field-version')).toHaveValue('2.0.0');
    await userEvent.click(screen.getByTestId('target-by-environments'));
    await userEvent.click(screen.getByTestId('target-environment-Dev'));
    await userEvent.click(screen.getByTestId('plan-button'));
    expect(await screen.findByTestId('submit')).toBeEnabled();
    expect(body(calls.find((c) => c.method === 'POST')!).environments).toEqual(['Dev']);
    // A change makes the plan stale: no Deploy until it is planned again.
    await userEvent.click(screen.getByTestId('target-environment-Staging'));
    expect(screen.queryByTestId('submit')).toBeNull();
    expect(screen.queryByTestId('plan')).toBeNull();
  });

  it('offers each strategy’s fields with their defaults', async () => {
    const calls = manager(WHOAMI.Operator, () => PLAN);
    renderApp('/deployments/new?operator=sample-operator');
    for (const c of ['prod-1', 'dev-1', 'stg-1']) await userEvent.click(await screen.findByTestId(`target-cluster-${c}`));

    await userEvent.click(screen.getByTestId('strategy-BlueGreen'));
    const bg = screen.getByTestId('config-BlueGreen');
    expect(within(bg).getByLabelText('Validation period')).toHaveValue('PT5M');
    expect(within(bg).getByTestId('field-blueGreenConfig.autoSwitch')).toBeChecked();
    expect(screen.queryByTestId('config-Canary')).toBeNull();

    await userEvent.click(screen.getByTestId('strategy-Direct'));
    expect(within(screen.getByTestId('config-Direct')).getByTestId('field-directConfig.skipHealthChecks')).not.toBeChecked();

    await userEvent.click(screen.getByTestId('strategy-Rolling'));
    const order = within(screen.getByTestId('config-Rolling')).getByTestId('field-rollingConfig.clusterOrder');
    expect(within(order).getAllByRole('listitem').map((li) => li.dataset.cluster)).toEqual(['dev-1', 'stg-1', 'prod-1']);
    await userEvent.click(screen.getByRole('button', { name: 'Move prod-1 up' }));
    expect(within(order).getAllByRole('listitem').map((li) => li.dataset.cluster)).toEqual(['dev-1', 'prod-1', 'stg-1']);
    await userEvent.type(screen.getByTestId('field-rollingConfig.pauseBetweenClusters'), 'PT2M');
    await userEvent.click(screen.getByTestId('plan-button'));
    await screen.findByTestId('plan');
    expect(body(calls.find((c) => c.method === 'POST')!)).toMatchObject({
      strategy: 'Rolling',
      rollingConfig: { clusterOrder: ['dev-1', 'prod-1', 'stg-1'], validationPeriod: 'PT5M', pauseBetweenClusters: 'PT2M' },
    });
  });

  it('is not offered to a Viewer', async () => {
    manager(WHOAMI.Viewer, () => PLAN);
    renderApp('/deployments/new');
    expect(await screen.findByTestId('new-deployment-forbidden')).toHaveTextContent('Deploying needs the Operator or Admin role.');
    expect(screen.queryByTestId('new-deployment-form')).toBeNull();
  });
});
