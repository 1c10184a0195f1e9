import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { useMe } from '../../app/useMe';
import { ErrorNotice, Loading } from '../../components/States';
import { ApiError } from '../../lib/api';
import { can } from '../../lib/roles';
import { useClusters } from '../clusters/hooks';
import { useOperators } from '../operators/hooks';
import { SelectField, TextArea } from './Fields';
import { useDryRun, useSubmit } from './hooks';
import { buildRequest, DEFAULTS, fieldOf, STRATEGIES, targetsOf, type FieldErrors, type FormState, type Strategy } from './model';
import { Plan } from './Plan';
import { StrategyFields } from './StrategyFields';
import { Targets } from './Targets';
import './newdeployment.css';

const STRATEGY_TEXT: Record<Strategy, string> = {
  Canary: 'Canary: a share of the clusters at a time, each stage evaluated',
  BlueGreen: 'BlueGreen: beside the running version, then switched',
  Rolling: 'Rolling: one cluster at a time, each validated',
  Direct: 'Direct: every cluster at once',
};

/** The form's first state: the defaults, with operator, version and strategy from the URL. */
function initial(params: URLSearchParams): FormState {
  const strategy = params.get('strategy') ?? '';
  return {
    ...DEFAULTS,
    operator: params.get('operator') ?? '',
    version: params.get('version') ?? '',
    strategy: (STRATEGIES as readonly string[]).includes(strategy) ? (strategy as Strategy) : DEFAULTS.strategy,
  };
}

/** An error of the manager's at its field when the form has one, else for the whole form. */
function place(err: unknown): { fields: FieldErrors; general: string } {
  if (err instanceof ApiError) {
    const field = fieldOf(typeof err.details?.field === 'string' ? err.details.field : undefined);
    if (field) return { fields: { [field]: err.message }, general: '' };
    return { fields: {}, general: err.message };
  }
  return { fields: {}, general: (err as Error).message };
}

