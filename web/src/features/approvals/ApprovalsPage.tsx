import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { useMe } from '../../app/useMe';
import { StatusBadge } from '../../components/HealthBadge';
import { RelativeTime } from '../../components/RelativeTime';
import { ErrorNotice, Loading } from '../../components/States';
import { api, unwrap } from '../../lib/api';
import type { Me } from '../../lib/roles';
import { keys } from '../deployments/hooks';
import { shortId, statusBadge } from '../deployments/model';
import { CrdReport } from './CrdReport';
import { Decide } from './Decide';
import { Decisions } from './Decisions';
import { useApprovals } from './hooks';
import { approverText, byDeployment, kindText, partition, progressText, whyNot, type Approval } from './model';
import './approvals.css';

/** /approvals: the pending approvals the signed-in user may decide, then the others (and why not theirs). */
export function ApprovalsPage() {
  const { me } = useMe();
  const q = useApprovals('pending');
  const list = q.data?.pages.flatMap((p) => p.items ?? []) ?? [];
  const { mine, others } = partition(list, me);
  return (
    <section aria-labelledby="approvals-title">
      <h1 id="approvals-title">Approvals</h1>
      {q.error ? (
        <ErrorNotice error={q.error} what="the approvals" />
      ) : q.isLoading ? (
        <Loading what="the approvals" />
      ) : (
        <>
          <h2 id="mine-title">
            For you to decide <span className="muted">({mine.length})</span>
          </h2>
          {mine.length === 0 ? (
            <p className="notice" data-testid="approvals-empty">
              Nothing waits for your decision.
            </p>
          ) : (
            <ul className="approval-inbox" aria-labelledby="mine-title" data-testid="approvals-mine">
              {byDeployment(mine).map(([id, as]) => (
                <DeploymentGroup key={id} id={id} approvals={as} me={me} />
              ))}
            </ul>
          )}
          {others.length > 0 && (
            <details className="approvals-others" data-testid="approvals-others">
              <summary>
                Pending, not yours to decide <span className="muted">({others.length})</span>
              </summary>
              <ul className="approval-inbox">
                {byDeployment(others).map(([id, as]) => (
                  <DeploymentGroup key={id} id={id} approvals={as} me={me} />
                ))}
              </ul>
            </details>
          )}
          {q.hasNextPage && (
            <button type="button" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage} data-testid="approvals-more">
              {q.isFetchingNextPage ? 'Loading…' : 'Load older approvals'}
            </button>
          )}
        </>
      )}
    </section>
  );
}

/** One deployment's approvals: the deployment, its CRD report once, then each approval with its decision. */
function DeploymentGroup({ id, approvals, me }: { id: string; approvals: Approval[]; me: Me | undefined }) {
  const dq = useQuery({
    queryKey: keys.one(id),
    queryFn: () => unwrap(api.GET('/api/v1/deployments/{id}', { params: { path: { id } } })),
    enabled: !!id,
  });
  const d = dq.data;
  const notes = approvals.flatMap((a) => a.migrationNotes ?? []).filter((n, i, all) => all.findIndex((m) => m.crd === n.crd && m.version === n.version) === i);
  const what = d ? `${d.operator} ${d.version}` : `deployment ${shortId(id)}`;
  return (
    <li className="card approval-group" data-testid="approval-group" data-deployment-id={id}>
      {dq.error ? (
        <ErrorNotice error={dq.error} what={`deployment ${shortId(id)}`} />
      ) : !d ? (
        <Loading what={`deployment ${shortId(id)}`} />
      ) : (
        <>
          <h3 className="approval-deployment" data-testid="approval-deployment">
            <Link to={`/deployments/${encodeURIComponent(d.id ?? '')}`}>
              {d.operator} {d.version}
            </Link>{' '}
            <span className="muted small mono">{shortId(d.id)}</span>{' '}
            <StatusBadge tone={statusBadge(d).tone}>{statusBadge(d).label}</StatusBadge>
          </h3>
          <p className="small">
            {d.strategy}, requested by <strong>{d.requestedBy}</strong> <RelativeTime value={d.createdAt} />, to{' '}
            {(d.clusters ?? []).map((c) => `${c.name} (${c.environment})`).join(', ')}
          </p>
          <CrdReport d={d} notes={notes} />
        </>
      )}
      <ul className="approval-rows">
        {approvals.map((a) => (
          <ApprovalRow key={a.id} a={a} me={me} what={what} />
        ))}
      </ul>
    </li>
  );
}

function ApprovalRow({ a, me, what }: { a: Approval; me: Me | undefined; what: string }) {
  const yours = whyNot(a, me) === '';
  return (
    <li
      className="approval-row"
      data-testid="approval-row"
      data-approval-id={a.id}
      data-deployment-id={a.deploymentId}
      data-kind={a.kind}
      data-decidable={yours ? 'true' : 'false'}
    >
      <div className="approval-head">
        <h4>{kindText(a.kind)}</h4>
        <span className="muted small">
          by {approverText(a.requiredRole)} · {progressText(a)} · expires <RelativeTime value={a.expiresAt} />
        </span>
      </div>
      {a.reason && <p data-testid="approval-reason">{a.reason}</p>}
      <Decisions a={a} />
      <Decide approval={a} me={me} what={what} />
    </li>
  );
}
