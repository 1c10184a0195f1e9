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
import { approverText, kindText, partition, progressText, whyNot, type Approval } from './model';
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
              {mine.map((a) => (
                <ApprovalRow key={a.id} a={a} me={me} />
              ))}
            </ul>
          )}
          {others.length > 0 && (
            <details className="approvals-others" data-testid="approvals-others">
              <summary>
                Pending, not yours to decide <span className="muted">({others.length})</span>
              </summary>
              <ul className="approval-inbox">
                {others.map((a) => (
                  <ApprovalRow key={a.id} a={a} me={me} />
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

function ApprovalRow({ a, me }: { a: Approval; me: Me | undefined }) {
  const dq = useQuery({
    queryKey: keys.one(a.deploymentId ?? ''),
    queryFn: () => unwrap(api.GET('/api/v1/deployments/{id}', { params: { path: { id: a.deploymentId ?? '' } } })),
    enabled: !!a.deploymentId,
  });
  const d = dq.data;
  const yours = whyNot(a, me) === '';
  return (
    <li
      className="card approval-row"
      data-testid="approval-row"
      data-approval-id={a.id}
      data-deployment-id={a.deploymentId}
      data-kind={a.kind}
      data-decidable={yours ? 'true' : 'false'}
    >
      <div className="approval-head">
        <h3>{kindText(a.kind)}</h3>
        <span className="muted small">
          by {approverText(a.requiredRole)} · {progressText(a)} · requested by <strong>{a.requestedBy}</strong> <RelativeTime value={a.createdAt} /> ·
          expires <RelativeTime value={a.expiresAt} />
        </span>
      </div>
      {a.reason && <p data-testid="approval-reason">{a.reason}</p>}
      {dq.error ? (
        <ErrorNotice error={dq.error} what="its deployment" />
      ) : !d ? (
        <Loading what="its deployment" />
      ) : (
        <>
          <p className="approval-deployment" data-testid="approval-deployment">
            <Link to={`/deployments/${encodeURIComponent(d.id ?? '')}`}>
              {d.operator} {d.version}
            </Link>{' '}
            <span className="muted small mono">{shortId(d.id)}</span> · {d.strategy} ·{' '}
            <StatusBadge tone={statusBadge(d).tone}>{statusBadge(d).label}</StatusBadge> · to{' '}
            {(d.clusters ?? []).map((c) => `${c.name} (${c.environment})`).join(', ')}
          </p>
          <CrdReport d={d} notes={a.migrationNotes ?? []} />
        </>
      )}
      <Decisions a={a} />
      <Decide approval={a} me={me} what={d ? `${d.operator} ${d.version}` : `deployment ${shortId(a.deploymentId)}`} />
    </li>
  );
}
