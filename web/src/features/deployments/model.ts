// A deployment as the pages show it, in pure functions (tested in model.test.ts): status badges,
// what it waits for with the time left counted to now, which buttons its state and the signed-in
// role allow, the stage timeline, and the events read from the list and the live stream.
import type { GetResult, Item } from '../../api/types';
import type { Tone } from '../../components/HealthBadge';
import type { SSEEvent } from '../../lib/sse';
import { can, type Me } from '../../lib/roles';

export type Deployment = GetResult<'/api/v1/deployments/{id}'>;
export type DeploymentCluster = Item<Deployment['clusters']>;
export type Waiting = NonNullable<Deployment['waiting']>;
export type DeploymentEvent = Item<GetResult<'/api/v1/deployments/{id}/events'>['items']>;

/** The deployment statuses, in the order of a deployment's life (the API's enum). */
export const STATUSES = [
  'Queued',
  'WaitingApproval',
  'Planning',
  'Deploying',
  'Validating',
  'Completed',
  'RollingBack',
  'RolledBack',
  'Failed',
  'Cancelled',
] as const;
export type Status = (typeof STATUSES)[number];

const TERMINAL = new Set(['Completed', 'Failed', 'RolledBack', 'Cancelled']);

/** A final status: nothing of the deployment moves any more (unless a rollback is asked for). */
export function isTerminal(status: string | undefined): boolean {
  return TERMINAL.has(status ?? '');
}

/**
 * Whether the deployment still moves, so its event stream is worth reading: not finished, or
 * finished with a rollback asked for that has not begun (Completed → RollingBack).
 */
export function isLive(d: Deployment | undefined): boolean {
  if (!d) return false;
  if (!isTerminal(d.status)) return true;
  return !!d.rollbackRequested && d.status !== 'RolledBack' && d.status !== 'Failed';
}

export interface Badge {
  tone: Tone;
  symbol: string;
  label: string;
}

const STATUS_BADGES: Record<string, [Tone, string]> = {
  Queued: ['unknown', '…'],
  WaitingApproval: ['warn', '⏸'],
  Planning: ['unknown', '●'],
  Deploying: ['unknown', '●'],
  Validating: ['unknown', '●'],
  Completed: ['ok', '✓'],
  RollingBack: ['warn', '↺'],
  RolledBack: ['warn', '↺'],
  Failed: ['bad', '✗'],
  Cancelled: ['unknown', '■'],
};

/** The deployment's status as a badge: "✓ Completed", "⏸ Deploying (paused)". */
export function statusBadge(d: Pick<Deployment, 'status' | 'paused'>): Badge {
  const status = d.status || 'Unknown';
  const [tone, symbol] = STATUS_BADGES[status] ?? ['unknown', '?'];
  if (d.paused && !isTerminal(status)) return { tone: 'warn', symbol: '⏸', label: `${status} (paused)` };
  return { tone, symbol, label: status };
}

const CLUSTER_BADGES: Record<string, [Tone, string]> = {
  pending: ['unknown', '·'],
  installing: ['unknown', '●'],
  validating: ['unknown', '●'],
  healthy: ['ok', '✓'],
  failed: ['bad', '✗'],
  rolledBack: ['warn', '↺'],
  skipped: ['unknown', '–'],
};

/**
 * A cluster's step as a badge: "· pending", "● installing", "✓ healthy". When the deployment has
 * finished (finished: its status is final), a cluster it left installing or validating (a cancel
 * stops the validation, and the manager keeps the step) is shown stopped, not under way.
 */
export function clusterBadge(status: string | undefined, finished = false): Badge {
  const s = status || 'unknown';
  if (finished && (s === 'installing' || s === 'validating')) return { tone: 'warn', symbol: '■', label: `stopped while ${s}` };
  const [tone, symbol] = CLUSTER_BADGES[s] ?? ['unknown', '?'];
  return { tone, symbol, label: s };
}

/** A cluster's step is final for this deployment. */
export function clusterDone(status: string | undefined): boolean {
  return status === 'healthy' || status === 'failed' || status === 'rolledBack' || status === 'skipped';
}

// ---- waiting, with the time left counted to now ----

/** A time left as the manager writes it: "3 m 10 s", "1 h 5 m", "40 s" (never negative). */
export function leftText(ms: number): string {
  const total = Math.max(Math.round(ms / 1000), 0);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return m > 0 ? `${h} h ${m} m` : `${h} h`;
  if (m > 0) return s > 0 ? `${m} m ${s} s` : `${m} m`;
  return `${s} s`;
}

