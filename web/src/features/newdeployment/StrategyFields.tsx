import { CheckField, TextField } from './Fields';
import { move, orderOf, type FieldErrors, type FormState } from './model';

type Update = (patch: Partial<FormState>) => void;

/** The fields of the chosen strategy's config, with the design's defaults filled in. */
export function StrategyFields({ f, set, errors, targets }: { f: FormState; set: Update; errors: FieldErrors; targets: string[] }) {
  switch (f.strategy) {
    case 'Canary':
      return <CanaryFields f={f} set={set} errors={errors} />;
    case 'BlueGreen':
      return <BlueGreenFields f={f} set={set} errors={errors} />;
    case 'Rolling':
      return <RollingFields f={f} set={set} errors={errors} targets={targets} />;
    case 'Direct':
      return <DirectFields f={f} set={set} errors={errors} />;
  }
}

const PERIOD_HINT = 'ISO 8601, such as PT5M, PT30S or PT1H (at most a day)';

function CanaryFields({ f, set, errors }: { f: FormState; set: Update; errors: FieldErrors }) {
  const c = f.canary;
  const up = (patch: Partial<FormState['canary']>) => set({ canary: { ...c, ...patch } });
  const listed = c.stages.trim() !== '';
  return (
    <fieldset className="form-group" data-testid="config-Canary">
      <legend>Canary</legend>
      <TextField
        field="canaryConfig.initialPercentage"
        label="Initial percentage"
        hint={listed ? 'unused: the stages list decides' : 'of the clusters in the first stage'}
        inputMode="decimal"
        value={c.initialPercentage}
        onChange={(v) => up({ initialPercentage: v })}
        error={errors['canaryConfig.initialPercentage']}
      />
      <TextField
        field="canaryConfig.incrementPercentage"
        label="Increment percentage"
        hint={listed ? 'unused: the stages list decides' : 'added by the second stage; the third takes the rest'}
        inputMode="decimal"
        value={c.incrementPercentage}
        onChange={(v) => up({ incrementPercentage: v })}
        error={errors['canaryConfig.incrementPercentage']}
      />
      <TextField
        field="canaryConfig.evaluationPeriod"
        label="Evaluation period"
        hint={PERIOD_HINT}
        value={c.evaluationPeriod}
        onChange={(v) => up({ evaluationPeriod: v })}
        error={errors['canaryConfig.evaluationPeriod']}
      />
      <TextField
        field="canaryConfig.successThreshold"
        label="Success threshold"
        hint="share of a stage's clusters healthy at the end of its evaluation: a fraction (0.95) or a percentage (95)"
        inputMode="decimal"
        value={c.successThreshold}
        onChange={(v) => up({ successThreshold: v })}
        error={errors['canaryConfig.successThreshold']}
      />
      <TextField
        field="canaryConfig.stages"
        label="Stages (optional)"
        hint="cumulative percentages instead of initial and increment, such as 10, 30, 50, 100"
        placeholder="10, 30, 50, 100"
        value={c.stages}
        onChange={(v) => up({ stages: v })}
        error={errors['canaryConfig.stages']}
      />
    </fieldset>
  );
}

function BlueGreenFields({ f, set, errors }: { f: FormState; set: Update; errors: FieldErrors }) {
  const b = f.blueGreen;
  const up = (patch: Partial<FormState['blueGreen']>) => set({ blueGreen: { ...b, ...patch } });
  return (
    <fieldset className="form-group" data-testid="config-BlueGreen">
      <legend>BlueGreen</legend>
      <TextField
        field="blueGreenConfig.blueNamespace"
        label="Blue namespace (optional)"
        hint="where the running version is; left empty, wherever the operator runs"
        value={b.blueNamespace}
        onChange={(v) => up({ blueNamespace: v })}
        error={errors['blueGreenConfig.blueNamespace']}
      />
      <TextField
        field="blueGreenConfig.greenNamespace"
        label="Green namespace (optional)"
        hint="where the new version goes; left empty, blue's namespace + -green"
        value={b.greenNamespace}
        onChange={(v) => up({ greenNamespace: v })}
        error={errors['blueGreenConfig.greenNamespace']}
      />
      <TextField
        field="blueGreenConfig.validationPeriod"
        label="Validation period"
        hint={PERIOD_HINT}
        value={b.validationPeriod}
        onChange={(v) => up({ validationPeriod: v })}
        error={errors['blueGreenConfig.validationPeriod']}
      />
      <CheckField
        field="blueGreenConfig.autoSwitch"
        label="Switch to green by itself once green is validated"
        hint="off: the deployment waits for someone to press Switch"
        checked={b.autoSwitch}
        onChange={(v) => up({ autoSwitch: v })}
        error={errors['blueGreenConfig.autoSwitch']}
      />
    </fieldset>
  );
}

