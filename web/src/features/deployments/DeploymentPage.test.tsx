import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { json, mockApi, type ApiCall } from '../../test/api';
import { WHOAMI, renderApp } from '../../test/render';
import { EVENTS, ID, approval, canary, events } from './fixtures';
import type { Deployment } from './model';

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

/** A Server-Sent Events response the test writes to. */
function sseStream() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) });
  const enc = new TextEncoder();
  return {
    response: new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } }),
    send(id: number, type: string, data: object) {
      ctl.enqueue(enc.encode(`id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`));
    },
  };
}

/** The manager for one deployment: its state is `state.d`, changed by the test as the engine would. */
function manager(who: object, d: Deployment, approvals = [approval()]) {
  const state = { d, events: EVENTS, stream: sseStream(), streams: 0 };
  const calls: ApiCall[] = mockApi({
    'GET /api/v1/whoami': who,
    [`GET /api/v1/deployments/${ID}`]: () => state.d,
    [`GET /api/v1/deployments/${ID}/events`]: (req) => {
      if (req.headers.get('Accept') === 'text/event-stream') {
        state.streams++;
        return state.stream.response;
      }
      return { items: state.events };
    },
    'GET /api/v1/approvals': { items: approvals },
    [`POST /api/v1/deployments/${ID}/pause`]: async (req) => {
      const body = (await req.json()) as { reason?: string };
      state.d = { ...state.d, paused: true, pausedBy: 'ada', pauseReason: body.reason, waiting: { reason: 'paused', message: `paused by ada: ${body.reason}` } };
      return json(state.d, 202);
    },
    [`POST /api/v1/deployments/${ID}/resume`]: () => {
      state.d = { ...state.d, paused: false, pausedBy: '', waiting: canary().waiting };
      return json(state.d, 202);
    },
    // The cancel is answered at once; the deployment ends before the stream says so.
    [`DELETE /api/v1/deployments/${ID}`]: () => {
      const asked = { ...state.d, cancelRequested: true };
      state.d = {
        ...asked,
        status: 'Cancelled',
        reason: 'cancelled: 1 of 4 clusters run 2.0.0 (roll back to undo)',
        waiting: undefined,
        clusters: state.d.clusters!.map((c) => (c.status === 'pending' ? { ...c, status: 'skipped', waiting: undefined } : { ...c, waiting: undefined })),
      };
      state.events = [...EVENTS, ...events([6, 'cancel.requested', 'cancel requested by otto'], [7, 'status', 'Validating → Cancelled'])];
      return json(asked, 202);
    },
    [`POST /api/v1/deployments/${ID}/rollback`]: () => json({ code: 'Conflict', message: `deployment ${ID} is already rolling back` }, 409),
    'POST /api/v1/approvals/a-1/approve': () => json({ ...approval(), status: 'approved', approvals: 1 }),
  });
  return { state, calls };
}

