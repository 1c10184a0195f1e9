import { describe, expect, it } from 'vitest';
import { meFrom } from '../../lib/roles';
import { approval } from '../deployments/fixtures';
import { approverText, breakingCrds, byDeployment, crdEvents, decidable, partition, progressText, whyNot } from './model';

const admin = meFrom({ subject: 'ada', roles: ['Admin'] });
const owner = meFrom({ subject: 'pia', roles: ['EnvironmentOwner:Production'] });
const operator = meFrom({ subject: 'olga', roles: ['Operator'] });

describe('who decides', () => {
  it('follows the approval’s role, never one’s own request, once per person', () => {
    const prod = approval({ kind: 'production', requiredRole: 'EnvironmentOwner:Production' });
    expect(decidable(approval(), admin)).toBe(true);
    expect(decidable(prod, admin)).toBe(true);
    expect(decidable(prod, owner)).toBe(true);
    expect(whyNot(approval(), owner)).toBe('it needs an Admin');
    expect(whyNot(approval(), operator)).toBe('it needs an Admin');
    expect(whyNot(approval({ requestedBy: 'Ada' }), admin)).toBe('you requested this deployment: another person must decide');
    expect(whyNot(approval({ decisions: [{ actor: 'ada', decision: 'approve' }], required: 2, approvals: 1 }), admin)).toBe('you approved it already');
    expect(whyNot(approval({ status: 'expired' }), admin)).toBe('it is expired');
    expect(whyNot(approval(), undefined)).toBe('your role is not known yet');
  });

  it('splits an inbox into mine and the others, in order', () => {
    const list = [approval({ id: '1' }), approval({ id: '2', requestedBy: 'ada' }), approval({ id: '3', kind: 'production', requiredRole: 'EnvironmentOwner:Production' })];
    const p = partition(list, admin);
    expect(p.mine.map((a) => a.id)).toEqual(['1', '3']);
    expect(p.others.map((a) => a.id)).toEqual(['2']);
    const q = partition(list, owner);
    expect(q.mine.map((a) => a.id)).toEqual(['3']);
    expect(q.others.map((a) => a.id)).toEqual(['1', '2']);
  });

  it('says who may approve and how far it is', () => {
    expect(approverText('Admin')).toBe('an Admin');
    expect(approverText('EnvironmentOwner:Production')).toBe('an EnvironmentOwner of Production (or an Admin)');
    expect(progressText(approval({ required: 2, approvals: 1 }))).toBe('1 of 2 approvals');
    expect(progressText(approval())).toBe('0 of 1 approval');
  });
});

describe('CRD findings', () => {
  it('names the CRDs a deployment breaks from its events and migration notes', () => {
    const events = [
      { type: 'created', message: 'requested' },
      { type: 'crd.breaking', message: 'CRD widgets.example.com: the new definition breaks the one stored on prod-1' },
      { type: 'crd.dropped', cluster: 'prod-1', message: 'CRD gadgets.example.com: 2.0.0 no longer ships it' },
      { type: 'crd.approved', message: 'CRD things.example.com: the breaking change was approved' },
    ];
    expect(crdEvents(events).map((e) => e.type)).toEqual(['crd.breaking', 'crd.dropped', 'crd.approved']);
    expect(breakingCrds(events, [{ crd: 'zeta.example.com' }, { crd: 'widgets.example.com' }])).toEqual([
      'gadgets.example.com',
      'widgets.example.com',
      'zeta.example.com',
    ]);
  });
});

describe('byDeployment', () => {
  it('groups approvals by deployment in the order they come', () => {
    const g = byDeployment([approval({ id: '1', deploymentId: 'x' }), approval({ id: '2', deploymentId: 'y' }), approval({ id: '3', deploymentId: 'x' })]);
    expect(g.map(([id, as]) => [id, as.map((a) => a.id)])).toEqual([
      ['x', ['1', '3']],
      ['y', ['2']],
    ]);
  });
});
