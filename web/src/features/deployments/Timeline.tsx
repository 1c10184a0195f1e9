import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { StatusBadge } from '../../components/HealthBadge';
import { RelativeTime } from '../../components/RelativeTime';
import {
  autoSwitch,
  clusterBadge,
  clusterWaitingMessage,
  isTerminal,
  STAGE_STATE_TEXT,
  timelineOf,
  type Deployment,
  type DeploymentCluster,
  type TimelineStage,
  waitingText,
} from './model';

/**
 * The stage timeline: one row per stage, a cell per cluster with its step, the Helm revision it
 * installed, what ran before (the rollback target), its message and why it waits.
 */
export function Timeline({ d, now }: { d: Deployment; now: number }) {
  const stages = timelineOf(d);
  if (stages.length === 0) return <p className="muted">No cluster in this deployment.</p>;
  return (
    <ol className="timeline" data-testid="timeline" aria-label="Stages">
      {stages.map((s) => (
        <li key={s.index} className={`timeline-stage stage-${s.state}`} data-testid="timeline-stage" data-stage={s.index} data-state={s.state}>
          <h3 className="stage-head">
            Stage {s.index + 1} of {stages.length}
            <span className="muted"> · {stageWhat(s)}</span>
            <span className={`stage-state state-${s.state}`}>{STAGE_STATE_TEXT[s.state]}</span>
          </h3>
          {s.kind === 'switch' ? (
            <SwitchCell d={d} />
          ) : (
            <ul className="timeline-cells">
              {s.clusters.map((c) => (
                <ClusterCell key={c.name} c={c} d={d} now={now} />
              ))}
            </ul>
          )}
        </li>
      ))}
    </ol>
  );
}

function stageWhat(s: TimelineStage): string {
  if (s.kind === 'switch') return 'switch to green';
  const envs = [...new Set(s.clusters.map((c) => c.environment).filter(Boolean))].join(', ');
  return `${s.clusters.length} cluster${s.clusters.length === 1 ? '' : 's'}${envs ? ` (${envs})` : ''}`;
}

function ClusterCell({ c, d, now }: { c: DeploymentCluster; d: Deployment; now: number }) {
  const b = clusterBadge(c.status, isTerminal(d.status));
  const waiting = clusterWaitingMessage(c, d.waiting, now);
  return (
    <li className="timeline-cell" data-testid="timeline-cell" data-cluster={c.name} data-status={c.status} data-stage={c.stage}>
      <div className="cell-head">
        <Link to={`/clusters/${encodeURIComponent(c.name ?? '')}`}>{c.name}</Link>
        <span className="muted small">{c.environment}</span>
      </div>
      <StatusBadge tone={b.tone} testId="cell-status">
        <span aria-hidden="true">{b.symbol}</span>
        {b.label}
      </StatusBadge>
      <dl className="cell-facts">
        <dt>Helm revision</dt>
        <dd data-testid="cell-revision">{c.helmRevision ? c.helmRevision : '—'}</dd>
        <dt>Before</dt>
        <dd data-testid="cell-previous">
          {c.previousVersion ? `${c.previousVersion} (revision ${c.previousRevision ?? 0})` : c.helmRevision ? 'first install' : '—'}
        </dd>
        {(c.installAttempts ?? 0) > 1 && (
          <>
            <dt>Attempts</dt>
            <dd>{c.installAttempts}</dd>
          </>
        )}
        <dt>Updated</dt>
        <dd>
          <RelativeTime value={c.updatedAt} />
        </dd>
      </dl>
      {c.message && (
        <p className="cell-message small" data-testid="cell-message">
          {c.message}
        </p>
      )}
      {waiting && (
        <p className="cell-waiting small" data-testid="cluster-waiting">
          {waitingText(waiting)}
        </p>
      )}
    </li>
  );
}

function SwitchCell({ d }: { d: Deployment }) {
  let text: ReactNode;
  if (d.switchedAt) {
    text = (
      <>
        Green took over <RelativeTime value={d.switchedAt} />
        {d.blueDeleteAt && (
          <>
            ; blue is kept until <RelativeTime value={d.blueDeleteAt} />
          </>
        )}
        .
      </>
    );
  } else if (d.switchRequested) text = 'Switch requested: green takes over once it is validated.';
  else if (autoSwitch(d)) text = 'Green takes over by itself once it is validated on every cluster.';
  else text = 'Waits for someone to switch (autoSwitch is off) once green is validated on every cluster.';
  return (
    <p className="timeline-switch" data-testid="timeline-switch">
      {text}
    </p>
  );
}