/** Replaces the time left in a timed wait's message ("evaluation period, 3 m 10 s left"). */
export function withLeft(message: string, ms: number): string {
  if (!message.endsWith(' left')) return message;
  const head = message.slice(0, -' left'.length);
  const i = head.lastIndexOf(', ');
  if (i < 0) return message;
  return `${head.slice(0, i + 2)}${leftText(ms)} left`;
}

/** A wait that ends at a known time (a hold, a pause between clusters): its message counts down. */
export function isTimed(w: Waiting | null | undefined): w is Waiting & { until: string } {
  return !!w?.until && (w.reason === 'evaluationPeriod' || w.reason === 'pauseBetweenClusters');
}

/** What the deployment waits for at now (ms), "" when nothing holds it. */
export function waitingMessage(w: Waiting | null | undefined, now: number): string {
  if (!w) return '';
  const msg = w.message ?? '';
  if (!isTimed(w)) return msg;
  return withLeft(msg, Date.parse(w.until) - now);
}

/**
 * A wait as one line: its lead word and the rest. The manager's messages mostly name what is
 * waited for ("evaluation period, 3 m left", "approval by an Admin": lead "waiting:"), but a later
 * stage's cluster says "waiting for stage 1 (…)" itself: such a message keeps its own words after
 * the lead "waiting", never "waiting: waiting for …", whatever the case or colon it comes with.
 */
export function waitingLine(message: string): { lead: 'waiting' | 'waiting:'; rest: string } {
  const m = /^\s*waiting\b\s*(:?)\s*/i.exec(message);
  if (!m) return { lead: 'waiting:', rest: message.trim() };
  const rest = message.slice(m[0].length).trim();
  return { lead: m[1] && rest ? 'waiting:' : 'waiting', rest };
}

/** A wait as plain text: "waiting: approval by an Admin", "waiting for stage 1 (…)". */
export function waitingText(message: string): string {
  const { lead, rest } = waitingLine(message);
  return rest ? `${lead} ${rest}` : lead;
}

/** Why a cluster waits at now: where it quotes the deployment's timed wait, counted down too. */
export function clusterWaitingMessage(c: DeploymentCluster, w: Waiting | null | undefined, now: number): string {
  const own = c.waiting ?? '';
  if (!own || !isTimed(w) || !w.message || !own.includes(w.message)) return own;
  return own.replace(w.message, waitingMessage(w, now));
}

// ---- which buttons ----

export type DeploymentAction = 'pause' | 'resume' | 'switch' | 'cancel' | 'rollback';

/** A finished deployment left a cluster on its version (what a rollback would restore). */
export function leftOnVersion(d: Deployment): boolean {
  return (d.clusters ?? []).some(
    (c) => ((c.helmRevision ?? 0) > 0 || (c.installAttempts ?? 0) > 0) && c.status !== 'rolledBack' && c.status !== 'skipped',
  );
}

/** BlueGreen's autoSwitch as the request gave it (default true). */
export function autoSwitch(d: Deployment): boolean {
  const cfg = d.config as { autoSwitch?: boolean | null } | null | undefined;
  return cfg?.autoSwitch !== false;
}

/**
 * The actions the deployment's state allows and me's role may start, as the manager decides
 * them (engine/requests.go, pause.go): the API refuses the others anyway.
 */
export function deploymentActions(d: Deployment | undefined, me: Me | undefined): DeploymentAction[] {
  if (!d || !me) return [];
  const out: DeploymentAction[] = [];
  const done = isTerminal(d.status);
  const rolling = d.status === 'RollingBack' || !!d.rollbackRequested;
  const running = !done && !rolling;
  if (running && !d.paused && !d.cancelRequested && can(me, 'deployment.pause')) out.push('pause');
  if (!done && d.paused && can(me, 'deployment.resume')) out.push('resume');
  if (running && d.strategy === 'BlueGreen' && !autoSwitch(d) && !d.switchedAt && !d.switchRequested && can(me, 'deployment.switch')) {
    out.push('switch');
  }
  if (running && !d.cancelRequested && can(me, 'deployment.cancel')) out.push('cancel');
  if (!rolling && (!done || leftOnVersion(d)) && can(me, 'deployment.rollback')) out.push('rollback');
  return out;
}

// ---- the stage timeline ----

export type StageState = 'done' | 'current' | 'upcoming' | 'failed' | 'rolledBack' | 'skipped' | 'stopped' | 'notReached';

export interface TimelineStage {
  index: number;
  kind: 'install' | 'switch';
  state: StageState;
  clusters: DeploymentCluster[];
}

