import type { PostResult } from '../../api/types';
import { StatusBadge, type Tone } from '../../components/HealthBadge';
import { approverText, kindText } from '../approvals/model';
import { changeText } from '../deployments/model';
import { planSummary } from './plan';

export type DryRun = PostResult<'/api/v1/deployments'>;

const CRD_TONE: Record<string, Tone> = { new: 'unknown', unchanged: 'ok', compatible: 'ok', breaking: 'bad' };

/**
 * The manager's dry run of the request: whether it would fail, its stages with their clusters,
 * the approvals it will ask for, the CRD report per cluster, and the clusters already on the
 * version.
 */
export function Plan({ plan }: { plan: DryRun }) {
  const s = planSummary(plan);
  return (
    <section className="plan card" data-testid="plan" aria-labelledby="plan-title">
      <h2 id="plan-title">
        Plan: {plan.operator} {plan.version}, {plan.strategy}
      </h2>
      <p className="muted small">The manager planned this request and stored nothing. {s.headline}</p>
      {plan.wouldFail && (
        <p className="notice error" role="alert" data-testid="plan-would-fail">
          Planning would fail the deployment: {plan.wouldFail}
        </p>
      )}
      <h3>Stages</h3>
      <ol className="plan-stages" data-testid="plan-stages">
        {(plan.stages ?? []).map((st) => (
          <li key={st.index} data-testid="plan-stage" data-stage={st.index} data-kind={st.kind}>
            <strong>
              Stage {(st.index ?? 0) + 1}: {st.kind === 'switch' ? 'switch to green' : 'install'}
            </strong>{' '}
            <span className="muted">{s.stageFacts(st)}</span>
            <div className="plan-clusters">{(st.clusters ?? []).join(', ') || '—'}</div>
          </li>
        ))}
      </ol>
      <h3>Approvals</h3>
      {(plan.approvals ?? []).length === 0 ? (
        <p data-testid="plan-approvals">No approval needed: it starts at once.</p>
      ) : (
        <ul data-testid="plan-approvals">
          {(plan.approvals ?? []).map((a, i) => (
            <li key={i} data-testid="plan-approval" data-kind={a.kind}>
              <strong>{kindText(a.kind)}</strong> by {(a.required ?? 1) > 1 ? `${a.required} × ` : ''}
              {approverText(a.requiredRole)}
              {a.reason ? `: ${a.reason}` : ''}
            </li>
          ))}
        </ul>
      )}
      {(plan.alreadyRunning ?? []).length > 0 && (
        <p className="notice" data-testid="plan-already">
          Already on {plan.version}: {(plan.alreadyRunning ?? []).join(', ')}.
        </p>
      )}
      <h3>Clusters and CRDs</h3>
      <table className="data plan-crds" data-testid="plan-crds">
        <thead>
          <tr>
            <th scope="col">Cluster</th>
            <th scope="col">Stage</th>
            <th scope="col">Runs now</th>
            <th scope="col">CRDs</th>
          </tr>
        </thead>
        <tbody>
          {(plan.clusters ?? []).map((c) => (
            <tr key={c.name} data-testid="plan-cluster" data-cluster={c.name}>
              <td>
                {c.name} <span className="muted small">{c.environment}</span>
                {c.problem && (
                  <div className="notice error small" data-testid="plan-cluster-problem">
                    {c.problem}
                  </div>
                )}
              </td>
              <td>{(c.stage ?? 0) + 1}</td>
              <td>
                {c.installedVersion || <span className="muted">not installed</span>}
                {c.runsVersion && <span className="muted small"> (this version)</span>}
              </td>
              <td>
                {(c.crds ?? []).length === 0 ? (
                  <span className="muted">none</span>
                ) : (
                  <ul className="plan-crd-list">
                    {(c.crds ?? []).map((crd) => (
                      <li key={crd.name} data-testid="plan-crd" data-crd={crd.name} data-status={crd.status}>
                        <span className="mono">{crd.name}</span>{' '}
                        <StatusBadge tone={CRD_TONE[crd.status ?? ''] ?? 'unknown'}>
                          {crd.status}
                          {crd.approved ? ' (approved)' : ''}
                        </StatusBadge>
                        {(crd.changes ?? []).length > 0 && (
                          <ul className="plan-crd-changes small">
                            {(crd.changes ?? []).map((ch, i) => (
                              <li key={i} className={ch.breaking ? 'breaking' : undefined}>
                                {ch.breaking ? '✗ ' : ''}
                                <span className="mono">{changeText(ch).where}</span>: {changeText(ch).what}
                              </li>
                            ))}
                          </ul>
                        )}
                      </li>
                    ))}
                  </ul>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {(plan.events ?? []).length > 0 && (
        <details>
          <summary>What planning said ({(plan.events ?? []).length})</summary>
          <ul className="small">
            {(plan.events ?? []).map((e, i) => (
              <li key={i}>
                <span className="mono">{e.type}</span> {e.cluster ? `${e.cluster}: ` : ''}
                {e.message}
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}
