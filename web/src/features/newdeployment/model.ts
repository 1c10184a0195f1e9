// The new-deployment form as data (pure; tested in model.test.ts): its fields with the design's
// defaults (internal/manager/rollout/request: Canary 10 % then +20 %, evaluation PT5M, success
// threshold 0.95; BlueGreen and Rolling validation PT5M, autoSwitch on; Direct all clusters at
// once with health checks), the request body it makes, and where an error of the manager's
// (details.field, a JSON path) is shown.
import { parse as parseYaml } from 'yaml';
import type { Paths } from '../../api/types';

export type DeploymentRequest = Paths['/api/v1/deployments']['post']['requestBody']['content']['application/json'];

export const STRATEGIES = ['Canary', 'BlueGreen', 'Rolling', 'Direct'] as const;
export type Strategy = (typeof STRATEGIES)[number];
export const ENVIRONMENTS = ['Dev', 'Staging', 'Production'] as const;

export interface FormState {
  operator: string;
  version: string;
  targetBy: 'clusters' | 'environments';
  clusters: string[];
  environments: string[];
  strategy: Strategy;
  canary: { initialPercentage: string; incrementPercentage: string; evaluationPeriod: string; successThreshold: string; stages: string };
  blueGreen: { blueNamespace: string; greenNamespace: string; validationPeriod: string; autoSwitch: boolean };
  rolling: { clusterOrder: string[]; validationPeriod: string; pauseBetweenClusters: string };
  direct: { parallelClusters: string; skipHealthChecks: boolean };
  /** Helm values as YAML or JSON text (an object). */
  values: string;
  /** Values per environment as YAML or JSON text ({Production: {...}}). */
  valuesByEnvironment: string;
}

export const DEFAULTS: FormState = {
  operator: '',
  version: '',
  targetBy: 'clusters',
  clusters: [],
  environments: [],
  strategy: 'Canary',
  canary: { initialPercentage: '10', incrementPercentage: '20', evaluationPeriod: 'PT5M', successThreshold: '0.95', stages: '' },
  blueGreen: { blueNamespace: '', greenNamespace: '', validationPeriod: 'PT5M', autoSwitch: true },
  rolling: { clusterOrder: [], validationPeriod: 'PT5M', pauseBetweenClusters: '' },
  direct: { parallelClusters: '', skipHealthChecks: false },
  values: '',
  valuesByEnvironment: '',
};

/** The form's fields an error can be shown at: the request's JSON paths without indexes. */
export const FIELDS = [
  'operator',
  'version',
  'clusters',
  'environments',
  'strategy',
  'values',
  'valuesByEnvironment',
  'canaryConfig.initialPercentage',
  'canaryConfig.incrementPercentage',
  'canaryConfig.evaluationPeriod',
  'canaryConfig.successThreshold',
  'canaryConfig.stages',
  'blueGreenConfig.blueNamespace',
  'blueGreenConfig.greenNamespace',
  'blueGreenConfig.validationPeriod',
  'blueGreenConfig.autoSwitch',
  'rollingConfig.clusterOrder',
  'rollingConfig.validationPeriod',
  'rollingConfig.pauseBetweenClusters',
  'directConfig.parallelClusters',
  'directConfig.skipHealthChecks',
] as const;
export type Field = (typeof FIELDS)[number];
export type FieldErrors = Partial<Record<Field, string>>;

/**
 * The form field for a JSON path the manager named ("clusters[2]" → clusters,
 * "valuesByEnvironment.Production" → valuesByEnvironment, "canaryConfig.stages[1]" →
 * canaryConfig.stages); undefined when no field shows it.
 */
export function fieldOf(path: string | undefined): Field | undefined {
  if (!path) return undefined;
  const clean = path.replace(/\[\d+\]/g, '');
  let best: Field | undefined;
  for (const f of FIELDS) {
    if ((clean === f || clean.startsWith(`${f}.`)) && (!best || f.length > best.length)) best = f;
  }
  return best;
}

/** A number field: undefined when empty, NaN when not a number. */
function num(s: string): number | undefined {
  const t = s.trim();
  if (t === '') return undefined;
  return Number(t);
}

/** YAML or JSON text as an object ("" → undefined); error says what is wrong. */
export function parseObject(text: string): { value?: Record<string, unknown>; error?: string } {
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    return { error: `not YAML or JSON: ${(err as Error).message.split('\n')[0]}` };
  }
  if (v === null || v === undefined) return {};
  if (typeof v !== 'object' || Array.isArray(v)) return { error: 'must be an object (key: value lines, or a JSON object)' };
  return { value: v as Record<string, unknown> };
}

