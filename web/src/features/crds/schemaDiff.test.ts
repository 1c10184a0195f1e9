import { describe, expect, it } from 'vitest';
import { diffSchemas, flattenCRD, unplacedChanges } from './schemaDiff';
import { widgetsV1, widgetsV2, widgetsDiff } from './fixtures';

describe('flattenCRD', () => {
  it('gives one row per property with its constraints, required and arrays as [*]', () => {
    const rows = flattenCRD(widgetsV1);
    expect(rows.map((r) => `${r.version} ${r.path}`)).toEqual([
      'v1 ',
      'v1 spec',
      'v1 spec.color',
      'v1 spec.items',
      'v1 spec.items[*]',
      'v1 spec.items[*].name',
      'v1 spec.replicas',
      'v1 spec.size',
    ]);
    const color = rows.find((r) => r.path === 'spec.color')!;
    expect(color.attrs).toEqual([
      ['type', 'string'],
      ['enum', '["red", "green", "blue"]'],
    ]);
    expect(rows.find((r) => r.path === 'spec.replicas')!.attrs).toEqual([
      ['type', 'integer'],
      ['maximum', '10'],
    ]);
    expect(rows.find((r) => r.path === 'spec.items[*].name')!.depth).toBe(4);
  });

  it('is empty for something that is not a CRD', () => {
    expect(flattenCRD(null)).toEqual([]);
    expect(flattenCRD({ spec: { versions: [{ name: 'v1' }] } })).toEqual([]);
  });
});

describe('diffSchemas', () => {
  const rows = diffSchemas(flattenCRD(widgetsV1), flattenCRD(widgetsV2), widgetsDiff.changes!);
  const at = (p: string) => rows.find((r) => r.path === p)!;

  it('lines the two sides up and marks what changed', () => {
    expect(rows.map((r) => `${r.path}:${r.status}`)).toEqual([
      ':same',
      'spec:same',
      'spec.color:changed',
      'spec.items:same',
      'spec.items[*]:same',
      'spec.items[*].name:same',
      'spec.mode:added',
      'spec.replicas:changed',
      'spec.size:removed',
    ]);
    expect(at('spec.color').changed).toEqual(['enum']);
    expect(at('spec.replicas').changed).toEqual(['maximum']);
    expect(at('spec.size').left?.attrs).toEqual([['type', 'string']]);
    expect(at('spec.size').right).toBeUndefined();
  });

  it('marks the rows the breaking changes name', () => {
    expect(rows.filter((r) => r.breaking).map((r) => r.path)).toEqual(['spec.color', 'spec.mode', 'spec.replicas', 'spec.size']);
    expect(at('spec.mode').changes[0]?.kind).toBe('requiredFieldAdded');
    expect(at('spec.color').breaking).toBe(true);
  });

  it('keeps the changes no row shows', () => {
    expect(unplacedChanges(rows, widgetsDiff.changes!).map((c) => c.kind)).toEqual(['scopeChanged']);
  });
});
