// The dry run's plan in words (pure; tested in plan.test.ts).
import type { Item, PostResult } from '../../api/types';
import { leftText } from '../deployments/model';

type DryRun = PostResult<'/api/v1/deployments'>;
export type PlanStage = Item<DryRun['stages']>;

/** An ISO 8601 duration ("PT5M", "P1DT2H", "PT0.5S") in words ("5 m"); as given when not one. */
export function durationText(iso: string | undefined): string {
  if (!iso) return '';
  const m = /^P(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/i.exec(iso);
  if (!m || iso.toUpperCase() === 'P' || iso.toUpperCase().endsWith('T')) return iso;
  const n = (s: string | undefined) => (s ? Number(s.replace(',', '.')) : 0);
  const secs = n(m[1]) * 604800 + n(m[2]) * 86400 + n(m[3]) * 3600 + n(m[4]) * 60 + n(m[5]);
  if (secs === 0) return 'none';
  if (secs >= 86400) {
    const d = Math.floor(secs / 86400);
    const rest = secs - d * 86400;
    return rest > 0 ? `${d} d ${leftText(rest * 1000)}` : `${d} d`;
  }
  return secs < 1 ? `${secs} s` : leftText(secs * 1000);
}

/** A percentage (0-100) as text: "33.33 %". */
function percent(p: number): string {
  return `${Math.round(p * 100) / 100} %`;
}

/** What a stage does, in a line: "10 % of the clusters · hold 5 m · 95 % must be healthy · 2 at a time". */
export function stageFacts(st: PlanStage): string {
  const out: string[] = [];
  if (st.percentage !== undefined && st.kind !== 'switch') out.push(`${percent(st.percentage)} of the clusters done after it`);
  if (st.environment) out.push(st.environment);
  if (st.parallel) out.push(`${st.parallel} at a time`);
  if (st.healthChecks === false) out.push('no health checks');
  const hold = durationText(st.hold);
  if (hold && hold !== 'none') out.push(`${st.kind === 'switch' ? 'monitored' : 'held'} ${hold}`);
  if (st.successThreshold !== undefined && st.healthChecks !== false) out.push(`${percent(st.successThreshold * 100)} must be healthy`);
  const pause = durationText(st.pauseAfter);
  if (pause && pause !== 'none') out.push(`then a pause of ${pause}`);
  if (st.waitForSwitch) out.push('waits for someone to switch');
  return out.join(' · ');
}

/** The plan's headline ("3 stages over 5 clusters; asks 1 approval; 1 breaking CRD") and its stage lines. */
export function planSummary(plan: DryRun): { headline: string; stageFacts: (st: PlanStage) => string } {
  const stages = plan.stages?.length ?? 0;
  const clusters = plan.clusters?.length ?? 0;
  const approvals = plan.approvals?.length ?? 0;
  const breaking = new Set<string>();
  for (const c of plan.clusters ?? []) for (const crd of c.crds ?? []) if (crd.status === 'breaking' && !crd.approved) breaking.add(crd.name ?? '');
  const parts = [`${stages} stage${stages === 1 ? '' : 's'} over ${clusters} cluster${clusters === 1 ? '' : 's'}`];
  parts.push(approvals === 0 ? 'no approval needed' : `asks for ${approvals} approval${approvals === 1 ? '' : 's'}`);
  if (breaking.size > 0) parts.push(`${breaking.size} breaking CRD change${breaking.size === 1 ? '' : 's'}`);
  return { headline: `${parts.join('; ')}.`, stageFacts };
}
