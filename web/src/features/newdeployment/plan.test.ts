import { describe, expect, it } from 'vitest';
import { PLAN } from './fixtures';
import { durationText, planSummary, stageFacts } from './plan';

describe('plan text', () => {
  it('writes ISO 8601 durations in words', () => {
    expect(durationText('PT5M')).toBe('5 m');
    expect(durationText('PT1H30M')).toBe('1 h 30 m');
    expect(durationText('PT90S')).toBe('1 m 30 s');
    expect(durationText('P1DT2H')).toBe('1 d 2 h');
    expect(durationText('PT0S')).toBe('none');
    expect(durationText('PT0.5S')).toBe('0.5 s');
    expect(durationText('5 minutes')).toBe('5 minutes');
    expect(durationText(undefined)).toBe('');
  });

  it('says what each stage does', () => {
    expect(stageFacts(PLAN.stages![0]!)).toBe('33.33 % of the clusters done after it · Dev · 1 at a time · held 5 m · 95 % must be healthy');
    expect(stageFacts(PLAN.stages![2]!)).toBe('100 % of the clusters done after it · Production · 1 at a time · 95 % must be healthy');
    expect(
      stageFacts({ index: 1, kind: 'switch', clusters: ['a'], parallel: 1, percentage: 100, hold: 'PT5M', successThreshold: 1, healthChecks: true, waitForSwitch: true }),
    ).toBe('1 at a time · monitored 5 m · 100 % must be healthy · waits for someone to switch');
    expect(stageFacts({ index: 0, kind: 'install', clusters: ['a'], parallel: 2, percentage: 100, healthChecks: false, pauseAfter: 'PT2M' })).toBe(
      '100 % of the clusters done after it · 2 at a time · no health checks · then a pause of 2 m',
    );
  });

  it('sums the plan up', () => {
    expect(planSummary(PLAN).headline).toBe('3 stages over 3 clusters; asks for 2 approvals; 1 breaking CRD change.');
    expect(planSummary({ stages: [{ index: 0 }], clusters: [{ name: 'a' }], approvals: [] }).headline).toBe('1 stage over 1 cluster; no approval needed.');
  });
});
