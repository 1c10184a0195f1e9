import { describe, expect, it } from 'vitest';
import { buildFleet, cellLabel, counted, groupLabel, type FleetFilters } from './model';
import { smallFleet } from './fixtures';

const none: FleetFilters = { environment: '', operator: '', health: '', drift: '' };

describe('buildFleet', () => {
  it('keeps every operator and cluster, grouped by environment', () => {
    const m = buildFleet(smallFleet, none);
    expect(m.rows.map((o) => o.name)).toEqual(['cert-manager', 'sample-operator']);
    expect(m.cols.map((c) => c.name)).toEqual(['dev-1', 'stg-1', 'prod-1', 'prod-2']);
    expect(m.groups).toEqual([
      { environment: 'Dev', start: 0, count: 1 },
      { environment: 'Staging', start: 1, count: 1 },
      { environment: 'Production', start: 2, count: 2 },
    ]);
    expect(m.cell(1, 1)?.healthReason).toBe('CrashLoopBackOff');
    expect(m.cell(1, 2)).toBeUndefined();
    expect([m.cells, m.bad, m.behind]).toEqual([4, 1, 2]);
  });

  it('filters by environment and operator name', () => {
    const m = buildFleet(smallFleet, { ...none, environment: 'Production', operator: 'CERT' });
    expect(m.rows.map((o) => o.name)).toEqual(['cert-manager']);
    expect(m.cols.map((c) => c.name)).toEqual(['prod-1', 'prod-2']);
    expect(m.cell(0, 0)?.version).toBe('1.14.0');
    expect(m.groups).toEqual([{ environment: 'Production', start: 0, count: 2 }]);
  });

  it('shows one bad cell for one bad cluster, and the bad cluster itself', () => {
    const m = buildFleet(smallFleet, { ...none, health: 'Unhealthy' });
    expect(m.rows.map((o) => o.name)).toEqual(['sample-operator']);
    expect(m.cols.map((c) => c.name)).toEqual(['stg-1', 'prod-2']);
    expect(m.bad).toBe(1);
  });

  it('filters to cells behind the latest version', () => {
    const m = buildFleet(smallFleet, { ...none, drift: 'behind' });
    expect(m.cols.map((c) => c.name)).toEqual(['stg-1', 'prod-1']);
    expect(m.behind).toBe(2);
  });

  it('is empty without data', () => {
    const m = buildFleet(undefined, none);
    expect([m.rows.length, m.cols.length, m.groups.length]).toEqual([0, 0, 0]);
  });
});

describe('cellLabel', () => {
  it('says where, then version, health and the newer latest as the cell shows them, then the reason', () => {
    expect(cellLabel('op', 'c', smallFleet.cells![3])).toBe('op on c: 0.2.0, Unhealthy, 0.3.0 is the latest, CrashLoopBackOff');
    expect(cellLabel('op', 'c', { ...smallFleet.cells![3]!, drift: 'current', health: 'Healthy', healthReason: '' })).toBe('op on c: 0.2.0, Healthy, current');
    expect(cellLabel('op', 'c', undefined)).toBe('op is not installed on c');
    const alerting = { ...smallFleet.cells![3]!, onUnhealthy: 'alert' as const, alertReason: 'past its bake window (15m0s after it completed at 2026-11-29T06:00:00Z)' };
    expect(cellLabel('op', 'c', alerting)).toBe(
      'op on c: 0.2.0, Unhealthy, alert, no automatic rollback: past its bake window (15m0s after it completed at 2026-11-29T06:00:00Z), 0.3.0 is the latest, CrashLoopBackOff',
    );
  });
});

describe('labels', () => {
  it('heads a group short, and whole for its title', () => {
    expect(groupLabel({ environment: 'Staging', start: 1, count: 1 })).toEqual({ short: 'Staging · 1', full: 'Staging · 1 cluster' });
    expect(groupLabel({ environment: 'Production', start: 2, count: 12 })).toEqual({ short: 'Production · 12', full: 'Production · 12 clusters' });
    expect(groupLabel({ environment: '', start: 0, count: 2 }).full).toBe('no environment · 2 clusters');
  });

  it('counts in the singular for one', () => {
    expect([counted(0, 'operator'), counted(1, 'operator'), counted(2, 'cluster')]).toEqual(['0 operators', '1 operator', '2 clusters']);
  });
});
