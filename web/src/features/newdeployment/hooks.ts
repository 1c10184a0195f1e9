import { useMutation } from '@tanstack/react-query';
import type { Paths } from '../../api/types';
import { api, unwrap } from '../../lib/api';
import type { DeploymentRequest } from './model';
import type { DryRun } from './Plan';

type Accepted = Paths['/api/v1/deployments']['post']['responses'][202]['content']['application/json'];

/** POST /api/v1/deployments?dryRun=true: the plan of the request, nothing stored. */
export function useDryRun() {
  return useMutation({
    mutationFn: (body: DeploymentRequest): Promise<DryRun> =>
      unwrap(api.POST('/api/v1/deployments', { params: { query: { dryRun: 'true' } }, body })),
  });
}

/** POST /api/v1/deployments: the deployment, stored Queued (202). */
export function useSubmit() {
  return useMutation({
    mutationFn: async (body: DeploymentRequest): Promise<Accepted> => {
      const { data, error, response } = await api.POST('/api/v1/deployments', { body });
      // The 202's body: openapi-fetch types data as the first 2xx (the dry run's 200).
      return unwrap(Promise.resolve({ data: data as unknown as Accepted | undefined, error, response }));
    },
  });
}
