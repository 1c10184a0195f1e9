// Fleets for the tests, typed by the generated schema.
import type { Fleet } from '../../api/types';

export const smallFleet: Fleet = {
  operators: [
    { name: 'cert-manager', namespace: 'cert-manager', latestVersion: '1.15.0', versions: ['1.14.0', '1.15.0'] },
    { name: 'sample-operator', namespace: 'sample', latestVersion: '0.3.0', versions: ['0.2.0', '0.3.0'] },
  ],
  clusters: [
    { name: 'dev-1', environment: 'Dev', health: 'Healthy', kubernetesVersion: 'v1.33.0' },
    { name: 'stg-1', environment: 'Staging', health: 'Healthy', kubernetesVersion: 'v1.33.0' },
    { name: 'prod-1', environment: 'Production', health: 'Healthy', kubernetesVersion: 'v1.32.1' },
    { name: 'prod-2', environment: 'Production', health: 'Unhealthy', healthReason: 'API server unreachable' },
  ],
  cells: [
    { operator: 'cert-manager', cluster: 'dev-1', environment: 'Dev', version: '1.15.0', latestVersion: '1.15.0', drift: 'current', health: 'Healthy' },
    { operator: 'cert-manager', cluster: 'prod-1', environment: 'Production', version: '1.14.0', latestVersion: '1.15.0', drift: 'behind', health: 'Healthy' },
    { operator: 'sample-operator', cluster: 'dev-1', environment: 'Dev', version: '0.3.0', latestVersion: '0.3.0', drift: 'current', health: 'Healthy', deploymentId: 'd-1' },
    { operator: 'sample-operator', cluster: 'stg-1', environment: 'Staging', version: '0.2.0', latestVersion: '0.3.0', drift: 'behind', health: 'Unhealthy', healthReason: 'CrashLoopBackOff' },
  ],
};

/** ops operators on clusters clusters (three environments), every cell filled; one bad cluster. */
export function bigFleet(ops: number, clusters: number, badCluster = 'cluster-0007'): Fleet {
  const envs = ['Dev', 'Staging', 'Production'];
  const f: Fleet = { operators: [], clusters: [], cells: [] };
  for (let o = 0; o < ops; o++) {
    f.operators!.push({ name: `operator-${String(o).padStart(2, '0')}`, namespace: 'ops', latestVersion: '2.0.0', versions: ['1.0.0', '2.0.0'] });
  }
  const names: { name: string; environment: string }[] = [];
  for (let c = 0; c < clusters; c++) {
    names.push({ name: `cluster-${String(c).padStart(4, '0')}`, environment: envs[Math.floor((c * envs.length) / clusters)]! });
  }
  for (const c of names) {
    const bad = c.name === badCluster;
    f.clusters!.push({ ...c, health: bad ? 'Unhealthy' : 'Healthy', kubernetesVersion: 'v1.33.0' });
    for (const o of f.operators!) {
      f.cells!.push({
        operator: o.name,
        cluster: c.name,
        environment: c.environment,
        version: '2.0.0',
        latestVersion: '2.0.0',
        drift: 'current',
        health: bad ? 'Unhealthy' : 'Healthy',
        healthReason: bad ? 'cluster unreachable' : undefined,
      });
    }
  }
  return f;
}
