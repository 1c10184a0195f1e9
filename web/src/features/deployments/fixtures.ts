// Deployments as the manager answers them, for the tests of these pages.
import type { Approval } from '../approvals/model';
import type { Deployment, DeploymentCluster, DeploymentEvent } from './model';

export const ID = '6f1c2b9e-0a5d-4e47-9a8e-2f4f0c1d7b31';

function cluster(name: string, environment: string, stage: number, status: string, extra: Partial<DeploymentCluster> = {}): DeploymentCluster {
  return {
    name,
    environment,
    stage,
    status,
    helmRevision: 0,
    previousRevision: 0,
    namespace: 'sample',
    release: 'sample-operator',
    installAttempts: 0,
    updatedAt: '2026-11-26T10:00:00Z',
    ...extra,
  };
}

/** A Canary of sample-operator 2.0.0 over five clusters in its first stage's evaluation period. */
export function canary(over: Partial<Deployment> = {}): Deployment {
  return {
    id: ID,
    operator: 'sample-operator',
    version: '2.0.0',
    strategy: 'Canary',
    config: { initialPercentage: 10, incrementPercentage: 20, evaluationPeriod: 'PT5M', successThreshold: 0.95 },
    status: 'Validating',
    reason: 'stage 1 of 3: evaluating',
    requestedBy: 'otto',
    stage: 0,
    createdAt: '2026-11-26T10:00:00Z',
    updatedAt: '2026-11-26T10:01:00Z',
    startedAt: '2026-11-26T10:00:05Z',
    cancelRequested: false,
    rollbackRequested: false,
    switchRequested: false,
    paused: false,
    clusters: [
      cluster('dev-1', 'Dev', 0, 'validating', {
        helmRevision: 4,
        previousRevision: 3,
        previousVersion: '1.0.0',
        installAttempts: 1,
        message: 'installed 2.0.0 as revision 4',
        waiting: 'evaluation period, 3 m 10 s left',
      }),
      cluster('stg-1', 'Staging', 1, 'pending', { waiting: 'waiting for stage 1 (evaluation period, 3 m 10 s left)' }),
      cluster('prod-1', 'Production', 2, 'pending'),
      cluster('prod-2', 'Production', 2, 'pending'),
    ],
    stageStartedAt: '2026-11-26T10:01:00Z',
    waiting: { reason: 'evaluationPeriod', message: 'evaluation period, 3 m 10 s left', until: '2026-11-26T10:06:00Z' },
    ...over,
  };
}

export function events(...items: [number, string, string, string?][]): DeploymentEvent[] {
  return items.map(([id, type, message, c]) => ({
    id,
    deploymentId: ID,
    time: `2026-11-26T10:0${Math.min(id, 9)}:00Z`,
    type,
    message,
    ...(c ? { cluster: c } : {}),
  }));
}

export const EVENTS = events(
  [1, 'created', 'requested by otto'],
  [2, 'status', 'Queued → Planning'],
  [3, 'cluster.installing', 'installing 2.0.0', 'dev-1'],
  [4, 'cluster.installed', 'installed 2.0.0 as revision 4', 'dev-1'],
  [5, 'stage.validating', 'stage 1: evaluation period PT5M'],
);

/** A pending Admin approval of the deployment, requested by otto. */
export function approval(over: Partial<Approval> = {}): Approval {
  return {
    id: 'a-1',
    deploymentId: ID,
    kind: 'breakingCRD',
    requiredRole: 'Admin',
    required: 1,
    approvals: 0,
    requestedBy: 'otto',
    status: 'pending',
    reason: 'breaking changes to the CRDs widgets.example.com of sample-operator 2.0.0',
    expiresAt: '2026-11-29T10:00:00Z',
    createdAt: '2026-11-26T10:00:01Z',
    updatedAt: '2026-11-26T10:00:01Z',
    decisions: [],
    migrationNotes: [
      { crd: 'widgets.example.com', version: '2.0.0', note: { text: '`spec.size` is now **required**', url: 'https://example.com/migrate' } },
    ],
    ...over,
  };
}
