import { useId } from 'react';
import { Link } from 'react-router';
import { HealthBadge } from '../../components/HealthBadge';
import { RelativeTime } from '../../components/RelativeTime';
import { ErrorNotice, Loading } from '../../components/States';
import { useFilters } from '../../lib/useFilters';
import { useClusters, type ClusterQuery } from './hooks';

const KEYS = ['environment', 'health', 'name'] as const;
const ENVS = ['Dev', 'Staging', 'Production'] as const;
const HEALTHS = ['Healthy', 'Unhealthy', 'Unknown'] as const;

function pick<T extends string>(list: readonly T[], v: string): T | undefined {
  return (list as readonly string[]).includes(v) ? (v as T) : undefined;
}

/** /clusters?environment=&health=&name=: every cluster's health, reason, Kubernetes version. */
export function ClustersPage() {
  const [f, setF] = useFilters(KEYS);
  const query: ClusterQuery = { environment: pick(ENVS, f.environment), health: pick(HEALTHS, f.health) };
  const bad = (f.environment && !query.environment) || (f.health && !query.health);
  const q = useClusters(query);
  const ids = { env: useId(), health: useId(), name: useId() };
  const needle = f.name.trim().toLowerCase();
  const rows = (q.data ?? []).filter((c) => !needle || (c.name ?? '').toLowerCase().includes(needle));
  return (
    <section aria-labelledby="clusters-title">
      <h1 id="clusters-title">Clusters</h1>
      <form className="filters" role="search" aria-label="Filter clusters" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor={ids.env}>
          Environment
          <select id={ids.env} value={f.environment} onChange={(e) => setF({ environment: e.target.value })}>
            <option value="">All</option>
            {ENVS.map((e) => (
              <option key={e}>{e}</option>
            ))}
          </select>
        </label>
        <label htmlFor={ids.health}>
          Health
          <select id={ids.health} value={f.health} onChange={(e) => setF({ health: e.target.value })}>
            <option value="">Any</option>
            {HEALTHS.map((h) => (
              <option key={h}>{h}</option>
            ))}
          </select>
        </label>
        <label htmlFor={ids.name}>
          Name
          <input id={ids.name} type="search" value={f.name} onChange={(e) => setF({ name: e.target.value })} placeholder="contains…" />
        </label>
      </form>
      {bad ? (
        <p className="notice error" role="alert" data-testid="error">
          Unknown filter value in the address: environment is Dev, Staging or Production; health is Healthy, Unhealthy or Unknown.
        </p>
      ) : q.error ? (
        <ErrorNotice error={q.error} what="the clusters" />
      ) : q.isLoading ? (
        <Loading what="the clusters" />
      ) : rows.length === 0 ? (
        <p className="notice">{f.environment || f.health || f.name ? 'No cluster matches these filters.' : 'No cluster is registered yet.'}</p>
      ) : (
        <table className="data" data-testid="clusters-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Environment</th>
              <th scope="col">Health</th>
              <th scope="col">Reason</th>
              <th scope="col">Kubernetes</th>
              <th scope="col">Last checked</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((c) => (
              <tr key={c.name} data-testid="cluster-row" data-cluster={c.name} data-health={c.health}>
                <th scope="row">
                  <Link to={`/clusters/${encodeURIComponent(c.name ?? '')}`}>{c.name}</Link>
                </th>
                <td>{c.environment}</td>
                <td>
                  <HealthBadge health={c.health} />
                </td>
                <td>{c.healthReason || <span className="muted">—</span>}</td>
                <td className="mono">{c.kubernetesVersion || '—'}</td>
                <td>
                  <RelativeTime value={c.lastChecked} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
