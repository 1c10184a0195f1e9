import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { json, mockApi } from '../../test/api';
import { WHOAMI, renderApp } from '../../test/render';
import { ID, approval, canary, events } from '../deployments/fixtures';

afterEach(() => vi.unstubAllGlobals());

const FLEET = {
  operators: [{ name: 'sample-operator', namespace: 'sample', latestVersion: '2.0.0', versions: ['2.0.0', '1.0.0'] }],
  clusters: [],
  cells: [
    { operator: 'sample-operator', cluster: 'dev-1', environment: 'Dev', version: '1.0.0' },
    { operator: 'sample-operator', cluster: 'prod-1', environment: 'Production', version: '1.0.0' },
    { operator: 'sample-operator', cluster: 'elsewhere', environment: 'Dev', version: '0.9.0' },
  ],
};

const DIFF = {
  crd: 'widgets.example.com',
  identical: false,
  breaking: true,
  changes: [
    { path: 'spec.size', kind: 'requiredAdded', version: 'v1', breaking: true, message: 'spec.size: field became required' },
    { path: 'spec.color', kind: 'added', version: 'v1', breaking: false, message: 'field added' },
  ],
};

function manager(who: object) {
  const state = {
    pending: [approval(), approval({ id: 'a-2', kind: 'production', requiredRole: 'EnvironmentOwner:Production', requestedBy: 'ada' })],
  };
  const calls = mockApi({
    'GET /api/v1/whoami': who,
    'GET /api/v1/approvals': () => ({ items: state.pending }),
    [`GET /api/v1/deployments/${ID}`]: canary({ status: 'WaitingApproval' }),
    [`GET /api/v1/deployments/${ID}/events`]: {
      items: events([1, 'created', 'requested by otto'], [2, 'crd.breaking', 'CRD widgets.example.com: the new definition breaks the one stored on prod-1']),
    },
    'GET /api/v1/fleet': FLEET,
    'GET /api/v1/crds/widgets.example.com/diff': DIFF,
    'POST /api/v1/approvals/a-1/approve': () => {
      state.pending = state.pending.filter((a) => a.id !== 'a-1');
      return { ...approval(), status: 'approved', approvals: 1 };
    },
    'POST /api/v1/approvals/a-1/reject': async (req) => {
      const b = (await req.json()) as { comment?: string };
      if (!b.comment) return json({ code: 'InvalidArgument', message: 'comment: a rejection needs a comment saying why' }, 400);
      state.pending = state.pending.filter((a) => a.id !== 'a-1');
      return { ...approval(), status: 'rejected' };
    },
  });
  return { state, calls };
}