function RollingFields({ f, set, errors, targets }: { f: FormState; set: Update; errors: FieldErrors; targets: string[] }) {
  const r = f.rolling;
  const up = (patch: Partial<FormState['rolling']>) => set({ rolling: { ...r, ...patch } });
  const order = orderOf(r.clusterOrder, targets);
  return (
    <fieldset className="form-group" data-testid="config-Rolling">
      <legend>Rolling</legend>
      <div className="form-field wide">
        <span className="label" id="cluster-order-label">
          Cluster order
        </span>
        {order.length === 0 ? (
          <span className="hint">Choose the target clusters first; by default Dev → Staging → Production, then by name.</span>
        ) : (
          <ol className="cluster-order" aria-labelledby="cluster-order-label" data-testid="field-rollingConfig.clusterOrder">
            {order.map((name, i) => (
              <li key={name} data-cluster={name}>
                <span className="mono">{name}</span>
                <button type="button" onClick={() => up({ clusterOrder: move(order, i, -1) })} disabled={i === 0} aria-label={`Move ${name} up`}>
                  ↑
                </button>
                <button
                  type="button"
                  onClick={() => up({ clusterOrder: move(order, i, 1) })}
                  disabled={i === order.length - 1}
                  aria-label={`Move ${name} down`}
                >
                  ↓
                </button>
              </li>
            ))}
          </ol>
        )}
        {errors['rollingConfig.clusterOrder'] && (
          <span className="field-error" data-testid="error-rollingConfig.clusterOrder">
            {errors['rollingConfig.clusterOrder']}
          </span>
        )}
      </div>
      <TextField
        field="rollingConfig.validationPeriod"
        label="Validation period"
        hint={PERIOD_HINT}
        value={r.validationPeriod}
        onChange={(v) => up({ validationPeriod: v })}
        error={errors['rollingConfig.validationPeriod']}
      />
      <TextField
        field="rollingConfig.pauseBetweenClusters"
        label="Pause between clusters (optional)"
        hint="such as PT2M; empty: none"
        value={r.pauseBetweenClusters}
        onChange={(v) => up({ pauseBetweenClusters: v })}
        error={errors['rollingConfig.pauseBetweenClusters']}
      />
    </fieldset>
  );
}

function DirectFields({ f, set, errors }: { f: FormState; set: Update; errors: FieldErrors }) {
  const d = f.direct;
  const up = (patch: Partial<FormState['direct']>) => set({ direct: { ...d, ...patch } });
  return (
    <fieldset className="form-group" data-testid="config-Direct">
      <legend>Direct</legend>
      <TextField
        field="directConfig.parallelClusters"
        label="Parallel clusters (optional)"
        hint="how many install at once; empty: all"
        inputMode="numeric"
        value={d.parallelClusters}
        onChange={(v) => up({ parallelClusters: v })}
        error={errors['directConfig.parallelClusters']}
      />
      <CheckField
        field="directConfig.skipHealthChecks"
        label="Skip the health checks after the installs"
        hint="not recommended for production"
        checked={d.skipHealthChecks}
        onChange={(v) => up({ skipHealthChecks: v })}
        error={errors['directConfig.skipHealthChecks']}
      />
    </fieldset>
  );
}
