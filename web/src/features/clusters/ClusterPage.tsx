import { Link, useParams } from 'react-router';
import { HealthBadge } from '../../components/HealthBadge';
import { RelativeTime } from '../../components/RelativeTime';
import { ErrorNotice, Loading } from '../../components/States';
import { useFleet } from '../fleet/useFleet';
import { useCheckCluster, useCluster } from './hooks';

/** /clusters/:name: the cluster's health and its reason, Kubernetes version, and its operators. */
export function ClusterPage() {
  const name = useParams().name ?? '';
  const q = useCluster(name);
  const check = useCheckCluster(name);
  const fleet = useFleet('');
  if (q.error) return <ErrorNotice error={q.error} what={`cluster ${name}`} />;
  if (q.isLoading || !q.data) return <Loading what={`cluster ${name}`} />;
  const c = q.data;
  const cells = (fleet.data?.cells ?? []).filter((x) => x.cluster === name);
  return (
    <section aria-labelledby="cluster-title">
      <h1 id="cluster-title">Cluster {c.name}</h1>
      <div className="card">
        <dl className="facts" data-testid="cluster-facts">
          <dt>Environment</dt>
          <dd>{c.environment}</dd>
          <dt>Health</dt>
          <dd data-testid="cluster-health">
            <HealthBadge health={c.health} /> {c.healthReason && <span>{c.healthReason}</span>}
          </dd>
          <dt>Kubernetes</dt>
          <dd className="mono">{c.kubernetesVersion || '—'}</dd>
          <dt>Last checked</dt>
          <dd>
            <RelativeTime value={c.lastChecked} />
          </dd>
          <dt>Registered</dt>
          <dd>
            <RelativeTime value={c.createdAt} />
          </dd>
        </dl>
        <div className="toolbar">
          <button type="button" onClick={() => check.mutate()} disabled={check.isPending} data-testid="cluster-check">
            {check.isPending ? 'Checking…' : 'Check now'}
          </button>
          <span role="status" aria-live="polite">
            {check.error ? <span className="notice error">The check failed: {check.error.message}</span> : check.data ? `Checked: ${check.data.health}${check.data.reason ? ` (${check.data.reason})` : ''}` : null}
          </span>
        </div>
      </div>
      <h2>Operators on this cluster</h2>
      {fleet.error ? (
        <ErrorNotice error={fleet.error} what="the operators" />
      ) : cells.length === 0 ? (
        <p className="notice">{fleet.isLoading ? 'Loading…' : 'No operator runs here yet.'}</p>
      ) : (
        <table className="data" data-testid="cluster-operators">
          <thead>
            <tr>
              <th scope="col">Operator</th>
              <th scope="col">Version</th>
              <th scope="col">Health</th>
              <th scope="col">Deployed by</th>
            </tr>
          </thead>
          <tbody>
            {cells.map((x) => (
              <tr key={x.operator} data-testid="cluster-operator" data-operator={x.operator}>
                <th scope="row">
                  <Link to={`/operators/${encodeURIComponent(x.operator ?? '')}`}>{x.operator}</Link>
                </th>
                <td className="mono">
                  {x.version}
                  {x.drift === 'behind' && <span className="status status-warn"> behind: latest {x.latestVersion}</span>}
                </td>
                <td>
                  <HealthBadge health={x.health} reason={x.healthReason} /> {x.healthReason}
                </td>
                <td>
                  {x.deploymentId ? <Link to={`/deployments/${encodeURIComponent(x.deploymentId)}`}>{x.deploymentId}</Link> : '—'}
                  {x.helmRevision ? <span className="muted"> (Helm revision {x.helmRevision})</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
