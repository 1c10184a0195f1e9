import { RelativeTime } from '../../components/RelativeTime';
import { StatusBadge, type Tone } from '../../components/HealthBadge';
import type { Me } from '../../lib/roles';
import { Decide } from '../approvals/Decide';
import { Decisions } from '../approvals/Decisions';
import { approverText, kindText, progressText, type Approval } from '../approvals/model';
import { shortId, type Deployment } from './model';

const APPROVAL_TONE: Record<string, Tone> = { pending: 'warn', approved: 'ok', rejected: 'bad', expired: 'unknown' };

/** The deployment's approvals: the pending ones with Approve and Reject for who may decide, then the decided. */
export function DeploymentApprovals({ d, approvals, me }: { d: Deployment; approvals: Approval[]; me: Me | undefined }) {
  if (approvals.length === 0) return null;
  const what = `deployment ${shortId(d.id)} (${d.operator} ${d.version})`;
  return (
    <section aria-labelledby="approvals-title" data-testid="deployment-approvals">
      <h2 id="approvals-title">Approvals</h2>
      <ul className="approval-list">
        {approvals.map((a) => (
          <li key={a.id} className="card" data-testid="deployment-approval" data-approval-id={a.id} data-status={a.status} data-kind={a.kind}>
            <div className="approval-head">
              <strong>{kindText(a.kind)}</strong>
              <StatusBadge tone={APPROVAL_TONE[a.status ?? ''] ?? 'unknown'}>{a.status}</StatusBadge>
              <span className="muted small">
                by {approverText(a.requiredRole)} · {progressText(a)} · requested by {a.requestedBy}{' '}
                <RelativeTime value={a.createdAt} />
                {a.status === 'pending' && (
                  <>
                    {' '}
                    · expires <RelativeTime value={a.expiresAt} />
                  </>
                )}
              </span>
            </div>
            {a.reason && <p>{a.reason}</p>}
            <Decisions a={a} />
            {a.status === 'pending' && <Decide approval={a} me={me} what={what} />}
          </li>
        ))}
      </ul>
    </section>
  );
}
