import { describe, expect, it } from 'vitest';
import { meFrom } from '../../lib/roles';
import { WHOAMI } from '../../test/render';
import { canary, events } from './fixtures';
import {
  changeText,
  clusterBadge,
  clusterWaitingMessage,
  deploymentActions,
  isLive,
  leftText,
  mergeEvents,
  readBatch,
  statusBadge,
  timelineOf,
  waitingLine,
  waitingMessage,
  withLeft,
  type Deployment,
} from './model';

const me = (w: { subject: string; roles: readonly string[]; environments: readonly string[] }) =>
  meFrom({ subject: w.subject, roles: [...w.roles], environments: [...w.environments] });
const admin = me(WHOAMI.Admin);
const operator = me(WHOAMI.Operator);
const viewer = me(WHOAMI.Viewer);
const owner = me(WHOAMI.ProductionOwner);

describe('countdown', () => {
  it('writes a time left as the manager does', () => {
    expect(leftText(190_000)).toBe('3 m 10 s');
    expect(leftText(180_000)).toBe('3 m');
    expect(leftText(40_400)).toBe('40 s');
    expect(leftText(3_900_000)).toBe('1 h 5 m');
    expect(leftText(7_200_000)).toBe('2 h');
    expect(leftText(-5_000)).toBe('0 s');
  });

  it('counts a timed wait down to now and leaves other waits as they are', () => {
    const until = Date.parse('2026-11-26T10:06:00Z');
    const w = { reason: 'evaluationPeriod' as const, message: 'evaluation period, 3 m 10 s left', until: '2026-11-26T10:06:00Z' };
    expect(waitingMessage(w, until - 190_000)).toBe('evaluation period, 3 m 10 s left');
    expect(waitingMessage(w, until - 189_000)).toBe('evaluation period, 3 m 9 s left');
    expect(waitingMessage(w, until - 60_000)).toBe('evaluation period, 1 m left');
    expect(waitingMessage(w, until + 3_000)).toBe('evaluation period, 0 s left');
    const pause = { reason: 'pauseBetweenClusters' as const, message: 'pause between clusters, 2 m left', until: '2026-11-26T10:06:00Z' };
    expect(waitingMessage(pause, until - 30_000)).toBe('pause between clusters, 30 s left');
    // An approval's until is when it expires: its message does not count down.
    const approval = { reason: 'approval' as const, message: 'approval by an Admin', until: '2026-11-29T10:00:00Z', role: 'Admin' };
    expect(waitingMessage(approval, until)).toBe('approval by an Admin');
    expect(waitingMessage(undefined, until)).toBe('');
    expect(withLeft('paused by alice', 1000)).toBe('paused by alice');
  });

  it('leads a wait with "waiting" once, whatever the message starts with', () => {
    expect(waitingLine('evaluation period, 20 s left')).toEqual({ lead: 'waiting:', rest: 'evaluation period, 20 s left' });
    expect(waitingLine('waiting for stage 1 (evaluation period, 20 s left)')).toEqual({ lead: 'waiting', rest: 'for stage 1 (evaluation period, 20 s left)' });
    expect(waitingLine('Waiting for stage 2')).toEqual({ lead: 'waiting', rest: 'for stage 2' });
    expect(waitingLine('waiting: approval by an Admin')).toEqual({ lead: 'waiting:', rest: 'approval by an Admin' });
    expect(waitingLine('  WAITING :  paused by alice')).toEqual({ lead: 'waiting:', rest: 'paused by alice' });
    expect(waitingLine('waiting')).toEqual({ lead: 'waiting', rest: '' });
    // A word that only starts like it is the message's own.
    expect(waitingLine('waitingroom full')).toEqual({ lead: 'waiting:', rest: 'waitingroom full' });
  });

  it('counts down where a cluster quotes the deployment’s wait', () => {
    const d = canary();
    const now = Date.parse('2026-11-26T10:06:00Z') - 65_000;
    expect(clusterWaitingMessage(d.clusters![0]!, d.waiting, now)).toBe('evaluation period, 1 m 5 s left');
    expect(clusterWaitingMessage(d.clusters![1]!, d.waiting, now)).toBe('waiting for stage 1 (evaluation period, 1 m 5 s left)');
    expect(clusterWaitingMessage(d.clusters![2]!, d.waiting, now)).toBe('');
  });
});

