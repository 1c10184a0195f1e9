import { describe, expect, it } from 'vitest';
import { buildRequest, DEFAULTS, fieldOf, move, orderOf, parseObject, targetsOf, type FormState } from './model';

const form = (over: Partial<FormState> = {}): FormState => ({ ...DEFAULTS, operator: 'sample-operator', version: '2.0.0', clusters: ['dev-1'], ...over });

describe('buildRequest', () => {
  it('makes the design’s Canary with its defaults', () => {
    expect(buildRequest(form()).request).toEqual({
      operator: 'sample-operator',
      version: '2.0.0',
      strategy: 'Canary',
      clusters: ['dev-1'],
      canaryConfig: { initialPercentage: 10, incrementPercentage: 20, evaluationPeriod: 'PT5M', successThreshold: 0.95 },
    });
  });

  it('sends a stages list instead of initial and increment', () => {
    const r = buildRequest(form({ canary: { ...DEFAULTS.canary, stages: '10, 30 50,100' } })).request!;
    expect(r.canaryConfig).toEqual({ evaluationPeriod: 'PT5M', successThreshold: 0.95, stages: [10, 30, 50, 100] });
  });

  it('makes BlueGreen, Rolling and Direct with theirs', () => {
    expect(buildRequest(form({ strategy: 'BlueGreen' })).request!.blueGreenConfig).toEqual({ validationPeriod: 'PT5M', autoSwitch: true });
    const bg = buildRequest(form({ strategy: 'BlueGreen', blueGreen: { blueNamespace: 'ops', greenNamespace: ' ', validationPeriod: 'PT10M', autoSwitch: false } }));
    expect(bg.request!.blueGreenConfig).toEqual({ blueNamespace: 'ops', validationPeriod: 'PT10M', autoSwitch: false });
    const rolling = buildRequest(form({ strategy: 'Rolling', rolling: { clusterOrder: ['b'], validationPeriod: 'PT5M', pauseBetweenClusters: 'PT2M' } }), ['a', 'b', 'c']);
    expect(rolling.request!.rollingConfig).toEqual({ clusterOrder: ['b', 'a', 'c'], validationPeriod: 'PT5M', pauseBetweenClusters: 'PT2M' });
    expect(buildRequest(form({ strategy: 'Direct' })).request!.directConfig).toEqual({ skipHealthChecks: false });
    expect(buildRequest(form({ strategy: 'Direct', direct: { parallelClusters: '10', skipHealthChecks: true } })).request!.directConfig).toEqual({
      parallelClusters: 10,
      skipHealthChecks: true,
    });
    // Only the chosen strategy's config goes out.
    const r = buildRequest(form({ strategy: 'Direct' })).request!;
    expect(r.canaryConfig).toBeUndefined();
    expect(r.blueGreenConfig).toBeUndefined();
  });

  it('targets environments in promotion order', () => {
    const r = buildRequest(form({ targetBy: 'environments', environments: ['Production', 'Dev'] })).request!;
    expect(r.environments).toEqual(['Dev', 'Production']);
    expect(r.clusters).toBeUndefined();
  });

  it('reads values as YAML or JSON', () => {
    const y = buildRequest(form({ values: 'replicaCount: 2\nimage:\n  tag: "2.0"\n', valuesByEnvironment: 'Production:\n  replicaCount: 3' })).request!;
    expect(y.values).toEqual({ replicaCount: 2, image: { tag: '2.0' } });
    expect(y.valuesByEnvironment).toEqual({ Production: { replicaCount: 3 } });
    expect(buildRequest(form({ values: '{"a": [1, 2]}' })).request!.values).toEqual({ a: [1, 2] });
    expect(buildRequest(form({ values: '  \n' })).request!.values).toBeUndefined();
  });

  it('says what is wrong before asking the manager', () => {
    const { request, errors } = buildRequest({
      ...DEFAULTS,
      values: '- a\n- b',
      valuesByEnvironment: 'Production: 3',
      canary: { ...DEFAULTS.canary, initialPercentage: 'ten' },
    });
    expect(request).toBeUndefined();
    expect(errors).toEqual({
      operator: 'Choose an operator.',
      version: 'Choose a version.',
      clusters: 'Choose at least one cluster.',
      values: 'must be an object (key: value lines, or a JSON object)',
      valuesByEnvironment: 'Production: must be an object of values',
      'canaryConfig.initialPercentage': 'Must be a number.',
    });
    expect(buildRequest(form({ values: 'a: [' })).errors.values).toMatch(/^not YAML or JSON: /);
    expect(buildRequest(form({ strategy: 'Direct', direct: { parallelClusters: '2.5', skipHealthChecks: false } })).errors).toEqual({
      'directConfig.parallelClusters': 'Must be a whole number.',
    });
    expect(buildRequest(form({ targetBy: 'environments' })).errors).toEqual({ environments: 'Choose at least one environment.' });
  });
});

describe('fieldOf', () => {
  it('shows the manager’s JSON path at its field', () => {
    expect(fieldOf('canaryConfig.initialPercentage')).toBe('canaryConfig.initialPercentage');
    expect(fieldOf('clusters[2]')).toBe('clusters');
    expect(fieldOf('environments[0]')).toBe('environments');
    expect(fieldOf('canaryConfig.stages[3]')).toBe('canaryConfig.stages');
    expect(fieldOf('rollingConfig.clusterOrder[1]')).toBe('rollingConfig.clusterOrder');
    expect(fieldOf('valuesByEnvironment.Production')).toBe('valuesByEnvironment');
    expect(fieldOf('version')).toBe('version');
    expect(fieldOf('')).toBeUndefined();
    expect(fieldOf('bogus')).toBeUndefined();
    expect(fieldOf(undefined)).toBeUndefined();
  });
});

describe('targets and order', () => {
  const clusters = [
    { name: 'prod-1', environment: 'Production' },
    { name: 'dev-2', environment: 'Dev' },
    { name: 'dev-1', environment: 'Dev' },
    { name: 'stg-1', environment: 'Staging' },
  ];
  it('lists the targets in the default order', () => {
    expect(targetsOf(form({ clusters: ['prod-1', 'dev-2', 'dev-1'] }), clusters)).toEqual(['dev-1', 'dev-2', 'prod-1']);
    expect(targetsOf(form({ targetBy: 'environments', environments: ['Staging', 'Dev'] }), clusters)).toEqual(['dev-1', 'dev-2', 'stg-1']);
  });

  it('keeps the chosen order for the targets left and appends the new ones', () => {
    expect(orderOf(['prod-1', 'gone', 'dev-1'], ['dev-1', 'dev-2', 'prod-1'])).toEqual(['prod-1', 'dev-1', 'dev-2']);
    expect(move(['a', 'b', 'c'], 2, -1)).toEqual(['a', 'c', 'b']);
    expect(move(['a', 'b', 'c'], 0, -1)).toEqual(['a', 'b', 'c']);
  });

  it('parses an empty or null document as no values', () => {
    expect(parseObject('')).toEqual({});
    expect(parseObject('~')).toEqual({});
    expect(parseObject('42').error).toBe('must be an object (key: value lines, or a JSON object)');
  });
});
