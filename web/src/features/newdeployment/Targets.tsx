import { HealthBadge } from '../../components/HealthBadge';
import { ENVIRONMENTS, type FieldErrors, type FormState } from './model';

export interface TargetCluster {
  name?: string;
  environment?: string;
  health?: string;
  healthReason?: string;
}

type Update = (patch: Partial<FormState>) => void;

function toggle(list: string[], v: string, on: boolean): string[] {
  return on ? [...list.filter((x) => x !== v), v] : list.filter((x) => x !== v);
}

/** The target clusters: chosen by name, or every registered cluster of chosen environments. */
export function Targets({ f, set, errors, clusters }: { f: FormState; set: Update; errors: FieldErrors; clusters: TargetCluster[] }) {
  const err = f.targetBy === 'clusters' ? errors.clusters : errors.environments;
  return (
    <fieldset className="form-group" data-testid="targets" aria-describedby={err ? 'targets-error' : undefined}>
      <legend>Target clusters</legend>
      <div className="radios" role="radiogroup" aria-label="Choose the targets">
        <label className="inline">
          <input type="radio" name="targetBy" checked={f.targetBy === 'clusters'} onChange={() => set({ targetBy: 'clusters' })} data-testid="target-by-clusters" />
          By cluster
        </label>
        <label className="inline">
          <input
            type="radio"
            name="targetBy"
            checked={f.targetBy === 'environments'}
            onChange={() => set({ targetBy: 'environments' })}
            data-testid="target-by-environments"
          />
          By environment (every cluster in it)
        </label>
      </div>
      {f.targetBy === 'clusters' ? (
        <ClusterChoice f={f} set={set} clusters={clusters} />
      ) : (
        <div className="choices" data-testid="field-environments">
          {ENVIRONMENTS.map((env) => {
            const n = clusters.filter((c) => c.environment === env).length;
            return (
              <label key={env} className="inline">
                <input
                  type="checkbox"
                  checked={f.environments.includes(env)}
                  onChange={(e) => set({ environments: toggle(f.environments, env, e.target.checked) })}
                  data-testid={`target-environment-${env}`}
                />
                {env} <span className="muted small">({n} cluster{n === 1 ? '' : 's'})</span>
              </label>
            );
          })}
        </div>
      )}
      {err && (
        <span id="targets-error" className="field-error" data-testid={`error-${f.targetBy}`}>
          {err}
        </span>
      )}
    </fieldset>
  );
}

function ClusterChoice({ f, set, clusters }: { f: FormState; set: Update; clusters: TargetCluster[] }) {
  if (clusters.length === 0) return <p className="muted">No cluster is registered.</p>;
  const envs = [...ENVIRONMENTS, ...new Set(clusters.map((c) => c.environment ?? '').filter((e) => !(ENVIRONMENTS as readonly string[]).includes(e)))];
  return (
    <div className="choices" data-testid="field-clusters">
      {envs.map((env) => {
        const inEnv = clusters.filter((c) => (c.environment ?? '') === env);
        if (inEnv.length === 0) return null;
        return (
          <fieldset key={env} className="env-group">
            <legend>{env || 'no environment'}</legend>
            {inEnv.map((c) => (
              <label key={c.name} className="inline">
                <input
                  type="checkbox"
                  checked={f.clusters.includes(c.name ?? '')}
                  onChange={(e) => set({ clusters: toggle(f.clusters, c.name ?? '', e.target.checked) })}
                  data-testid={`target-cluster-${c.name}`}
                />
                <span className="mono">{c.name}</span> <HealthBadge health={c.health} reason={c.healthReason} />
              </label>
            ))}
          </fieldset>
        );
      })}
    </div>
  );
}
