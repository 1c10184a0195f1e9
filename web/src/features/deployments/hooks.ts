// The deployments' queries and actions, one hook each, and the live stream of one deployment:
// its events listed first, then streamed from the list's last id, each batch (~500 ms) merged
// into the events in the query cache and answered by one read of the deployment.
import { useInfiniteQuery, useMutation, useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import type { GetQuery } from '../../api/types';
import { api, unwrap } from '../../lib/api';
import { readAll } from '../../lib/paging';
import type { SSEEvent } from '../../lib/sse';
import { useEventStream, type StreamState } from '../../lib/useEventStream';
import { isLive, mergeEvents, readBatch, touchesApprovals, type Deployment, type DeploymentAction, type DeploymentEvent } from './model';

export type DeploymentsQuery = Pick<GetQuery<'/api/v1/deployments'>, 'operator' | 'status' | 'active'>;

export const PAGE = 50;

export const keys = {
  list: (q: DeploymentsQuery) => ['deployments', q] as const,
  one: (id: string) => ['deployment', id] as const,
  events: (id: string) => ['deployment', id, 'events'] as const,
};

/** The deployments matching q, newest first, a page at a time (continue); refreshed every 10 s. */
export function useDeployments(q: DeploymentsQuery) {
  return useInfiniteQuery({
    queryKey: keys.list(q),
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/api/v1/deployments', { params: { query: { ...q, limit: String(PAGE), ...(pageParam ? { continue: pageParam } : {}) } } })),
    initialPageParam: '',
    getNextPageParam: (last) => last.continue || undefined,
    refetchInterval: 10_000,
  });
}

/**
 * One deployment. Its stream's events have it read again as they come; besides, it is read every
 * 15 s while it moves (what no event tells: a queue position, a stream that cannot connect).
 */
export function useDeployment(id: string) {
  return useQuery({
    queryKey: keys.one(id),
    queryFn: () => unwrap(api.GET('/api/v1/deployments/{id}', { params: { path: { id } } })),
    refetchInterval: (q) => (isLive(q.state.data) ? 15_000 : false),
  });
}

/** Every event of the deployment so far (the list the stream continues). */
export function useDeploymentEvents(id: string) {
  return useQuery({
    queryKey: keys.events(id),
    queryFn: () =>
      readAll((cont) =>
        unwrap(api.GET('/api/v1/deployments/{id}/events', { params: { path: { id }, query: { limit: '1000', ...(cont ? { continue: cont } : {}) } } })),
      ),
    // The stream keeps it current: never read again behind its back.
    staleTime: Infinity,
  });
}

/** Applies a batch of stream events to the cache: the events merged, the deployment read again. */
export function applyBatch(qc: QueryClient, id: string, batch: readonly SSEEvent[]): void {
  const { events, end } = readBatch(batch);
  if (events.length > 0) qc.setQueryData<DeploymentEvent[]>(keys.events(id), (old) => mergeEvents(old ?? [], events));
  if (end?.status) {
    qc.setQueryData<Deployment>(keys.one(id), (old) => (old ? { ...old, status: end.status, reason: end.reason ?? old.reason } : old));
  }
  void qc.invalidateQueries({ queryKey: keys.one(id), exact: true });
  if (end || touchesApprovals(events)) void qc.invalidateQueries({ queryKey: ['approvals'] });
}

/**
 * The deployment's live stream while it moves (after its events were listed, from the last of
 * them). A stream that ended while the deployment still moves (a rollback asked of a finished
 * one) is opened again after 2 s. When the deployment is read as finished before its stream
 * brought the last events (an action's answer or a periodic read can come first, and the stream
 * closes then, its batch unread), its events are listed once more.
 */
export function useLiveDeployment(id: string, d: Deployment | undefined, events: DeploymentEvent[] | undefined): StreamState {
  const qc = useQueryClient();
  const [epoch, setEpoch] = useState(0);
  const live = isLive(d);
  const url = live && events ? `/api/v1/deployments/${encodeURIComponent(id)}/events` : null;
  const lastEventId = events && events.length > 0 ? String(events[events.length - 1]!.id) : undefined;
  const onEvents = useCallback((batch: SSEEvent[]) => applyBatch(qc, id, batch), [qc, id]);
  // A new epoch is a new URL for the hook (the fragment never reaches the manager): a new stream.
  const state = useEventStream(url && `${url}#${epoch}`, { lastEventId, onEvents });
  const ended = state.status === 'ended' && !!url;
  useEffect(() => {
    if (!ended) return;
    const t = setTimeout(() => setEpoch((n) => n + 1), 2_000);
    return () => clearTimeout(t);
  }, [ended]);
  const wasLive = useRef(live);
  useEffect(() => {
    if (wasLive.current && !live) void qc.invalidateQueries({ queryKey: keys.events(id), exact: true });
    wasLive.current = live;
  }, [live, qc, id]);
  return state;
}

/** Starts an action on the deployment; the answer replaces the cached deployment. */
export function useDeploymentAction(id: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ action, reason }: { action: DeploymentAction; reason: string }) => runAction(id, action, reason),
    onSuccess: (d) => {
      qc.setQueryData(keys.one(id), d);
      void qc.invalidateQueries({ queryKey: keys.one(id), exact: true });
      void qc.invalidateQueries({ queryKey: ['deployments'] });
    },
  });
}

function runAction(id: string, action: DeploymentAction, reason: string): Promise<Deployment> {
  const path = { params: { path: { id } } };
  const body = reason ? { reason } : {};
  switch (action) {
    case 'pause':
      return unwrap(api.POST('/api/v1/deployments/{id}/pause', { ...path, body }));
    case 'resume':
      return unwrap(api.POST('/api/v1/deployments/{id}/resume', path));
    case 'switch':
      return unwrap(api.POST('/api/v1/deployments/{id}/switch', path));
    case 'cancel':
      return unwrap(api.DELETE('/api/v1/deployments/{id}', path));
    case 'rollback':
      return unwrap(api.POST('/api/v1/deployments/{id}/rollback', { ...path, body }));
  }
}