describe('deploymentActions', () => {
  const cases: [string, Deployment, typeof admin, string[]][] = [
    ['a running Canary, Admin', canary(), admin, ['pause', 'cancel', 'rollback']],
    ['a running Canary, Operator (no rollback)', canary(), operator, ['pause', 'cancel']],
    ['a running Canary, Viewer', canary(), viewer, []],
    ['a running Canary, EnvironmentOwner', canary(), owner, []],
    ['paused', canary({ paused: true, pausedBy: 'ada' }), admin, ['resume', 'cancel', 'rollback']],
    ['being cancelled', canary({ cancelRequested: true }), admin, ['rollback']],
    ['rolling back', canary({ status: 'RollingBack', rollbackRequested: true }), admin, []],
    ['rollback asked', canary({ rollbackRequested: true }), admin, []],
    ['waiting for approval', canary({ status: 'WaitingApproval', clusters: canary().clusters!.map((c) => ({ ...c, status: 'pending', helmRevision: 0, installAttempts: 0 })) }), operator, ['pause', 'cancel']],
    ['completed, Admin', canary({ status: 'Completed', clusters: canary().clusters!.map((c) => ({ ...c, status: 'healthy', helmRevision: 2 })) }), admin, ['rollback']],
    ['completed, Operator', canary({ status: 'Completed' }), operator, []],
    ['rolled back', canary({ status: 'RolledBack', clusters: canary().clusters!.map((c) => ({ ...c, status: 'rolledBack' })) }), admin, []],
    ['failed before installing', canary({ status: 'Failed', clusters: canary().clusters!.map((c) => ({ ...c, status: 'pending', helmRevision: 0, installAttempts: 0 })) }), admin, []],
    ['failed with a cluster left on it', canary({ status: 'Failed' }), admin, ['rollback']],
    ['BlueGreen autoSwitch off', canary({ strategy: 'BlueGreen', config: { autoSwitch: false } }), operator, ['pause', 'switch', 'cancel']],
    ['BlueGreen autoSwitch off, switched', canary({ strategy: 'BlueGreen', config: { autoSwitch: false }, switchedAt: '2026-11-26T10:09:00Z' }), operator, ['pause', 'cancel']],
    ['BlueGreen autoSwitch on', canary({ strategy: 'BlueGreen', config: {} }), operator, ['pause', 'cancel']],
  ];
  it.each(cases)('%s', (_name, d, me, want) => {
    expect(deploymentActions(d, me)).toEqual(want);
  });

  it('offers nothing while the identity is unknown', () => {
    expect(deploymentActions(canary(), undefined)).toEqual([]);
  });
});

describe('timelineOf', () => {
  it('puts each cluster in its stage with the stage’s state', () => {
    const t = timelineOf(canary());
    expect(t.map((s) => [s.index, s.state, s.clusters.map((c) => c.name)])).toEqual([
      [0, 'current', ['dev-1']],
      [1, 'upcoming', ['stg-1']],
      [2, 'upcoming', ['prod-1', 'prod-2']],
    ]);
  });

  it('marks passed, failed and unreached stages', () => {
    const d = canary({ stage: 1 });
    d.clusters![0]!.status = 'healthy';
    d.clusters![1]!.status = 'failed';
    expect(timelineOf(d).map((s) => s.state)).toEqual(['done', 'failed', 'upcoming']);
    const cancelled = canary({ status: 'Cancelled' });
    cancelled.clusters![0]!.status = 'healthy';
    expect(timelineOf(cancelled).map((s) => s.state)).toEqual(['done', 'notReached', 'notReached']);
    // Cancelled in stage 1's hold: dev-1 was installed and keeps it, the stage stopped.
    const stopped = canary({ status: 'Cancelled' });
    expect(timelineOf(stopped).map((s) => s.state)).toEqual(['stopped', 'notReached', 'notReached']);
    const skipped = canary({ status: 'RolledBack' });
    skipped.clusters = skipped.clusters!.map((c) => ({ ...c, status: c.stage === 0 ? 'rolledBack' : 'skipped' }));
    expect(timelineOf(skipped).map((s) => s.state)).toEqual(['rolledBack', 'skipped', 'skipped']);
    const rolled = canary({ status: 'RollingBack' });
    rolled.clusters![0]!.status = 'rolledBack';
    expect(timelineOf(rolled)[0]!.state).toBe('rolledBack');
  });

  it('adds BlueGreen’s switch after the install', () => {
    const d = canary({ strategy: 'BlueGreen', stage: 1, config: { autoSwitch: false } });
    d.clusters = d.clusters!.map((c) => ({ ...c, stage: 0, status: 'validating' }));
    const t = timelineOf(d);
    expect(t.map((s) => [s.kind, s.state])).toEqual([
      ['install', 'done'],
      ['switch', 'current'],
    ]);
    expect(timelineOf({ ...d, switchedAt: '2026-11-26T10:09:00Z' })[1]!.state).toBe('done');
  });
});

