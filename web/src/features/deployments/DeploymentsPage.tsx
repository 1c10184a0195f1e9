import { useId } from 'react';
import { Link } from 'react-router';
import { useCan } from '../../app/useMe';
import { StatusBadge } from '../../components/HealthBadge';
import { RelativeTime } from '../../components/RelativeTime';
import { ErrorNotice, Loading } from '../../components/States';
import { useFilters } from '../../lib/useFilters';
import { useOperators } from '../operators/hooks';
import { useDeployments, type DeploymentsQuery } from './hooks';
import { shortId, statusBadge, STATUSES, waitingMessage, waitingText, type Deployment } from './model';
import './deployments.css';

const KEYS = ['operator', 'status', 'active', 'view'] as const;

/** /deployments?operator=&status=&active=true&view=tiles: the deployments, newest first, a page at a time. */
export function DeploymentsPage() {
  const [f, setF] = useFilters(KEYS);
  const mayDeploy = useCan('deployment.create');
  const query: DeploymentsQuery = {
    ...(f.operator ? { operator: f.operator } : {}),
    ...((STATUSES as readonly string[]).includes(f.status) ? { status: f.status as DeploymentsQuery['status'] } : {}),
    ...(f.active === 'true' ? { active: 'true' as const } : {}),
  };
  const q = useDeployments(query);
  const items = q.data?.pages.flatMap((p) => p.items ?? []) ?? [];
  const tiles = f.view === 'tiles';
  return (
    <section aria-labelledby="deployments-title">
      <div className="page-head">
        <h1 id="deployments-title">Deployments</h1>
        {mayDeploy && (
          <Link className="button primary" to={`/deployments/new${f.operator ? `?operator=${encodeURIComponent(f.operator)}` : ''}`} data-testid="new-deployment">
            New deployment
          </Link>
        )}
      </div>
      <Filters f={f} setF={setF} />
      {q.error ? (
        <ErrorNotice error={q.error} what="the deployments" />
      ) : q.isLoading ? (
        <Loading what="the deployments" />
      ) : items.length === 0 ? (
        <p className="notice" data-testid="deployments-empty">
          No deployment matches.
        </p>
      ) : (
        <>
          {tiles ? <Tiles items={items} /> : <Table items={items} />}
          <div className="toolbar">
            <span className="muted" aria-live="polite" data-testid="deployments-count">
              {items.length} deployment{items.length === 1 ? '' : 's'}
            </span>
            {q.hasNextPage && (
              <button type="button" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage} data-testid="deployments-more">
                {q.isFetchingNextPage ? 'Loading…' : 'Load older deployments'}
              </button>
            )}
          </div>
        </>
      )}
    </section>
  );
}

type F = Record<(typeof KEYS)[number], string>;

