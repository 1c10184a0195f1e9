import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { GetQuery } from '../../api/types';
import { api, unwrap } from '../../lib/api';
import { readAll } from '../../lib/paging';
import type { Approval } from './model';

export type ApprovalStatus = NonNullable<GetQuery<'/api/v1/approvals'>['status']>;

export const PAGE = 50;

/** The approvals with status, newest first, a page at a time; refreshed every 15 s. */
export function useApprovals(status: ApprovalStatus) {
  return useInfiniteQuery({
    queryKey: ['approvals', 'list', status],
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/api/v1/approvals', { params: { query: { status, limit: String(PAGE), ...(pageParam ? { continue: pageParam } : {}) } } })),
    initialPageParam: '',
    getNextPageParam: (last) => last.continue || undefined,
    refetchInterval: 15_000,
  });
}

/** Every approval of one deployment, pending and decided. */
export function useDeploymentApprovals(deploymentId: string) {
  return useQuery({
    queryKey: ['approvals', 'deployment', deploymentId],
    queryFn: () =>
      readAll((cont) =>
        unwrap(
          api.GET('/api/v1/approvals', {
            params: { query: { deploymentId, status: 'all', limit: '1000', ...(cont ? { continue: cont } : {}) } },
          }),
        ),
      ),
  });
}

export type Decision = 'approve' | 'reject';

/** Approves or rejects an approval (a rejection needs a comment); the approvals and its deployment are read again. */
export function useDecide() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ approval, decision, comment }: { approval: Approval; decision: Decision; comment: string }) => {
      const req = { params: { path: { id: approval.id ?? '' } }, body: comment ? { comment } : {} };
      return decision === 'approve'
        ? unwrap(api.POST('/api/v1/approvals/{id}/approve', req))
        : unwrap(api.POST('/api/v1/approvals/{id}/reject', req));
    },
    onSuccess: (_a, { approval }) => {
      void qc.invalidateQueries({ queryKey: ['approvals'] });
      if (approval.deploymentId) void qc.invalidateQueries({ queryKey: ['deployment', approval.deploymentId], exact: true });
    },
  });
}
