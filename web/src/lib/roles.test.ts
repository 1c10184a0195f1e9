import { describe, expect, it } from 'vitest';
import { can, mayDecide, meFrom, roleLabel } from './roles';

const admin = meFrom({ subject: 'ada', roles: ['Admin'], environments: [] });
const operator = meFrom({ subject: 'otto', roles: ['Operator'] });
const viewer = meFrom({ subject: 'vic', roles: ['Viewer'] });
const owner = meFrom({ subject: 'pia', roles: ['EnvironmentOwner:Production'] });
const owner2 = meFrom({ subject: 'pia', roles: ['EnvironmentOwner'], environments: ['Production'] });

describe('meFrom', () => {
  it('reads both spellings of an environment owner', () => {
    expect(owner).toEqual({ subject: 'pia', roles: ['EnvironmentOwner'], environments: ['Production'] });
    expect(owner2).toEqual(owner);
  });
  it('is empty without an identity', () => {
    expect(meFrom(undefined)).toEqual({ subject: '', roles: [], environments: [] });
  });
});

describe('can', () => {
  it('follows the route table', () => {
    expect(can(admin, 'deployment.rollback')).toBe(true);
    expect(can(operator, 'deployment.rollback')).toBe(false);
    expect(can(operator, 'deployment.pause')).toBe(true);
    expect(can(operator, 'operator.refresh')).toBe(true);
    expect(can(admin, 'audit.read')).toBe(true);
    expect(can(operator, 'audit.read')).toBe(false);
    expect(can(undefined, 'operator.refresh')).toBe(false);
  });
  it('gives a Viewer and an environment owner no write button', () => {
    for (const me of [viewer, owner]) {
      expect(can(me, 'deployment.create')).toBe(false);
      expect(can(me, 'deployment.pause')).toBe(false);
      expect(can(me, 'operator.refresh')).toBe(false);
      expect(can(me, 'crd.approve')).toBe(false);
    }
  });
});

describe('mayDecide', () => {
  it('follows the approvals rule', () => {
    expect(mayDecide(admin, 'Admin', 'otto')).toBe(true);
    expect(mayDecide(operator, 'Admin', 'ada')).toBe(false);
    expect(mayDecide(owner, 'EnvironmentOwner:Production', 'otto')).toBe(true);
    expect(mayDecide(admin, 'EnvironmentOwner:Production', 'otto')).toBe(true);
    expect(mayDecide(owner, 'Admin', 'otto')).toBe(false);
    expect(mayDecide(viewer, 'EnvironmentOwner:Production', 'otto')).toBe(false);
  });
  it('never lets anyone decide their own request', () => {
    expect(mayDecide(admin, 'Admin', 'ADA ')).toBe(false);
  });
  it('refuses a role it does not know', () => {
    expect(mayDecide(admin, 'Chief', 'otto')).toBe(false);
  });
});

describe('roleLabel', () => {
  it('spells roles as tokens carry them', () => {
    expect(roleLabel(admin)).toBe('Admin');
    expect(roleLabel(meFrom({ subject: 'x', roles: ['Operator', 'EnvironmentOwner:Dev'] }))).toBe('Operator · EnvironmentOwner:Dev');
    expect(roleLabel(meFrom({ subject: 'x', roles: [] }))).toBe('no role');
  });
});