/** /deployments/new?operator=&version=&strategy=: a request for every strategy, planned (dry run) before it is submitted. */
export function NewDeploymentPage() {
  const { me, isLoading } = useMe();
  const [params] = useSearchParams();
  const [f, setF] = useState<FormState>(() => initial(params));
  const [errors, setErrors] = useState<FieldErrors>({});
  const [general, setGeneral] = useState('');
  const [planned, setPlanned] = useState('');
  const ops = useOperators();
  const cls = useClusters({});
  const dry = useDryRun();
  const submit = useSubmit();
  const navigate = useNavigate();

  const op = (ops.data ?? []).find((o) => o.name === f.operator);
  const versions = op?.versions ?? [];
  // An operator chosen (or named by the URL) without a version: its newest.
  useEffect(() => {
    if (op && !f.version && versions[0]) setF((s) => ({ ...s, version: versions[0]! }));
  }, [op, f.version, versions]);

  const clusters = cls.data ?? [];
  const targets = useMemo(() => targetsOf(f, clusters), [f, clusters]);
  const built = buildRequest(f, targets);
  const key = built.request ? JSON.stringify(built.request) : '';
  const plan = dry.data && planned === key ? dry.data : undefined;

  if (isLoading) return <Loading what="your role" />;
  if (!can(me, 'deployment.create')) {
    return (
      <section>
        <h1>New deployment</h1>
        <p className="notice" data-testid="new-deployment-forbidden">
          Deploying needs the Operator or Admin role.
        </p>
      </section>
    );
  }

  const set = (patch: Partial<FormState>) => setF((s) => ({ ...s, ...patch }));
  async function onPlan(e: FormEvent) {
    e.preventDefault();
    setGeneral('');
    setErrors(built.errors);
    if (!built.request) return;
    try {
      await dry.mutateAsync(built.request);
      setPlanned(key);
    } catch (err) {
      const p = place(err);
      setErrors(p.fields);
      setGeneral(p.general);
      setPlanned('');
    }
  }
  async function onSubmit() {
    if (!built.request) return;
    setGeneral('');
    try {
      const d = await submit.mutateAsync(built.request);
      navigate(`/deployments/${encodeURIComponent(d.id ?? '')}`);
    } catch (err) {
      const p = place(err);
      setErrors(p.fields);
      setGeneral(p.general || 'The manager refused the request: see the fields.');
    }
  }

  const opOptions = [{ value: '', label: 'choose an operator' }, ...(ops.data ?? []).map((o) => ({ value: o.name ?? '', label: o.name ?? '' }))];
  if (f.operator && !op) opOptions.push({ value: f.operator, label: `${f.operator} (not registered)` });
  const versionOptions = [{ value: '', label: 'choose a version' }, ...versions.map((v, i) => ({ value: v, label: i === 0 ? `${v} (newest)` : v }))];
  if (f.version && !versions.includes(f.version)) versionOptions.push({ value: f.version, label: `${f.version} (not listed)` });

  return (
    <section aria-labelledby="new-title" className="new-deployment">
      <h1 id="new-title">New deployment</h1>
      {ops.error && <ErrorNotice error={ops.error} what="the operators" />}
      {cls.error && <ErrorNotice error={cls.error} what="the clusters" />}
      <form onSubmit={onPlan} noValidate data-testid="new-deployment-form" aria-describedby="new-help">
        <p id="new-help" className="muted">
          Plan first: the manager checks the request and shows its stages, approvals and CRD report without storing anything; then deploy it.
        </p>
        <div className="form-row">
          <SelectField
            field="operator"
            label="Operator"
            value={f.operator}
            onChange={(v) => set({ operator: v, version: (ops.data ?? []).find((o) => o.name === v)?.versions?.[0] ?? '' })}
            options={opOptions}
            error={errors.operator}
          />
          <SelectField field="version" label="Version" value={f.version} onChange={(v) => set({ version: v })} options={versionOptions} error={errors.version} />
        </div>
        <Targets f={f} set={set} errors={errors} clusters={clusters} />
        <fieldset className="form-group" data-testid="field-strategy">
          <legend>Strategy</legend>
          {STRATEGIES.map((s) => (
            <label key={s} className="inline">
              <input type="radio" name="strategy" value={s} checked={f.strategy === s} onChange={() => set({ strategy: s })} data-testid={`strategy-${s}`} />
              {STRATEGY_TEXT[s]}
            </label>
          ))}
          {errors.strategy && <span className="field-error">{errors.strategy}</span>}
        </fieldset>
        <StrategyFields f={f} set={set} errors={errors} targets={targets} />
        <fieldset className="form-group">
          <legend>Helm values</legend>
          <TextArea
            field="values"
            label="Values (YAML or JSON, optional)"
            hint="merged over the operator's default values"
            placeholder={'replicaCount: 2\nresources:\n  limits:\n    memory: 256Mi'}
            value={f.values}
            onChange={(v) => set({ values: v })}
            error={errors.values}
          />
          <TextArea
            field="valuesByEnvironment"
            label="Values by environment (YAML or JSON, optional)"
            hint="merged over the values for the clusters of each environment"
            placeholder={'Production:\n  replicaCount: 3'}
            rows={4}
            value={f.valuesByEnvironment}
            onChange={(v) => set({ valuesByEnvironment: v })}
            error={errors.valuesByEnvironment}
          />
        </fieldset>
        {general && (
          <p className="notice error" role="alert" data-testid="form-error">
            {general}
          </p>
        )}
        <div className="toolbar">
          <button type="submit" className={plan ? undefined : 'primary'} disabled={dry.isPending} data-testid="plan-button">
            {dry.isPending ? 'Planning…' : plan ? 'Plan again' : 'Plan'}
          </button>
          <Link to="/deployments" className="button">
            Cancel
          </Link>
          {dry.data && !plan && <span className="muted small">The form changed since the plan: plan again to deploy.</span>}
        </div>
      </form>
      {plan && (
        <>
          <Plan plan={plan} />
          <div className="toolbar submit-bar">
            <button
              type="button"
              className="primary"
              onClick={() => void onSubmit()}
              disabled={submit.isPending || !!plan.wouldFail}
              data-testid="submit"
            >
              {submit.isPending ? 'Deploying…' : `Deploy ${plan.operator} ${plan.version}`}
            </button>
            {plan.wouldFail && <span className="muted small">Fix what the plan says first.</span>}
          </div>
        </>
      )}
    </section>
  );
}
