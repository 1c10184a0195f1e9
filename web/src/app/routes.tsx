// Every page has its own URL, and every filter lives in the URL's query (useFilters), so any
// view is a deep link. A feature adds its page here: one line per route.
import type { RouteObject } from 'react-router';
import { AuditPage } from '../features/audit/AuditPage';
import { CallbackPage } from '../features/auth/CallbackPage';
import { LoginPage } from '../features/auth/LoginPage';
import { ClusterPage } from '../features/clusters/ClusterPage';
import { ClustersPage } from '../features/clusters/ClustersPage';
import { CrdPage } from '../features/crds/CrdPage';
import { CrdsPage } from '../features/crds/CrdsPage';
import { FleetPage } from '../features/fleet/FleetPage';
import { OperatorPage } from '../features/operators/OperatorPage';
import { OperatorsPage } from '../features/operators/OperatorsPage';
import { Layout } from './Layout';
import { NotFound } from './NotFound';
import { Pending } from './Pending';

export const routes: RouteObject[] = [
  { path: '/login', element: <LoginPage /> },
  { path: '/login/callback', element: <CallbackPage /> },
  {
    element: <Layout />,
    children: [
      { index: true, element: <FleetPage /> },
      { path: 'fleet', element: <FleetPage /> },
      // features/deployments, features/newdeployment, features/approvals
      { path: 'deployments', element: <Pending title="Deployments" /> },
      { path: 'deployments/new', element: <Pending title="New deployment" /> },
      { path: 'deployments/:id', element: <Pending title="Deployment" /> },
      { path: 'approvals', element: <Pending title="Approvals" /> },
      { path: 'operators', element: <OperatorsPage /> },
      { path: 'operators/:name', element: <OperatorPage /> },
      { path: 'crds', element: <CrdsPage /> },
      { path: 'crds/:name', element: <CrdPage /> },
      { path: 'clusters', element: <ClustersPage /> },
      { path: 'clusters/:name', element: <ClusterPage /> },
      { path: 'audit', element: <AuditPage /> },
      { path: '*', element: <NotFound /> },
    ],
  },
];
