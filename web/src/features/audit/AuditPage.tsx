import { useId, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useMe } from '../../app/useMe';
import { RelativeTime } from '../../components/RelativeTime';
import { StatusBadge, type Tone } from '../../components/HealthBadge';
import { ErrorNotice, Loading } from '../../components/States';
import { can } from '../../lib/roles';
import { useFilters } from '../../lib/useFilters';
import { useAudit, type AuditFilters } from './useAudit';

const KEYS = ['actor', 'action', 'targetKind', 'targetName'] as const;
const LABELS: Record<(typeof KEYS)[number], string> = { actor: 'Actor', action: 'Action', targetKind: 'Target kind', targetName: 'Target name' };

/** /audit?actor=&action=&targetKind=&targetName=: the audit log, for Admins. */
export function AuditPage() {
  const { me, isLoading } = useMe();
  const admin = can(me, 'audit.read');
  const [f, setF] = useFilters(KEYS);
  const q = useAudit(f, admin);
  if (isLoading) return <Loading what="your role" />;
  if (!admin) {
    return (
      <section>
        <h1>Audit</h1>
        <p className="notice" data-testid="audit-forbidden">
          The audit log is for Admins.
        </p>
      </section>
    );
  }
  const items = q.data?.pages.flatMap((p) => p.items ?? []) ?? [];
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit</h1>
      <FilterForm key={KEYS.map((k) => f[k]).join('\u0000')} initial={f} onApply={(next) => setF(next, true)} />
      {q.error ? (
        <ErrorNotice error={q.error} what="the audit log" />
      ) : q.isLoading ? (
        <Loading what="the audit log" />
      ) : items.length === 0 ? (
        <p className="notice">No audit entry matches.</p>
      ) : (
        <>
          <table className="data" data-testid="audit-table">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Actor</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Result</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {items.map((e) => (
                <tr key={e.id} data-testid="audit-row">
                  <td>
                    <RelativeTime value={e.time} />
                  </td>
                  <td>
                    <Link to={`?actor=${encodeURIComponent(e.actor ?? '')}`}>{e.actor}</Link>
                  </td>
                  <td className="mono">{e.action}</td>
                  <td>
                    {e.targetKind} <TargetLink kind={e.targetKind} name={e.targetName} />
                  </td>
                  <td>
                    <StatusBadge tone={resultTone(e.result)}>{e.result || '—'}</StatusBadge>
                  </td>
                  <td>
                    {e.details && Object.keys(e.details).length > 0 ? (
                      <details>
                        <summary>details</summary>
                        <pre>{JSON.stringify(e.details, null, 2)}</pre>
                      </details>
                    ) : (
                      <span className="muted">—</span>
                    )}
                    {e.requestId && <div className="muted small mono">request {e.requestId}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <div className="toolbar">
            <span className="muted" aria-live="polite">
              {items.length} entries
            </span>
            {q.hasNextPage && (
              <button type="button" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage} data-testid="audit-more">
                {q.isFetchingNextPage ? 'Loading…' : 'Load older entries'}
              </button>
            )}
          </div>
        </>
      )}
    </section>
  );
}

function FilterForm({ initial, onApply }: { initial: AuditFilters; onApply: (f: AuditFilters) => void }) {
  const [v, setV] = useState(initial);
  const ids = { actor: useId(), action: useId(), targetKind: useId(), targetName: useId() };
  function submit(e: FormEvent) {
    e.preventDefault();
    onApply({ actor: v.actor.trim(), action: v.action.trim(), targetKind: v.targetKind.trim(), targetName: v.targetName.trim() });
  }
  return (
    <form className="filters" role="search" aria-label="Filter the audit log" onSubmit={submit}>
      {KEYS.map((k) => (
        <label key={k} htmlFor={ids[k]}>
          {LABELS[k]}
          <input id={ids[k]} type="search" value={v[k]} onChange={(e) => setV({ ...v, [k]: e.target.value })} data-testid={`audit-filter-${k}`} />
        </label>
      ))}
      <button type="submit" className="primary" data-testid="audit-apply">
        Apply
      </button>
      <Link to="/audit" className="button">
        Clear
      </Link>
    </form>
  );
}

/** The audit package's results: success, failed, invalid, denied. */
function resultTone(result: string | undefined): Tone {
  return ({ success: 'ok', failed: 'bad', denied: 'bad', invalid: 'warn' } as Record<string, Tone>)[result ?? ''] ?? 'unknown';
}

const TARGET_PAGES: Record<string, string> = { operator: '/operators/', cluster: '/clusters/', crd: '/crds/', deployment: '/deployments/' };

function TargetLink({ kind, name }: { kind: string | undefined; name: string | undefined }) {
  const base = TARGET_PAGES[(kind ?? '').toLowerCase()];
  if (!name) return null;
  return base ? <Link to={base + encodeURIComponent(name)}>{name}</Link> : <span className="mono">{name}</span>;
}