describe('events', () => {
  it('reads a batch of stream events and its end', () => {
    const [a, b] = events([7, 'cluster.installed', 'ok', 'dev-1'], [8, 'stage.passed', 'stage 1 passed']);
    const batch = readBatch([
      { type: 'cluster.installed', data: JSON.stringify(a), id: '7' },
      { type: 'stage.passed', data: JSON.stringify(b), id: '8' },
      { type: 'broken', data: 'not json', id: '8' },
      { type: 'end', data: '{"deploymentId":"x","status":"Completed"}', id: '8' },
    ]);
    expect(batch.events.map((e) => e.id)).toEqual([7, 8]);
    expect(batch.end?.status).toBe('Completed');
  });

  it('merges events by id, oldest first, each once', () => {
    const old = events([1, 'created', 'a'], [2, 'status', 'b']);
    const merged = mergeEvents(old, events([3, 'status', 'c'], [2, 'status', 'b again']));
    expect(merged.map((e) => [e.id, e.message])).toEqual([
      [1, 'a'],
      [2, 'b again'],
      [3, 'c'],
    ]);
  });
});

describe('changeText', () => {
  it('writes a CRD change without saying its path twice', () => {
    expect(changeText({ version: 'v1alpha1', path: 'spec.count', message: 'spec.count: type changed : "integer" -> "string"' })).toEqual({
      where: 'v1alpha1 spec.count',
      what: 'type changed : "integer" -> "string"',
    });
    expect(changeText({ path: 'spec.legacy', message: 'field spec.legacy was removed' })).toEqual({ where: 'spec.legacy', what: 'field spec.legacy was removed' });
  });
});

describe('clusterBadge', () => {
  it('shows a step the finished deployment left under way as stopped', () => {
    expect(clusterBadge('validating').label).toBe('validating');
    expect(clusterBadge('validating', true)).toEqual({ tone: 'warn', symbol: '■', label: 'stopped while validating' });
    expect(clusterBadge('installing', true).label).toBe('stopped while installing');
    expect(clusterBadge('healthy', true).label).toBe('healthy');
  });
});

describe('status', () => {
  it('pairs each status with a symbol and says paused', () => {
    expect(statusBadge({ status: 'Completed' })).toEqual({ tone: 'ok', symbol: '✓', label: 'Completed' });
    expect(statusBadge({ status: 'Failed' }).tone).toBe('bad');
    expect(statusBadge({ status: 'Deploying', paused: true })).toEqual({ tone: 'warn', symbol: '⏸', label: 'Deploying (paused)' });
  });

  it('streams while the deployment moves or a rollback of a finished one is asked', () => {
    expect(isLive(canary())).toBe(true);
    expect(isLive(canary({ status: 'Completed' }))).toBe(false);
    expect(isLive(canary({ status: 'Completed', rollbackRequested: true }))).toBe(true);
    expect(isLive(canary({ status: 'RolledBack', rollbackRequested: true }))).toBe(false);
    expect(isLive(undefined)).toBe(false);
  });
});
