import { ConfirmButton } from '../../components/ConfirmButton';
import type { Me } from '../../lib/roles';
import { useDecide } from './hooks';
import { kindText, whyNot, type Approval } from './model';

/**
 * Approve and Reject for one approval, each asking first (a comment is optional to approve and
 * required to reject); when me may not decide it, the reason instead of the buttons.
 */
export function Decide({ approval, me, what }: { approval: Approval; me: Me | undefined; what: string }) {
  const decide = useDecide();
  const why = whyNot(approval, me);
  if (why) {
    return (
      <p className="muted small" data-testid="approval-not-yours">
        Not yours to decide: {why}.
      </p>
    );
  }
  const title = `${kindText(approval.kind)} of ${what}`;
  return (
    <div className="toolbar" data-testid="approval-actions">
      <ConfirmButton
        label="Approve"
        title={`Approve: ${title}?`}
        message={approval.reason}
        className="primary"
        reason={{ label: 'Comment' }}
        testId="approval-approve"
        onConfirm={(comment) => decide.mutateAsync({ approval, decision: 'approve', comment })}
      />
      <ConfirmButton
        label="Reject"
        title={`Reject: ${title}?`}
        message="A rejected deployment is never executed."
        danger
        reason={{ label: 'Why', required: true }}
        testId="approval-reject"
        onConfirm={(comment) => decide.mutateAsync({ approval, decision: 'reject', comment })}
      />
    </div>
  );
}