/** The targets as the request names them, for Rolling's order: the chosen clusters, or every cluster of the chosen environments. */
export function targetsOf(f: FormState, clusters: readonly { name?: string; environment?: string }[]): string[] {
  const rank = (env: string | undefined) => {
    const i = (ENVIRONMENTS as readonly string[]).indexOf(env ?? '');
    return i < 0 ? ENVIRONMENTS.length : i;
  };
  const picked = clusters.filter((c) =>
    f.targetBy === 'clusters' ? f.clusters.includes(c.name ?? '') : f.environments.includes(c.environment ?? ''),
  );
  return [...picked].sort((a, b) => rank(a.environment) - rank(b.environment) || (a.name ?? '').localeCompare(b.name ?? '')).map((c) => c.name ?? '');
}

/** Rolling's order over targets: the order chosen so far for those still targeted, then the rest in the default order. */
export function orderOf(chosen: readonly string[], targets: readonly string[]): string[] {
  const kept = chosen.filter((n) => targets.includes(n));
  return [...kept, ...targets.filter((n) => !kept.includes(n))];
}

/** Moves item i of list by step (−1 up, +1 down); the list as it was at the ends. */
export function move<T>(list: readonly T[], i: number, step: number): T[] {
  const j = i + step;
  if (j < 0 || j >= list.length) return [...list];
  const out = [...list];
  [out[i], out[j]] = [out[j]!, out[i]!];
  return out;
}

/** The request the form describes, or the errors found before asking the manager. */
export function buildRequest(f: FormState, targets: readonly string[] = []): { request?: DeploymentRequest; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const req: DeploymentRequest = { operator: f.operator.trim(), version: f.version.trim(), strategy: f.strategy };
  if (!req.operator) errors.operator = 'Choose an operator.';
  if (!req.version) errors.version = 'Choose a version.';
  if (f.targetBy === 'clusters') {
    if (f.clusters.length === 0) errors.clusters = 'Choose at least one cluster.';
    req.clusters = [...f.clusters];
  } else {
    if (f.environments.length === 0) errors.environments = 'Choose at least one environment.';
    req.environments = ENVIRONMENTS.filter((e) => f.environments.includes(e));
  }
  const values = parseObject(f.values);
  if (values.error) errors.values = values.error;
  else if (values.value) req.values = values.value;
  const byEnv = parseObject(f.valuesByEnvironment);
  if (byEnv.error) errors.valuesByEnvironment = byEnv.error;
  else if (byEnv.value) {
    const bad = Object.entries(byEnv.value).find(([, v]) => typeof v !== 'object' || v === null || Array.isArray(v));
    if (bad) errors.valuesByEnvironment = `${bad[0]}: must be an object of values`;
    else req.valuesByEnvironment = byEnv.value;
  }
  strategyConfig(f, req, errors, targets);
  return Object.keys(errors).length > 0 ? { errors } : { request: req, errors };
}

function strategyConfig(f: FormState, req: DeploymentRequest, errors: FieldErrors, targets: readonly string[]): void {
  const number = (field: Field, s: string, integer = false): number | undefined => {
    const n = num(s);
    if (n !== undefined && (Number.isNaN(n) || (integer && !Number.isInteger(n)))) errors[field] = integer ? 'Must be a whole number.' : 'Must be a number.';
    return n;
  };
  const text = (s: string) => s.trim() || undefined;
  switch (f.strategy) {
    case 'Canary': {
      const c = f.canary;
      const cfg: NonNullable<DeploymentRequest['canaryConfig']> = { evaluationPeriod: text(c.evaluationPeriod) };
      const threshold = number('canaryConfig.successThreshold', c.successThreshold);
      if (threshold !== undefined) cfg.successThreshold = threshold;
      if (c.stages.trim()) {
        const stages = c.stages.split(/[\s,]+/).filter(Boolean).map(Number);
        if (stages.some(Number.isNaN)) errors['canaryConfig.stages'] = 'List percentages, such as 10, 30, 50, 100.';
        cfg.stages = stages;
      } else {
        cfg.initialPercentage = number('canaryConfig.initialPercentage', c.initialPercentage);
        cfg.incrementPercentage = number('canaryConfig.incrementPercentage', c.incrementPercentage);
      }
      req.canaryConfig = dropUndefined(cfg);
      return;
    }
    case 'BlueGreen': {
      const b = f.blueGreen;
      req.blueGreenConfig = dropUndefined({
        blueNamespace: text(b.blueNamespace),
        greenNamespace: text(b.greenNamespace),
        validationPeriod: text(b.validationPeriod),
        autoSwitch: b.autoSwitch,
      });
      return;
    }
    case 'Rolling': {
      const r = f.rolling;
      const order = orderOf(r.clusterOrder, targets);
      req.rollingConfig = dropUndefined({
        clusterOrder: order.length > 0 ? order : undefined,
        validationPeriod: text(r.validationPeriod),
        pauseBetweenClusters: text(r.pauseBetweenClusters),
      });
      return;
    }
    case 'Direct': {
      const d = f.direct;
      req.directConfig = dropUndefined({
        parallelClusters: number('directConfig.parallelClusters', d.parallelClusters, true),
        skipHealthChecks: d.skipHealthChecks,
      });
    }
  }
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
