// A CRD with two revisions and the manager's diff between them, for the tests.
import type { GetResult } from '../../api/types';

function crd(version: { properties: Record<string, unknown>; required?: string[] }) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      names: { kind: 'Widget', plural: 'widgets' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: { spec: { type: 'object', description: 'the widget', ...version } },
            },
          },
        },
      ],
    },
  };
}

export const widgetsV1 = crd({
  properties: {
    color: { type: 'string', enum: ['red', 'green', 'blue'] },
    replicas: { type: 'integer', maximum: 10 },
    size: { type: 'string' },
    items: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
  },
});

export const widgetsV2 = crd({
  properties: {
    color: { type: 'string', enum: ['red', 'green'] },
    replicas: { type: 'integer', maximum: 5 },
    mode: { type: 'string' },
    items: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
  },
  required: ['mode'],
});

const rev = (version: string, digest: string, createdAt: string, note?: string) => ({
  version,
  digest,
  operator: 'widget-operator',
  versions: [version],
  createdAt,
  dropped: false,
  migrationNote: note ? { text: note, url: 'https://example.com/migrate' } : null,
});

export const revisions = {
  '1.0.0': rev('1.0.0', 'sha256:aaa111', '2026-10-01T00:00:00Z'),
  '2.0.0': rev('2.0.0', 'sha256:bbb222', '2026-11-01T00:00:00Z', 'Set `spec.mode` on **every** Widget before upgrading.'),
};

export const widgetsDetail: GetResult<'/api/v1/crds/{name}'> = {
  name: 'widgets.example.com',
  group: 'example.com',
  kind: 'Widget',
  scope: 'Namespaced',
  revisions: [revisions['1.0.0'], revisions['2.0.0']],
  clusters: [
    {
      cluster: 'dev-1',
      environment: 'Dev',
      installed: true,
      matchesDeployed: true,
      deployed: { operator: 'widget-operator', version: '2.0.0', digest: 'sha256:bbb222', deploymentId: 'd-1' },
      revision: revisions['2.0.0'],
      storageVersion: 'v1',
      storedVersions: ['v1'],
      servedVersions: ['v1'],
    },
    { cluster: 'prod-2', environment: 'Production', installed: false, error: 'cluster unreachable' },
  ],
  approvals: [],
  droppedIn: [],
};

export const widgetsDiff: GetResult<'/api/v1/crds/{name}/diff'> = {
  crd: 'widgets.example.com',
  from: revisions['1.0.0'],
  to: revisions['2.0.0'],
  identical: false,
  breaking: true,
  changes: [
    { path: '', kind: 'scopeChanged', breaking: true, message: 'scope changed from Namespaced to Cluster' },
    { path: 'spec.color', kind: 'enumTightened', version: 'v1', breaking: true, message: 'spec.color: enum value "blue" removed' },
    { path: 'spec.mode', kind: 'requiredFieldAdded', version: 'v1', breaking: true, message: 'field spec.mode is now required: objects without it are refused' },
    { path: 'spec.replicas', kind: 'maximumTightened', version: 'v1', breaking: true, message: 'spec.replicas: maximum decreased from 10 to 5' },
    { path: 'spec.size', kind: 'fieldRemoved', version: 'v1', breaking: true, message: 'field spec.size was removed from version v1: existing values are pruned' },
  ],
};
