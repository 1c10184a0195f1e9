import { useMemo } from 'react';
import { Link, useParams } from 'react-router';
import type { FleetCell, GetResult } from '../../api/types';
import { useCan } from '../../app/useMe';
import { HealthBadge } from '../../components/HealthBadge';
import { RelativeTime } from '../../components/RelativeTime';
import { ErrorNotice, Loading } from '../../components/States';
import { useFleet } from '../fleet/useFleet';
import { useOperator, useOperatorHealth, useRefreshOperator } from './hooks';

type Operator = GetResult<'/api/v1/operators/{name}'>;

/** /operators/:name: the chart source, its versions (removed ones marked) and health per cluster. */
export function OperatorPage() {
  const name = useParams().name ?? '';
  const q = useOperator(name);
  if (q.error) return <ErrorNotice error={q.error} what={`operator ${name}`} />;
  if (q.isLoading || !q.data) return <Loading what={`operator ${name}`} />;
  return <Operator op={q.data} />;
}

function Operator({ op }: { op: Operator }) {
  const name = op.name ?? '';
  const fleet = useFleet('');
  const cells = useMemo(() => (fleet.data?.cells ?? []).filter((c) => c.operator === name), [fleet.data, name]);
  return (
    <section aria-labelledby="op-title">
      <h1 id="op-title">Operator {name}</h1>
      <Source op={op} />
      <Versions op={op} cells={cells} />
      <Health name={name} cells={cells} />
    </section>
  );
}

function Source({ op }: { op: Operator }) {
  const canRefresh = useCan('operator.refresh');
  const refresh = useRefreshOperator(op.name ?? '');
  const r = refresh.data;
  return (
    <div className="card">
      <dl className="facts">
        <dt>Namespace</dt>
        <dd>{op.namespace}</dd>
        <dt>Chart source</dt>
        <dd className="mono" data-testid="operator-chart">
          {op.chart?.repository} {op.chart?.name}
          {op.chart?.credentials?.set ? <span className="muted"> (credentials set{op.chart.credentials.username ? ` for ${op.chart.credentials.username}` : ''})</span> : null}
        </dd>
        {op.versionFilter && (
          <>
            <dt>Version filter</dt>
            <dd className="mono">{op.versionFilter}</dd>
          </>
        )}
        <dt>Source last read</dt>
        <dd>
          <RelativeTime value={op.refresh?.checkedAt} />
          {op.refresh?.nextAt && (
            <span className="muted">
              {' '}
              · next <RelativeTime value={op.refresh.nextAt} />
            </span>
          )}
          {op.refresh?.error && (
            <p className="notice error" data-testid="operator-refresh-error">
              The last {op.refresh.failures && op.refresh.failures > 1 ? `${op.refresh.failures} reads` : 'read'} failed: {op.refresh.error}
            </p>
          )}
        </dd>
      </dl>
      {canRefresh && (
        <div className="toolbar">
          <button type="button" onClick={() => refresh.mutate()} disabled={refresh.isPending} data-testid="operator-refresh">
            {refresh.isPending ? 'Reading the chart source…' : 'Refresh versions'}
          </button>
          <span role="status" aria-live="polite" data-testid="operator-refresh-result">
            {refresh.error ? (
              <span className="notice error">Refresh failed: {refresh.error.message}</span>
            ) : r ? (
              r.notModified ? (
                'The chart source has not changed.'
              ) : (
                [
                  r.added?.length ? `added ${r.added.join(', ')}` : '',
                  r.removed?.length ? `removed ${r.removed.join(', ')}` : '',
                  r.restored?.length ? `restored ${r.restored.join(', ')}` : '',
                  r.failed?.length ? `failed ${r.failed.map((x) => `${x.version} (${x.message})`).join(', ')}` : '',
                ]
                  .filter(Boolean)
                  .join('; ') || 'No version changed.'
              )
            ) : null}
          </span>
        </div>
      )}
    </div>
  );
}

