// What the manager answers the New deployment page, for its tests.
import type { DryRun } from './Plan';

export const OPERATORS = {
  items: [
    { name: 'sample-operator', namespace: 'sample', versions: ['2.0.0', '1.0.0'] },
    { name: 'other-operator', namespace: 'other', versions: ['0.3.0'] },
  ],
};

export const CLUSTERS = {
  items: [
    { name: 'dev-1', environment: 'Dev', health: 'Healthy' },
    { name: 'stg-1', environment: 'Staging', health: 'Healthy' },
    { name: 'prod-1', environment: 'Production', health: 'Unhealthy', healthReason: 'unreachable' },
  ],
};

/** A Canary's plan over three clusters: two approvals, a breaking CRD on prod-1, dev-1 already on it. */
export const PLAN: DryRun = {
  dryRun: true,
  operator: 'sample-operator',
  version: '2.0.0',
  strategy: 'Canary',
  config: { initialPercentage: 10, incrementPercentage: 20, evaluationPeriod: 'PT5M', successThreshold: 0.95 },
  stages: [
    { index: 0, kind: 'install', clusters: ['dev-1'], environment: 'Dev', parallel: 1, percentage: 33.33, hold: 'PT5M', successThreshold: 0.95, healthChecks: true },
    { index: 1, kind: 'install', clusters: ['stg-1'], environment: 'Staging', parallel: 1, percentage: 66.67, hold: 'PT5M', successThreshold: 0.95, healthChecks: true },
    { index: 2, kind: 'install', clusters: ['prod-1'], environment: 'Production', parallel: 1, percentage: 100, hold: 'PT0S', successThreshold: 0.95, healthChecks: true },
  ],
  approvals: [
    { kind: 'breakingCRD', requiredRole: 'Admin', required: 1, reason: 'breaking changes to the CRDs widgets.example.com of sample-operator 2.0.0' },
    { kind: 'production', requiredRole: 'EnvironmentOwner:Production', required: 1, reason: 'sample-operator 2.0.0 to the Production clusters prod-1' },
  ],
  clusters: [
    { name: 'dev-1', environment: 'Dev', stage: 0, installedVersion: '2.0.0', runsVersion: true, crds: [{ name: 'widgets.example.com', status: 'unchanged' }] },
    { name: 'stg-1', environment: 'Staging', stage: 1, installedVersion: '1.0.0', crds: [{ name: 'widgets.example.com', status: 'compatible' }] },
    {
      name: 'prod-1',
      environment: 'Production',
      stage: 2,
      installedVersion: '1.0.0',
      crds: [
        {
          name: 'widgets.example.com',
          status: 'breaking',
          changes: [{ breaking: true, kind: 'requiredAdded', path: 'spec.size', version: 'v1', message: 'field became required' }],
        },
      ],
    },
  ],
  alreadyRunning: ['dev-1'],
  events: [{ type: 'crd.breaking', message: 'CRD widgets.example.com: the new definition breaks the one stored on prod-1' }],
  wouldFail: '',
};