describe('Approvals', () => {
  it('lists what the Admin may decide with its deployment, CRD report and migration notes inline', async () => {
    const { calls } = manager(WHOAMI.Admin);
    renderApp('/approvals');
    const mine = await screen.findByTestId('approvals-mine');
    const rows = within(mine).getAllByTestId('approval-row');
    expect(rows.map((r) => r.dataset.approvalId)).toEqual(['a-1']);
    const row = rows[0]!;
    expect(row).toHaveAttribute('data-decidable', 'true');
    expect(row).toHaveTextContent('Breaking CRD change');
    expect(within(row).getByTestId('approval-reason')).toHaveTextContent('breaking changes to the CRDs widgets.example.com');
    const group = within(mine).getByTestId('approval-group');
    expect(group).toHaveAttribute('data-deployment-id', ID);
    const dep = await within(group).findByTestId('approval-deployment');
    expect(within(dep).getByRole('link', { name: 'sample-operator 2.0.0' })).toHaveAttribute('href', `/deployments/${ID}`);
    expect(group).toHaveTextContent('to dev-1 (Dev), stg-1 (Staging), prod-1 (Production), prod-2 (Production)');

    const report = await within(group).findByTestId('crd-report');
    expect(within(report).getByTestId('crd-finding')).toHaveTextContent('the new definition breaks the one stored on prod-1');
    const change = await within(report).findByTestId('crd-breaking-change');
    expect(change).toHaveTextContent('v1 spec.size: field became required');
    expect(change.textContent).toBe('v1 spec.size: field became required');
    expect(within(report).queryByText(/field added/)).toBeNull();
    expect(within(report).getByRole('link', { name: /1\.0\.0 → 2\.0\.0: side-by-side schema diff/ })).toHaveAttribute(
      'href',
      '/crds/widgets.example.com?from=1.0.0&to=2.0.0&operator=sample-operator',
    );
    const diff = calls.find((c) => c.path === '/api/v1/crds/widgets.example.com/diff')!;
    expect(Object.fromEntries(diff.url.searchParams)).toEqual({ from: '1.0.0', to: '2.0.0', operator: 'sample-operator' });
    // Only the deployment's clusters count: "elsewhere" runs 0.9.0 and is not one of them.
    expect(within(report).getAllByTestId('crd-diff')).toHaveLength(1);
    const note = within(report).getByTestId('migration-note');
    expect(note).toHaveTextContent('widgets.example.com 2.0.0: spec.size is now required');
    expect(within(note).getByText('spec.size').tagName).toBe('CODE');
    expect(within(note).getByText('required').tagName).toBe('STRONG');
    expect(within(note).getByRole('link', { name: 'migration guide' })).toHaveAttribute('href', 'https://example.com/migrate');

    // ada requested a-2 herself: listed apart, without buttons.
    const others = screen.getByTestId('approvals-others');
    const own = within(others).getByTestId('approval-row');
    expect(own).toHaveAttribute('data-approval-id', 'a-2');
    expect(within(own).queryByTestId('approval-approve')).toBeNull();
    expect(within(own).getByTestId('approval-not-yours')).toHaveTextContent('you requested this deployment');
  });

  it('approves after confirmation and the approval leaves the inbox', async () => {
    const { calls } = manager(WHOAMI.Admin);
    renderApp('/approvals');
    const row = within(await screen.findByTestId('approvals-mine')).getByTestId('approval-row');
    await userEvent.click(within(row).getByTestId('approval-approve'));
    expect(screen.getByRole('dialog', { name: /Approve: Breaking CRD change of sample-operator 2.0.0/ })).toBeInTheDocument();
    await userEvent.click(screen.getByTestId('approval-approve-confirm'));
    expect(await screen.findByTestId('approvals-empty')).toHaveTextContent('Nothing waits for your decision.');
    expect(calls.filter((c) => c.path === '/api/v1/approvals/a-1/approve')).toHaveLength(1);
  });

  it('rejects only with a comment saying why', async () => {
    const { calls } = manager(WHOAMI.Admin);
    renderApp('/approvals');
    const row = within(await screen.findByTestId('approvals-mine')).getByTestId('approval-row');
    await userEvent.click(within(row).getByTestId('approval-reject'));
    await userEvent.click(screen.getByTestId('approval-reject-confirm'));
    expect(within(screen.getByRole('dialog')).getByRole('alert')).toHaveTextContent('Why is required.');
    expect(calls.some((c) => c.path.endsWith('/reject'))).toBe(false);
    await userEvent.type(screen.getByLabelText(/Why/), 'drops a stored field');
    await userEvent.click(screen.getByTestId('approval-reject-confirm'));
    await waitFor(() => expect(calls.some((c) => c.path.endsWith('/reject'))).toBe(true));
    expect(JSON.parse(calls.find((c) => c.path.endsWith('/reject'))!.body)).toEqual({ comment: 'drops a stored field' });
    expect(await screen.findByTestId('approvals-empty')).toBeInTheDocument();
  });

  it('gives an EnvironmentOwner the Production approval only, and a Viewer none', async () => {
    manager(WHOAMI.ProductionOwner);
    const { unmount } = renderApp('/approvals');
    const mine = await screen.findByTestId('approvals-mine');
    expect(within(mine).getAllByTestId('approval-row').map((r) => r.dataset.approvalId)).toEqual(['a-2']);
    const other = within(screen.getByTestId('approvals-others')).getByTestId('approval-row');
    expect(within(other).getByTestId('approval-not-yours')).toHaveTextContent('it needs an Admin');
    unmount();

    manager(WHOAMI.Viewer);
    renderApp('/approvals');
    expect(await screen.findByTestId('approvals-empty')).toBeInTheDocument();
    expect(screen.queryAllByTestId('approval-approve')).toHaveLength(0);
    expect(within(screen.getByTestId('approvals-others')).getAllByTestId('approval-row')).toHaveLength(2);
  });
});
