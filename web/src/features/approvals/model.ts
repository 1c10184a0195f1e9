// Approvals as the inbox and the deployment page show them (pure; tested in model.test.ts): who
// may decide which (the manager's rule: the approval's role, never one's own request, one
// decision per person), and the CRD findings of a deployment read from its events.
import type { GetResult, Item } from '../../api/types';
import { mayDecide, type Me } from '../../lib/roles';

export type Approval = Item<GetResult<'/api/v1/approvals'>['items']>;
export type MigrationNote = Item<Approval['migrationNotes']>;

/** Why me may not decide a: "" when they may. */
export function whyNot(a: Approval, me: Me | undefined): string {
  if (a.status !== 'pending') return `it is ${a.status ?? 'closed'}`;
  if (!me) return 'your role is not known yet';
  const self = me.subject.trim().toLowerCase();
  if (self !== '' && self === (a.requestedBy ?? '').trim().toLowerCase()) {
    return 'you requested this deployment: another person must decide';
  }
  const mine = (a.decisions ?? []).find((d) => (d.actor ?? '').trim().toLowerCase() === self);
  if (mine) return `you ${mine.decision === 'reject' ? 'rejected' : 'approved'} it already`;
  if (!mayDecide(me, a.requiredRole, a.requestedBy)) return `it needs ${approverText(a.requiredRole)}`;
  return '';
}

/** Whether me may approve or reject a now. */
export function decidable(a: Approval, me: Me | undefined): boolean {
  return whyNot(a, me) === '';
}

/** The approvals me may decide, and the others (own requests, other roles, decided), in order. */
export function partition(list: readonly Approval[], me: Me | undefined): { mine: Approval[]; others: Approval[] } {
  const mine: Approval[] = [];
  const others: Approval[] = [];
  for (const a of list) (decidable(a, me) ? mine : others).push(a);
  return { mine, others };
}

/** Who may approve, for people: "an Admin", "an EnvironmentOwner of Production (or an Admin)". */
export function approverText(role: string | undefined): string {
  const m = /^EnvironmentOwner:(.+)$/.exec(role ?? '');
  if (m) return `an EnvironmentOwner of ${m[1]} (or an Admin)`;
  return role ? `an ${role}` : 'a role this manager does not know';
}

const KIND_TEXT: Record<string, string> = {
  versionUpgrade: 'Version upgrade',
  breakingCRD: 'Breaking CRD change',
  production: 'Production deployment',
};

export function kindText(kind: string | undefined): string {
  return KIND_TEXT[kind ?? ''] ?? kind ?? 'Approval';
}

/** "1 of 2 approvals". */
export function progressText(a: Approval): string {
  const n = a.required ?? 1;
  return `${a.approvals ?? 0} of ${n} approval${n === 1 ? '' : 's'}`;
}

/** The events planning wrote about CRDs (crd.breaking, crd.dropped, crd.approved). */
export interface CrdEvent {
  type?: string;
  cluster?: string;
  message?: string;
}

export function crdEvents<E extends CrdEvent>(events: readonly E[]): E[] {
  return events.filter((e) => e.type?.startsWith('crd.'));
}

/**
 * The CRDs the deployment changes in a breaking way: named by its crd.breaking and crd.dropped
 * events ("CRD widgets.example.com: …") and by its migration notes; sorted, each once.
 */
export function breakingCrds(events: readonly CrdEvent[], notes: readonly MigrationNote[] = []): string[] {
  const out = new Set<string>();
  for (const e of events) {
    if (e.type !== 'crd.breaking' && e.type !== 'crd.dropped') continue;
    const m = /^CRD (\S+?):/.exec(e.message ?? '');
    if (m?.[1]) out.add(m[1]);
  }
  for (const n of notes) if (n.crd) out.add(n.crd);
  return [...out].sort();
}

/** The approvals by deployment, in the order each deployment first appears (newest first). */
export function byDeployment(list: readonly Approval[]): [string, Approval[]][] {
  const out = new Map<string, Approval[]>();
  for (const a of list) {
    const id = a.deploymentId ?? '';
    out.set(id, [...(out.get(id) ?? []), a]);
  }
  return [...out.entries()];
}