/**
 * The stages of the deployment with their clusters, in order: each cluster in the stage it was
 * planned into; BlueGreen adds its switch to green after the install.
 */
export function timelineOf(d: Deployment): TimelineStage[] {
  const byStage = new Map<number, DeploymentCluster[]>();
  for (const c of d.clusters ?? []) {
    const s = c.stage ?? 0;
    byStage.set(s, [...(byStage.get(s) ?? []), c]);
  }
  const current = d.stage ?? 0;
  const done = isTerminal(d.status);
  const out: TimelineStage[] = [...byStage.keys()]
    .sort((a, b) => a - b)
    .map((index) => {
      const clusters = byStage.get(index)!;
      return { index, kind: 'install' as const, clusters, state: installState(index, current, done, clusters) };
    });
  if (d.strategy === 'BlueGreen' && out.length > 0) {
    const index = out[out.length - 1]!.index + 1;
    out.push({ index, kind: 'switch', clusters: out.flatMap((s) => s.clusters), state: switchState(d, index) });
  }
  return out;
}

function installState(index: number, current: number, done: boolean, clusters: DeploymentCluster[]): StageState {
  if (clusters.some((c) => c.status === 'failed')) return 'failed';
  const worked = clusters.filter((c) => c.status !== 'pending' && c.status !== 'skipped');
  if (worked.length > 0 && worked.every((c) => c.status === 'rolledBack')) return 'rolledBack';
  if (worked.length === 0 && clusters.every((c) => c.status === 'skipped')) return 'skipped';
  if (clusters.every((c) => clusterDone(c.status))) return 'done';
  // Finished during the stage (cancelled in its hold): its clusters were reached, some keep it.
  if (done) return worked.length > 0 ? 'stopped' : 'notReached';
  if (index < current) return 'done';
  return index === current ? 'current' : 'upcoming';
}

function switchState(d: Deployment, index: number): StageState {
  if (d.switchedAt) return d.status === 'RolledBack' ? 'rolledBack' : 'done';
  if (isTerminal(d.status)) return d.status === 'Failed' ? 'failed' : 'notReached';
  return (d.stage ?? 0) >= index ? 'current' : 'upcoming';
}

export const STAGE_STATE_TEXT: Record<StageState, string> = {
  done: 'done',
  current: 'in progress',
  upcoming: 'to come',
  failed: 'failed',
  rolledBack: 'rolled back',
  skipped: 'skipped',
  stopped: 'stopped',
  notReached: 'not reached',
};

// ---- events ----

/** a and b merged by event id, oldest first, each id once. */
export function mergeEvents(a: readonly DeploymentEvent[], b: readonly DeploymentEvent[]): DeploymentEvent[] {
  const byId = new Map<number, DeploymentEvent>();
  for (const e of a) byId.set(e.id ?? 0, e);
  for (const e of b) byId.set(e.id ?? 0, e);
  return [...byId.values()].sort((x, y) => (x.id ?? 0) - (y.id ?? 0));
}

/** The stream's end event: the deployment's final status. */
export interface StreamEnd {
  deploymentId?: string;
  status?: string;
  reason?: string;
}

/** A batch of stream events read: the deployment's events, and the end when it came. */
export function readBatch(batch: readonly SSEEvent[]): { events: DeploymentEvent[]; end: StreamEnd | undefined } {
  const events: DeploymentEvent[] = [];
  let end: StreamEnd | undefined;
  for (const ev of batch) {
    let data: unknown;
    try {
      data = JSON.parse(ev.data);
    } catch {
      continue; // not JSON: nothing the page can show
    }
    if (typeof data !== 'object' || data === null) continue;
    if (ev.type === 'end') end = data as StreamEnd;
    else events.push(data as DeploymentEvent);
  }
  return { events, end };
}

/** Whether a batch of events may have changed the deployment's approvals. */
export function touchesApprovals(events: readonly DeploymentEvent[]): boolean {
  return events.some((e) => e.type?.startsWith('approval.') || e.type === 'status');
}

/** A short id for lists: the first 8 characters of a UUID. */
export function shortId(id: string | undefined): string {
  return (id ?? '').slice(0, 8);
}

/** A CRD change for people: its schema version and path, then the checker's message (which may start with the path). */
export function changeText(c: { version?: string; path?: string; message?: string }): { where: string; what: string } {
  const msg = c.message ?? '';
  const path = c.path ?? '';
  const what = path && msg.startsWith(`${path}: `) ? msg.slice(path.length + 2) : msg;
  return { where: [c.version, path].filter(Boolean).join(' '), what };
}
