// Which buttons exist for whom: the manager's route table (internal/manager/server/routes.go)
// and approval rule (internal/manager/approvals MayDecide) seen from the UI. The API refuses
// anyway; the UI only leaves out what the signed-in role may not do. The identity comes from
// GET /api/v1/whoami (useMe).
import type { Whoami } from '../api/types';

export type Role = 'Admin' | 'Operator' | 'Viewer' | 'EnvironmentOwner';

/** The signed-in identity as the UI uses it. */
export interface Me {
  subject: string;
  roles: string[];
  /** The environments owned (EnvironmentOwner:<env>). */
  environments: string[];
}

export function meFrom(w: Whoami | undefined): Me {
  const roles: string[] = [];
  const envs = new Set<string>(w?.environments ?? []);
  for (const r of w?.roles ?? []) {
    const m = /^EnvironmentOwner:(.+)$/.exec(r);
    if (m?.[1]) {
      envs.add(m[1]);
      if (!roles.includes('EnvironmentOwner')) roles.push('EnvironmentOwner');
    } else if (!roles.includes(r)) roles.push(r);
  }
  if (envs.size > 0 && !roles.includes('EnvironmentOwner')) roles.push('EnvironmentOwner');
  return { subject: w?.subject ?? '', roles, environments: [...envs].sort() };
}

const anyRole: Role[] = ['Admin', 'Operator', 'Viewer', 'EnvironmentOwner'];
const operatorRoles: Role[] = ['Operator', 'Admin'];
const admins: Role[] = ['Admin'];

/** The actions a button can start, with the roles the manager lets do them. */
export const ACTIONS = {
  'operator.create': operatorRoles,
  'operator.update': operatorRoles,
  'operator.refresh': operatorRoles,
  'operator.delete': admins,
  'cluster.create': admins,
  'cluster.delete': admins,
  'crd.create': operatorRoles,
  'crd.validate': anyRole,
  'crd.approve': admins,
  'deployment.create': operatorRoles,
  'deployment.cancel': operatorRoles,
  'deployment.pause': operatorRoles,
  'deployment.resume': operatorRoles,
  'deployment.switch': operatorRoles,
  'deployment.rollback': admins,
  'notification.read': operatorRoles,
  'notification.admin': admins,
  'audit.read': admins,
} as const satisfies Record<string, readonly Role[]>;

export type Action = keyof typeof ACTIONS;

export function hasRole(me: Me | undefined, role: Role): boolean {
  return !!me && me.roles.includes(role);
}

/** Whether me may do action (false while the identity is unknown). */
export function can(me: Me | undefined, action: Action): boolean {
  if (!me) return false;
  return (ACTIONS[action] as readonly Role[]).some((r) => me.roles.includes(r));
}

/**
 * Whether me may approve or reject an approval requiring requiredRole ("Admin" or
 * "EnvironmentOwner:Production") requested by requestedBy: nobody decides their own request.
 */
export function mayDecide(me: Me | undefined, requiredRole: string | undefined, requestedBy: string | undefined): boolean {
  if (!me || !me.subject) return false;
  if (me.subject.trim().toLowerCase() === (requestedBy ?? '').trim().toLowerCase()) return false;
  if (requiredRole === 'Admin') return hasRole(me, 'Admin');
  const m = /^EnvironmentOwner:(.+)$/.exec(requiredRole ?? '');
  if (m?.[1]) return hasRole(me, 'Admin') || me.environments.includes(m[1]);
  return false;
}

/** The roles as one label: "Admin", "Operator · EnvironmentOwner:Production". */
export function roleLabel(me: Me): string {
  const parts = me.roles.filter((r) => r !== 'EnvironmentOwner');
  for (const env of me.environments) parts.push(`EnvironmentOwner:${env}`);
  return parts.length ? parts.join(' · ') : 'no role';
}