function Filters({ f, setF }: { f: F; setF: (patch: Partial<F>, push?: boolean) => void }) {
  const ops = useOperators();
  const ids = { operator: useId(), status: useId(), active: useId() };
  const names = (ops.data ?? []).map((o) => o.name ?? '').filter(Boolean);
  if (f.operator && !names.includes(f.operator)) names.unshift(f.operator);
  return (
    <form className="filters" role="search" aria-label="Filter the deployments" onSubmit={(e) => e.preventDefault()}>
      <label htmlFor={ids.operator}>
        Operator
        <select id={ids.operator} value={f.operator} onChange={(e) => setF({ operator: e.target.value }, true)} data-testid="filter-operator">
          <option value="">any</option>
          {names.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <label htmlFor={ids.status}>
        Status
        <select id={ids.status} value={f.status} onChange={(e) => setF({ status: e.target.value }, true)} data-testid="filter-status">
          <option value="">any</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <label htmlFor={ids.active} className="inline">
        <input
          id={ids.active}
          type="checkbox"
          checked={f.active === 'true'}
          onChange={(e) => setF({ active: e.target.checked ? 'true' : '' }, true)}
          data-testid="filter-active"
        />
        Only active
      </label>
      <fieldset className="view-switch">
        <legend className="visually-hidden">View</legend>
        <button type="button" aria-pressed={f.view !== 'tiles'} onClick={() => setF({ view: '' }, true)} data-testid="view-table">
          Table
        </button>
        <button type="button" aria-pressed={f.view === 'tiles'} onClick={() => setF({ view: 'tiles' }, true)} data-testid="view-tiles">
          Tiles
        </button>
      </fieldset>
    </form>
  );
}

function Status({ d }: { d: Deployment }) {
  const b = statusBadge(d);
  return (
    <StatusBadge tone={b.tone}>
      <span aria-hidden="true">{b.symbol}</span>
      {b.label}
    </StatusBadge>
  );
}

const ENDED_TEXT: Record<string, string> = { failed: 'failed', rolledBack: 'rolled back', skipped: 'skipped' };

/** "3/4 healthy", "0/4 healthy · 2 rolled back, 2 skipped". */
function progress(d: Deployment): string {
  const cs = d.clusters ?? [];
  const healthy = cs.filter((c) => c.status === 'healthy').length;
  const ended = Object.entries(ENDED_TEXT)
    .map(([status, text]) => [cs.filter((c) => c.status === status).length, text] as const)
    .filter(([n]) => n > 0)
    .map(([n, text]) => `${n} ${text}`);
  return `${healthy}/${cs.length} healthy${ended.length ? ` · ${ended.join(', ')}` : ''}`;
}

function Table({ items }: { items: Deployment[] }) {
  return (
    <table className="data" data-testid="deployments-table">
      <thead>
        <tr>
          <th scope="col">Deployment</th>
          <th scope="col">Operator</th>
          <th scope="col">Version</th>
          <th scope="col">Strategy</th>
          <th scope="col">Status</th>
          <th scope="col">Clusters</th>
          <th scope="col">Requested by</th>
          <th scope="col">Created</th>
          <th scope="col">Updated</th>
        </tr>
      </thead>
      <tbody>
        {items.map((d) => (
          <tr key={d.id} data-testid="deployment-row" data-id={d.id} data-status={d.status}>
            <td>
              <Link to={`/deployments/${encodeURIComponent(d.id ?? '')}`} className="mono" title={d.id}>
                {shortId(d.id)}
              </Link>
            </td>
            <td>
              <Link to={`?operator=${encodeURIComponent(d.operator ?? '')}`}>{d.operator}</Link>
            </td>
            <td>{d.version}</td>
            <td>{d.strategy}</td>
            <td>
              <Status d={d} />
              {d.waiting?.message && (
                <div className="muted small" data-testid="deployment-waiting">
                  {waitingText(waitingMessage(d.waiting, Date.now()))}
                </div>
              )}
            </td>
            <td>{progress(d)}</td>
            <td>{d.requestedBy}</td>
            <td>
              <RelativeTime value={d.createdAt} />
            </td>
            <td>
              <RelativeTime value={d.updatedAt} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Tiles({ items }: { items: Deployment[] }) {
  return (
    <ul className="deployment-tiles" data-testid="deployments-tiles">
      {items.map((d) => (
        <li key={d.id} className="card" data-testid="deployment-tile" data-id={d.id} data-status={d.status}>
          <div className="tile-head">
            <Link to={`/deployments/${encodeURIComponent(d.id ?? '')}`}>
              {d.operator} {d.version}
            </Link>
            <Status d={d} />
          </div>
          <div className="muted small">
            {d.strategy} · {progress(d)} · {d.requestedBy} · <RelativeTime value={d.createdAt} />
          </div>
          {d.waiting?.message && (
            <div className="small" data-testid="deployment-waiting">
              {waitingText(waitingMessage(d.waiting, Date.now()))}
            </div>
          )}
        </li>
      ))}
    </ul>
  );
}
