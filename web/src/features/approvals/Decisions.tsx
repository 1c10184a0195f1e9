import { RelativeTime } from '../../components/RelativeTime';
import type { Approval } from './model';

/** The decisions given so far on an approval: who, which, when, and their comment. */
export function Decisions({ a }: { a: Approval }) {
  const ds = a.decisions ?? [];
  if (ds.length === 0) return null;
  return (
    <ul className="decisions small" data-testid="approval-decisions">
      {ds.map((x, i) => (
        <li key={i}>
          {x.decision === 'reject' ? '✗ rejected' : '✓ approved'} by <strong>{x.actor}</strong> <RelativeTime value={x.time} />
          {x.comment ? `: ${x.comment}` : ''}
        </li>
      ))}
    </ul>
  );
}