function Versions({ op, cells }: { op: Operator; cells: FleetCell[] }) {
  const count = (v: string) => cells.filter((c) => c.version === v).length;
  const removed = op.removedVersions ?? [];
  return (
    <>
      <h2>Versions</h2>
      <table className="data" data-testid="operator-versions">
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">State</th>
            <th scope="col">Runs on</th>
          </tr>
        </thead>
        <tbody>
          {(op.versions ?? []).map((v, i) => (
            <tr key={v} data-testid="operator-version" data-version={v}>
              <th scope="row" className="mono">
                {v}
              </th>
              <td>{i === 0 ? <span className="status status-ok">latest</span> : 'deployable'}</td>
              <td>{count(v) ? `${count(v)} cluster${count(v) === 1 ? '' : 's'}` : '—'}</td>
            </tr>
          ))}
          {removed.map((rv) => (
            <tr key={`removed-${rv.version}`} className="removed" data-testid="operator-version" data-version={rv.version} data-removed="true">
              <th scope="row" className="mono">
                <del>{rv.version}</del>
              </th>
              <td>
                <span className="status status-unknown">
                  removed {rv.reason === 'filter' ? 'by the version filter' : 'from the chart source'}
                </span>{' '}
                <RelativeTime value={rv.removedAt} />
              </td>
              <td>{count(rv.version ?? '') ? `${count(rv.version ?? '')} clusters still run it` : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function Health({ name, cells }: { name: string; cells: FleetCell[] }) {
  const q = useOperatorHealth(name);
  const version = (cluster: string | undefined) => cells.find((c) => c.cluster === cluster);
  return (
    <>
      <h2>
        Health per cluster {q.data?.overallHealth && <HealthBadge health={q.data.overallHealth} />}
      </h2>
      {q.error ? (
        <ErrorNotice error={q.error} what="the health" />
      ) : q.isLoading ? (
        <Loading what="the health" />
      ) : !q.data?.clusters?.length ? (
        <p className="notice">The operator runs on no cluster yet.</p>
      ) : (
        <table className="data" data-testid="operator-health">
          <caption className="visually-hidden">Health per cluster</caption>
          <thead>
            <tr>
              <th scope="col">Cluster</th>
              <th scope="col">Version</th>
              <th scope="col">Health</th>
              <th scope="col">Controller pods</th>
              <th scope="col">CRD reconciliation</th>
              <th scope="col">Operator errors</th>
              <th scope="col">Judged against</th>
              <th scope="col">Webhooks</th>
              <th scope="col">Checked</th>
            </tr>
          </thead>
          <tbody>
            {q.data.clusters.map((c) => {
              const cell = version(c.clusterName);
              const msgs = [
                ...(c.pods?.messages ?? []),
                ...(c.crds?.messages ?? []),
                ...(c.metrics?.messages ?? []),
                ...(c.webhooks?.messages ?? []),
              ];
              return (
                <tr key={c.clusterName} data-testid="operator-health-row" data-cluster={c.clusterName}>
                  <th scope="row">
                    <Link to={`/clusters/${encodeURIComponent(c.clusterName ?? '')}`}>{c.clusterName}</Link>
                  </th>
                  <td className="mono">
                    {cell?.version ?? '—'}
                    {cell?.drift === 'behind' && <span className="muted"> (latest {cell.latestVersion})</span>}
                  </td>
                  <td>
                    <HealthBadge health={c.health} reason={msgs.join('; ')} />
                    {msgs.length > 0 && <div className="muted small">{msgs.join('; ')}</div>}
                    {c.health === 'Unhealthy' && cell?.onUnhealthy === 'alert' && (
                      <div className="small" data-testid="operator-health-alert">
                        alert, no automatic rollback: {cell.alertReason}
                      </div>
                    )}
                  </td>
                  <td>
                    {c.pods?.ready ?? c.controllerPods ?? 0}/{c.pods?.total ?? 0} ready
                    {c.pods?.crashLooping ? `, ${c.pods.crashLooping} crash-looping` : ''}
                  </td>
                  <td>
                    {c.crdReconciliation ?? '—'}
                    <Blame crds={c.crds} />
                  </td>
                  <td data-testid="operator-health-errors">
                    <ErrorRate metrics={c.metrics} />
                  </td>
                  <td data-testid="operator-health-baseline">
                    <Baseline baseline={c.crds?.baseline} />
                  </td>
                  <td>{c.webhookStatus ?? '—'}</td>
                  <td>
                    <RelativeTime value={c.lastChecked} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}

type ClusterHealth = NonNullable<GetResult<'/api/v1/operators/{name}/health'>['clusters']>[number];

/** Whose the failing custom resources are: the operator's count against it, the tenants' never. */
function Blame({ crds }: { crds: ClusterHealth['crds'] }) {
  const op = (crds?.operatorFailures?.notReconciling ?? 0) + (crds?.operatorFailures?.newlyFailing ?? 0);
  const tenants = (crds?.tenantFailures?.failingBefore ?? 0) + (crds?.tenantFailures?.failingReconciled ?? 0);
  if (op === 0 && tenants === 0) return null;
  return (
    <div className="muted small">
      {op > 0 && `the operator's: ${op} failing`}
      {op > 0 && tenants > 0 && '; '}
      {tenants > 0 && `the tenants': ${tenants} failing (${crds?.tenantFailures?.failingBefore ?? 0} before)`}
    </div>
  );
}

const percent = (r: number | undefined) => `${((r ?? 0) * 100).toFixed(1)} %`;

/** The operator's own reconcile error rate since the baseline, and the rate before. */
function ErrorRate({ metrics }: { metrics: ClusterHealth['metrics'] }) {
  if (metrics?.read !== 'Passed' || !metrics.window) return <span className="muted">not read</span>;
  const w = metrics.window;
  return (
    <>
      {percent(w.errorRate)} <span className="muted small">({w.errors ?? 0} of {w.reconciles ?? 0})</span>
      {metrics.before && <div className="muted small">before: {percent(metrics.before.errorRate)}</div>}
    </>
  );
}

/** The baseline a check compared with: from a deployment's start or the last Healthy check. */
function Baseline({ baseline }: { baseline: NonNullable<ClusterHealth['crds']>['baseline'] }) {
  if (!baseline) return <span className="muted">no baseline</span>;
  const from = baseline.source === 'deployment-start' ? 'the deployment\'s start' : 'the last Healthy check';
  return (
    <>
      {from} <RelativeTime value={baseline.capturedAt} />
      <div className="muted small">
        {baseline.failing ?? 0} of {baseline.resources ?? 0} failing then
      </div>
    </>
  );
}