describe('Deployment page', () => {
  it('shows the stage timeline, each cluster’s step, revision and previous version, and the events', async () => {
    manager(WHOAMI.Viewer, canary());
    renderApp(`/deployments/${ID}`);
    const timeline = await screen.findByTestId('timeline');
    const stages = within(timeline).getAllByTestId('timeline-stage');
    expect(stages.map((s) => s.dataset.state)).toEqual(['current', 'upcoming', 'upcoming']);
    const dev = within(timeline).getAllByTestId('timeline-cell').find((c) => c.dataset.cluster === 'dev-1')!;
    expect(dev).toHaveAttribute('data-status', 'validating');
    expect(within(dev).getByTestId('cell-revision')).toHaveTextContent('4');
    expect(within(dev).getByTestId('cell-previous')).toHaveTextContent('1.0.0 (revision 3)');
    expect(within(dev).getByTestId('cell-message')).toHaveTextContent('installed 2.0.0 as revision 4');
    expect(within(stages[2]!).getAllByTestId('timeline-cell')).toHaveLength(2);
    expect(screen.getByTestId('deployment-status')).toHaveAttribute('data-status', 'Validating');
    const rows = within(screen.getByTestId('event-log')).getAllByTestId('event-row');
    expect(rows.map((r) => r.dataset.type)).toEqual(['stage.validating', 'cluster.installed', 'cluster.installing', 'status', 'created']);
    expect(rows[1]).toHaveTextContent('dev-1');
    // A Viewer sees no button.
    expect(screen.queryByTestId('deployment-actions')).toBeNull();
    expect(screen.getByTestId('approval-not-yours')).toHaveTextContent('it needs an Admin');
  });

  it('shows each analysis run with its phase, count and measurements', async () => {
    const failed = {
      name: 'error-rate', template: 'error-rate', cluster: 'dev-1', stage: 1, phase: 'Failed', count: 5,
      message: 'analysis error-rate failed: 2 of 2 measurements failed (failureLimit 1)',
      measurements: [0.05, 0.08].map((v, i) => ({
        query: 'sum(rate(controller_runtime_reconcile_total{result="error",namespace="sample"}[5m]))', value: v, baselineValue: 0.01,
        verdict: 'Failed', message: `${v} > max 0.01`, at: `2026-11-26T10:0${i + 1}:00Z`,
      })),
    };
    manager(WHOAMI.Viewer, canary({ analysisRuns: [failed, { ...failed, cluster: 'dev-2', phase: 'Running', measurements: [], message: 'analysis error-rate: 0 of 5 measurements' }] }));
    renderApp(`/deployments/${ID}`);
    const table = await screen.findByTestId('analysis-runs');
    const runs = within(table).getAllByTestId('analysis-run');
    expect(runs.map((r) => [r.dataset.cluster, r.dataset.phase])).toEqual([['dev-1', 'Failed'], ['dev-2', 'Running']]);
    expect(runs[0]).toHaveTextContent('2/5');
    expect(runs[0]).toHaveTextContent('2 of 2 measurements failed');
    const ms = within(runs[0]!).getAllByTestId('analysis-measurement');
    expect(ms.map((m) => m.dataset.verdict)).toEqual(['Failed', 'Failed']);
    expect(ms[1]).toHaveTextContent('value 0.08 (baseline 0.01): 0.08 > max 0.01');
    expect(ms[1]).toHaveTextContent('namespace="sample"');
    // Every run has its Measurements: each disclosure is named for its run.
    expect(within(runs[0]!).getByText('Measurements').closest('summary')).toHaveAccessibleName('Measurements of error-rate on dev-1, stage 1');
    expect(within(runs[1]!).queryAllByTestId('analysis-measurement')).toHaveLength(0);
  });

  it('shows no analyses section without analysis runs', async () => {
    manager(WHOAMI.Viewer, canary());
    renderApp(`/deployments/${ID}`);
    await screen.findByTestId('timeline');
    expect(screen.queryByTestId('analysis-runs')).toBeNull();
  });

  it('counts the waiting time down each second', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.parse('2026-11-26T10:06:00Z') - 190_000);
    manager(WHOAMI.Viewer, canary());
    renderApp(`/deployments/${ID}`);
    const waiting = await screen.findByTestId('waiting');
    expect(waiting).toHaveTextContent('waiting: evaluation period, 3 m 10 s left');
    expect(waiting).toHaveAttribute('data-reason', 'evaluationPeriod');
    vi.setSystemTime(Date.parse('2026-11-26T10:06:00Z') - 185_000);
    await waitFor(() => expect(screen.getByTestId('waiting')).toHaveTextContent('waiting: evaluation period, 3 m 5 s left'), { timeout: 2500 });
    const stg = screen.getAllByTestId('timeline-cell').find((c) => c.dataset.cluster === 'stg-1')!;
    // The manager's message for a later stage's cluster starts with its own "waiting for": said once.
    expect(within(stg).getByTestId('cluster-waiting').textContent).toBe('waiting for stage 1 (evaluation period, 3 m 5 s left)');
    const dev = screen.getAllByTestId('timeline-cell').find((c) => c.dataset.cluster === 'dev-1')!;
    expect(within(dev).getByTestId('cluster-waiting').textContent).toBe('waiting: evaluation period, 3 m 5 s left');
  });

  it('says "waiting" once whatever the manager’s message starts with', async () => {
    const d = canary({ waiting: { reason: 'queued', message: 'Waiting for 2 deployments ahead' } });
    d.clusters![2] = { ...d.clusters![2]!, waiting: 'waiting: approval by an Admin' };
    d.clusters![3] = { ...d.clusters![3]!, waiting: 'switch to green' };
    manager(WHOAMI.Viewer, d);
    renderApp(`/deployments/${ID}`);
    expect((await screen.findByTestId('waiting')).textContent).toBe('waiting for 2 deployments ahead');
    const text = (name: string) =>
      within(screen.getAllByTestId('timeline-cell').find((c) => c.dataset.cluster === name)!).getByTestId('cluster-waiting').textContent;
    expect(text('prod-1')).toBe('waiting: approval by an Admin');
    expect(text('prod-2')).toBe('waiting: switch to green');
  });

  it('says who must approve', async () => {
    manager(WHOAMI.Viewer, canary({ status: 'WaitingApproval', waiting: { reason: 'approval', message: 'approval by an Admin', role: 'Admin', until: '2026-11-29T10:00:00Z' } }));
    renderApp(`/deployments/${ID}`);
    expect(await screen.findByTestId('waiting')).toHaveTextContent('waiting: approval by an Admin');
  });

  it('follows the live stream from the listed events: batched, the deployment read again, no reload', async () => {
    const { state, calls } = manager(WHOAMI.Viewer, canary());
    renderApp(`/deployments/${ID}`);
    await screen.findByTestId('timeline');
    await waitFor(() => expect(screen.getByTestId('stream-state')).toHaveAttribute('data-state', 'open'));
    const stream = calls.find((c) => c.headers.get('Accept') === 'text/event-stream')!;
    expect(stream.headers.get('Last-Event-ID')).toBe('5');
    expect(stream.headers.get('Authorization')).toBe('Bearer test-token');
    const reads = () => calls.filter((c) => c.method === 'GET' && c.path === `/api/v1/deployments/${ID}`).length;
    const before = reads();

    // The engine passes stage 1 and installs stage 2: three events in one burst.
    const next = canary({ stage: 1, status: 'Deploying', waiting: undefined });
    next.clusters![0] = { ...next.clusters![0]!, status: 'healthy', waiting: undefined };
    next.clusters![1] = { ...next.clusters![1]!, status: 'installing', waiting: undefined, installAttempts: 1 };
    state.d = next;
    act(() => {
      for (const e of events([6, 'stage.passed', 'stage 1 passed'], [7, 'cluster.installing', 'installing 2.0.0', 'stg-1'], [8, 'status', 'Validating → Deploying'])) {
        state.stream.send(e.id!, e.type!, e);
      }
    });
    await waitFor(() => {
      const stg = screen.getAllByTestId('timeline-cell').find((c) => c.dataset.cluster === 'stg-1')!;
      expect(stg).toHaveAttribute('data-status', 'installing');
    });
    expect(screen.getAllByTestId('timeline-stage').map((s) => s.dataset.state)).toEqual(['done', 'current', 'upcoming']);
    expect(within(screen.getByTestId('event-log')).getAllByTestId('event-row')[0]).toHaveAttribute('data-type', 'status');
    expect(within(screen.getByTestId('event-log')).getAllByTestId('event-row')).toHaveLength(8);
    // One read of the deployment for the burst (a batch), not one per event.
    expect(reads() - before).toBe(1);
    expect(screen.queryByTestId('waiting')).toBeNull();

    // The end: the stream stops.
    state.d = { ...next, status: 'Completed', finishedAt: '2026-11-26T10:20:00Z', clusters: next.clusters!.map((c) => ({ ...c, status: 'healthy' })) };
    act(() => state.stream.send(9, 'end', { deploymentId: ID, status: 'Completed' }));
    await waitFor(() => expect(screen.getByTestId('deployment-status')).toHaveAttribute('data-status', 'Completed'));
    expect(screen.queryByTestId('stream-state')).toBeNull();
    expect(state.streams).toBe(1);
  });

  it('pauses with a reason and resumes, as an Operator', async () => {
    const { calls } = manager(WHOAMI.Operator, canary());
    renderApp(`/deployments/${ID}`);
    const actions = await screen.findByTestId('deployment-actions');
    expect(within(actions).getAllByRole('button').map((b) => b.dataset.testid)).toEqual(['action-pause', 'action-cancel']);
    await userEvent.click(screen.getByTestId('action-pause'));
    const dialog = screen.getByRole('dialog', { name: /Pause deployment 6f1c2b9e/ });
    await userEvent.type(within(dialog).getByLabelText(/Reason/), 'change freeze');
    await userEvent.click(screen.getByTestId('action-pause-confirm'));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(JSON.parse(calls.find((c) => c.path.endsWith('/pause'))!.body)).toEqual({ reason: 'change freeze' });
    expect(await screen.findByTestId('action-resume')).toBeInTheDocument();
    expect(screen.queryByTestId('action-pause')).toBeNull();
    expect(screen.getByTestId('deployment-status')).toHaveTextContent('Validating (paused)');
    expect(screen.getByTestId('waiting')).toHaveTextContent('waiting: paused by ada: change freeze');

    await userEvent.click(screen.getByTestId('action-resume'));
    await userEvent.click(screen.getByTestId('action-resume-confirm'));
    expect(await screen.findByTestId('action-pause')).toBeInTheDocument();
    expect(calls.filter((c) => c.path.endsWith('/resume'))).toHaveLength(1);
  });

  it('lists the events again when the deployment is read as finished before its stream brought the last ones', async () => {
    manager(WHOAMI.Operator, canary());
    renderApp(`/deployments/${ID}`);
    await waitFor(() => expect(screen.getByTestId('stream-state')).toHaveAttribute('data-state', 'open'));
    await userEvent.click(screen.getByTestId('action-cancel'));
    await userEvent.click(screen.getByTestId('action-cancel-confirm'));
    await waitFor(() => expect(screen.getByTestId('deployment-status')).toHaveAttribute('data-status', 'Cancelled'));
    expect(screen.queryByTestId('stream-state')).toBeNull();
    await waitFor(() => expect(within(screen.getByTestId('event-log')).getAllByTestId('event-row')).toHaveLength(7));
    const rows = within(screen.getByTestId('event-log')).getAllByTestId('event-row');
    expect(rows.slice(0, 2).map((r) => r.dataset.type)).toEqual(['status', 'cancel.requested']);
    // The stage it was cancelled in was reached and stopped; dev-1's validation no longer runs.
    expect(screen.getAllByTestId('timeline-stage').map((s) => s.dataset.state)).toEqual(['stopped', 'skipped', 'skipped']);
    const dev = screen.getAllByTestId('timeline-cell').find((c) => c.dataset.cluster === 'dev-1')!;
    expect(within(dev).getByTestId('cell-status')).toHaveTextContent('stopped while validating');
  });

  it('keeps the dialog open with the manager’s message when it refuses', async () => {
    manager(WHOAMI.Admin, canary());
    renderApp(`/deployments/${ID}`);
    await userEvent.click(await screen.findByTestId('action-rollback'));
    const dialog = screen.getByRole('dialog');
    expect(dialog).toHaveTextContent('dev-1: 2.0.0 → 1.0.0 (revision 3)');
    await userEvent.click(screen.getByTestId('action-rollback-confirm'));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('already rolling back');
  });

  it('lets an Admin approve a pending approval, but not their own request', async () => {
    const { calls } = manager(WHOAMI.Admin, canary({ status: 'WaitingApproval' }));
    renderApp(`/deployments/${ID}`);
    const row = await screen.findByTestId('deployment-approval');
    expect(row).toHaveAttribute('data-status', 'pending');
    await userEvent.click(within(row).getByTestId('approval-approve'));
    await userEvent.type(screen.getByLabelText(/Comment/), 'window agreed');
    await userEvent.click(screen.getByTestId('approval-approve-confirm'));
    await waitFor(() => expect(calls.some((c) => c.path === '/api/v1/approvals/a-1/approve')).toBe(true));
    expect(JSON.parse(calls.find((c) => c.path === '/api/v1/approvals/a-1/approve')!.body)).toEqual({ comment: 'window agreed' });
  });

  it('shows the requester no decision on their own deployment', async () => {
    manager({ ...WHOAMI.Admin, subject: 'otto' }, canary({ status: 'WaitingApproval' }));
    renderApp(`/deployments/${ID}`);
    const row = await screen.findByTestId('deployment-approval');
    expect(within(row).queryByTestId('approval-approve')).toBeNull();
    expect(within(row).getByTestId('approval-not-yours')).toHaveTextContent('you requested this deployment');
  });

  it('says when the deployment does not exist', async () => {
    mockApi({ 'GET /api/v1/whoami': WHOAMI.Viewer, 'GET /api/v1/deployments/nope': json({ code: 'NotFound', message: 'not found' }, 404) });
    renderApp('/deployments/nope');
    expect(await screen.findByText('No deployment nope.')).toBeInTheDocument();
  });
});
