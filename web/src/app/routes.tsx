// Every page has its own URL, and every filter lives in the URL's query (useFilters), so any
// view is a deep link. A feature adds its page here: one line per route. Pages load on first
// use (route.lazy: one chunk each), so signing in downloads only the frame.
import type { ComponentType } from 'react';
import type { RouteObject } from 'react-router';
import { CallbackPage } from '../features/auth/CallbackPage';
import { LoginPage } from '../features/auth/LoginPage';
import { Layout } from './Layout';
import { NotFound } from './NotFound';

/** A route's lazy: the page component module exports under name. */
function page<M>(load: () => Promise<M>, name: keyof M): RouteObject['lazy'] {
  return async () => ({ Component: (await load())[name] as ComponentType });
}

const fleet = page(() => import('../features/fleet/FleetPage'), 'FleetPage');

export const routes: RouteObject[] = [
  { path: '/login', element: <LoginPage /> },
  { path: '/login/callback', element: <CallbackPage /> },
  {
    element: <Layout />,
    hydrateFallbackElement: <p className="muted">Loading…</p>,
    children: [
      { index: true, lazy: fleet },
      { path: 'fleet', lazy: fleet },
      // features/deployments, features/newdeployment, features/approvals
      { path: 'deployments', lazy: page(() => import('../features/deployments/DeploymentsPage'), 'DeploymentsPage') },
      { path: 'deployments/new', lazy: page(() => import('../features/newdeployment/NewDeploymentPage'), 'NewDeploymentPage') },
      { path: 'deployments/:id', lazy: page(() => import('../features/deployments/DeploymentPage'), 'DeploymentPage') },
      { path: 'approvals', lazy: page(() => import('../features/approvals/ApprovalsPage'), 'ApprovalsPage') },
      { path: 'operators', lazy: page(() => import('../features/operators/OperatorsPage'), 'OperatorsPage') },
      { path: 'operators/:name', lazy: page(() => import('../features/operators/OperatorPage'), 'OperatorPage') },
      { path: 'crds', lazy: page(() => import('../features/crds/CrdsPage'), 'CrdsPage') },
      { path: 'crds/:name', lazy: page(() => import('../features/crds/CrdPage'), 'CrdPage') },
      { path: 'clusters', lazy: page(() => import('../features/clusters/ClustersPage'), 'ClustersPage') },
      { path: 'clusters/:name', lazy: page(() => import('../features/clusters/ClusterPage'), 'ClusterPage') },
      { path: 'audit', lazy: page(() => import('../features/audit/AuditPage'), 'AuditPage') },
      { path: '*', element: <NotFound /> },
    ],
  },
];
