import { useQueryClient } from '@tanstack/react-query';
import { useCallback } from 'react';
import { Link, useParams } from 'react-router';
import { useMe } from '../../app/useMe';
import { StatusBadge } from '../../components/HealthBadge';
import { RelativeTime } from '../../components/RelativeTime';
import { ErrorNotice, Loading } from '../../components/States';
import { ApiError } from '../../lib/api';
import type { StreamState } from '../../lib/useEventStream';
import { useDeploymentApprovals } from '../approvals/hooks';
import { Actions } from './Actions';
import { AnalysisRuns } from './AnalysisRuns';
import { DeploymentApprovals } from './DeploymentApprovals';
import { EventLog } from './EventLog';
import { keys, useDeployment, useDeploymentEvents, useLiveDeployment } from './hooks';
import { isLive, isTimed, statusBadge, timelineOf, type Deployment } from './model';
import { Timeline } from './Timeline';
import { useNow } from './useNow';
import { Waiting } from './Waiting';
import './deployments.css';

/** /deployments/:id: the deployment live: status, what it waits for, its actions, approvals, stage timeline and events. */
export function DeploymentPage() {
  const id = useParams().id ?? '';
  const { me } = useMe();
  const qc = useQueryClient();
  const dq = useDeployment(id);
  const eq = useDeploymentEvents(id);
  const aq = useDeploymentApprovals(id);
  const d = dq.data;
  const stream = useLiveDeployment(id, d, eq.data);
  const now = useNow(isTimed(d?.waiting));
  const reread = useCallback(() => void qc.invalidateQueries({ queryKey: keys.one(id), exact: true }), [qc, id]);

  if (dq.error) {
    const missing = dq.error instanceof ApiError && dq.error.status === 404;
    return (
      <section>
        <h1>Deployment</h1>
        {missing ? <p className="notice">No deployment {id}.</p> : <ErrorNotice error={dq.error} what="the deployment" />}
        <Link to="/deployments">All deployments</Link>
      </section>
    );
  }
  if (!d) return <Loading what="the deployment" />;
  const b = statusBadge(d);
  return (
    <section aria-labelledby="deployment-title" className="deployment-page">
      <p className="small">
        <Link to="/deployments">Deployments</Link> /
      </p>
      <h1 id="deployment-title">
        <Link to={`/operators/${encodeURIComponent(d.operator ?? '')}`}>{d.operator}</Link> {d.version}{' '}
        <span data-testid="deployment-status" data-status={d.status} data-paused={d.paused ? 'true' : 'false'}>
          <StatusBadge tone={b.tone}>
            <span aria-hidden="true">{b.symbol}</span>
            {b.label}
          </StatusBadge>
        </span>
      </h1>
      <Facts d={d} />
      {d.reason && (
        <p className="muted" data-testid="deployment-reason">
          {d.reason}
        </p>
      )}
      <Waiting waiting={d.waiting} now={now} onElapsed={reread} />
      <StreamNote state={stream} live={isLive(d)} />
      <Actions d={d} me={me} />
      {aq.error ? <ErrorNotice error={aq.error} what="the approvals" /> : <DeploymentApprovals d={d} approvals={aq.data ?? []} me={me} />}
      <h2>Stages</h2>
      <Timeline d={d} now={now} />
      {d.analysisRuns && d.analysisRuns.length > 0 && (
        <>
          <h2>Analyses</h2>
          <AnalysisRuns runs={d.analysisRuns} />
        </>
      )}
      <h2>Events</h2>
      {eq.error ? <ErrorNotice error={eq.error} what="the events" /> : eq.data ? <EventLog events={eq.data} /> : <Loading what="the events" />}
      <Request d={d} />
    </section>
  );
}

function Facts({ d }: { d: Deployment }) {
  const stages = timelineOf(d).length;
  return (
    <dl className="facts" data-testid="deployment-facts">
      <dt>Strategy</dt>
      <dd data-testid="deployment-strategy">{d.strategy}</dd>
      {stages > 1 && (
        <>
          <dt>Stage</dt>
          <dd data-testid="deployment-stage">
            {Math.min((d.stage ?? 0) + 1, stages)} of {stages}
          </dd>
        </>
      )}
      <dt>Requested by</dt>
      <dd>
        {d.requestedBy} <RelativeTime value={d.createdAt} />
      </dd>
      {d.startedAt && (
        <>
          <dt>Started</dt>
          <dd>
            <RelativeTime value={d.startedAt} />
          </dd>
        </>
      )}
      {d.finishedAt && (
        <>
          <dt>Finished</dt>
          <dd>
            <RelativeTime value={d.finishedAt} />
          </dd>
        </>
      )}
      {d.rollbackReason && (
        <>
          <dt>Rollback</dt>
          <dd>{d.rollbackReason}</dd>
        </>
      )}
      <dt>Id</dt>
      <dd className="mono">{d.id}</dd>
    </dl>
  );
}

/** How the live stream fares: live, reconnecting, or why it stopped. */
function StreamNote({ state, live }: { state: StreamState; live: boolean }) {
  let text = '';
  switch (state.status) {
    case 'connecting':
      text = live ? 'Connecting to the live updates…' : '';
      break;
    case 'open':
      text = '● Live';
      break;
    case 'retrying':
      text = `Live updates interrupted (${state.error.message}); reconnecting in ${Math.round(state.delayMs / 1000)} s`;
      break;
    case 'failed':
      text = `Live updates stopped: ${state.error.message}; the page reads the deployment every 15 s`;
      break;
    case 'ended':
      text = '';
  }
  if (!text) return null;
  return (
    <p className="muted small stream-note" data-testid="stream-state" data-state={state.status} role="status">
      {text}
    </p>
  );
}

function Request({ d }: { d: Deployment }) {
  const has = (v: unknown) => v !== undefined && v !== null && !(typeof v === 'object' && Object.keys(v as object).length === 0);
  return (
    <details className="request">
      <summary>The request</summary>
      <h3>Strategy config</h3>
      <pre>{JSON.stringify(d.config ?? {}, null, 2)}</pre>
      {has(d.values) && (
        <>
          <h3>Values</h3>
          <pre>{JSON.stringify(d.values, null, 2)}</pre>
        </>
      )}
      {has(d.valuesByEnvironment) && (
        <>
          <h3>Values by environment</h3>
          <pre>{JSON.stringify(d.valuesByEnvironment, null, 2)}</pre>
        </>
      )}
    </details>
  );
}
