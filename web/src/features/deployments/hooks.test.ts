import { QueryClient } from '@tanstack/react-query';
import { describe, expect, it } from 'vitest';
import type { SSEEvent } from '../../lib/sse';
import { EVENTS, ID, canary, events } from './fixtures';
import { applyBatch, keys } from './hooks';
import type { Deployment, DeploymentEvent } from './model';

const sse = (e: DeploymentEvent): SSEEvent => ({ type: e.type!, data: JSON.stringify(e), id: String(e.id) });

describe('applyBatch', () => {
  it('merges a batch into the cached events and marks the deployment and approvals to be read again', () => {
    const qc = new QueryClient();
    qc.setQueryData(keys.events(ID), EVENTS);
    qc.setQueryData(keys.one(ID), canary());
    qc.setQueryData(['approvals', 'deployment', ID], []);
    applyBatch(qc, ID, events([6, 'approval.requested', 'approval a-1'], [5, 'stage.validating', 'again']).map(sse));
    expect(qc.getQueryData<DeploymentEvent[]>(keys.events(ID))!.map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(qc.getQueryState(keys.one(ID))!.isInvalidated).toBe(true);
    expect(qc.getQueryState(['approvals', 'deployment', ID])!.isInvalidated).toBe(true);
  });

  it('patches the final status from the end event at once', () => {
    const qc = new QueryClient();
    qc.setQueryData(keys.events(ID), EVENTS);
    qc.setQueryData(keys.one(ID), canary());
    qc.setQueryData(['approvals', 'deployment', ID], []);
    applyBatch(qc, ID, [{ type: 'end', data: JSON.stringify({ deploymentId: ID, status: 'RolledBack', reason: 'manual rollback by ada' }), id: '5' }]);
    const d = qc.getQueryData<Deployment>(keys.one(ID))!;
    expect([d.status, d.reason]).toEqual(['RolledBack', 'manual rollback by ada']);
    expect(qc.getQueryData<DeploymentEvent[]>(keys.events(ID))).toHaveLength(5);
  });

  it('leaves the approvals alone for steps that do not touch them', () => {
    const qc = new QueryClient();
    qc.setQueryData(['approvals', 'deployment', ID], []);
    applyBatch(qc, ID, events([6, 'cluster.installing', 'installing', 'stg-1']).map(sse));
    expect(qc.getQueryState(['approvals', 'deployment', ID])!.isInvalidated).toBe(false);
  });
});
