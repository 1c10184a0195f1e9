// A CRD's schema as rows, one per property of each API version, and two of them side by side:
// the rows line up by version and path (the paths the manager's checker reports changes at:
// "spec.color", "spec.items[*].name"), each marked same, changed, added or removed, and
// breaking when a breaking change names it. Pure: the CRD page renders what this returns.

type Json = { [k: string]: unknown };

export interface SchemaRow {
  version: string;
  /** "" for the version's root schema. */
  path: string;
  depth: number;
  /** The property's constraints as words: type, required, enum, minimum … (no descriptions). */
  attrs: [string, string][];
}

export interface SchemaChange {
  path?: string;
  kind?: string;
  version?: string;
  breaking?: boolean;
  message?: string;
}

export type RowStatus = 'same' | 'changed' | 'added' | 'removed';

export interface DiffRow {
  version: string;
  path: string;
  depth: number;
  left?: SchemaRow;
  right?: SchemaRow;
  status: RowStatus;
  /** The attribute names whose value differs. */
  changed: string[];
  /** The changes the checker reported at this row. */
  changes: SchemaChange[];
  breaking: boolean;
}

const ATTRS = [
  'type', 'format', 'enum', 'default', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
  'multipleOf', 'minLength', 'maxLength', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties',
  'nullable', 'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-int-or-string', 'x-kubernetes-embedded-resource',
  'x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type', 'x-kubernetes-validations',
] as const;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function show(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((x) => typeof x !== 'object')) return `[${v.map((x) => JSON.stringify(x)).join(', ')}]`;
  return JSON.stringify(v);
}

function attrsOf(s: Json, required: boolean): [string, string][] {
  const out: [string, string][] = [];
  if (required) out.push(['required', 'yes']);
  for (const k of ATTRS) {
    const v = s[k];
    if (v === undefined || v === false) continue;
    if (k === 'x-kubernetes-validations' && Array.isArray(v)) {
      out.push([k, v.map((r) => (isObj(r) ? String(r.rule) : show(r))).join(' ; ')]);
    } else out.push([k, show(v)]);
  }
  return out;
}

function walk(s: Json, version: string, path: string, depth: number, required: boolean, out: SchemaRow[]) {
  out.push({ version, path, depth, attrs: attrsOf(s, required) });
  const req = new Set(Array.isArray(s.required) ? s.required.map(String) : []);
  if (isObj(s.properties)) {
    for (const name of Object.keys(s.properties).sort()) {
      const child = s.properties[name];
      if (isObj(child)) walk(child, version, path ? `${path}.${name}` : name, depth + 1, req.has(name), out);
    }
  }
  if (isObj(s.items)) walk(s.items, version, `${path}[*]`, depth + 1, false, out);
  if (isObj(s.additionalProperties)) walk(s.additionalProperties, version, `${path}[*]`, depth + 1, false, out);
}

/** The rows of a stored CustomResourceDefinition (spec.versions[].schema.openAPIV3Schema). */
export function flattenCRD(definition: unknown): SchemaRow[] {
  const out: SchemaRow[] = [];
  const spec = isObj(definition) && isObj(definition.spec) ? definition.spec : {};
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObj) : [];
  for (const v of versions) {
    const schema = isObj(v.schema) && isObj(v.schema.openAPIV3Schema) ? v.schema.openAPIV3Schema : undefined;
    if (schema) walk(schema, String(v.name ?? ''), '', 0, false, out);
  }
  return out;
}

const rowKey = (version: string, path: string) => `${version}\u0000${path}`;

/** Where a change points: its version ("v1", or the new side of "v1alpha1 -> v1") and path. */
function changeKey(c: SchemaChange): string {
  const v = (c.version ?? '').split(' -> ').pop() ?? '';
  return rowKey(v.trim(), c.path ?? '');
}

/**
 * Lines up two flattened schemas. Rows keep the newer schema's order, with rows only the older
 * one has placed after the row that preceded them there.
 */
export function diffSchemas(from: SchemaRow[], to: SchemaRow[], changes: SchemaChange[]): DiffRow[] {
  const left = new Map(from.map((r) => [rowKey(r.version, r.path), r]));
  const right = new Map(to.map((r) => [rowKey(r.version, r.path), r]));
  const byRow = new Map<string, SchemaChange[]>();
  for (const c of changes) {
    const k = changeKey(c);
    byRow.set(k, [...(byRow.get(k) ?? []), c]);
  }
  // Order: the new schema's rows; each removed row goes after its predecessor in the old one.
  const after = new Map<string, SchemaRow[]>();
  let prev = '';
  for (const r of from) {
    const k = rowKey(r.version, r.path);
    if (!right.has(k)) after.set(prev, [...(after.get(prev) ?? []), r]);
    else prev = k;
  }
  const ordered: string[] = [];
  const emit = (k: string) => {
    for (const r of after.get(k) ?? []) ordered.push(rowKey(r.version, r.path));
  };
  emit('');
  for (const r of to) {
    const k = rowKey(r.version, r.path);
    ordered.push(k);
    emit(k);
  }
  return ordered.map((k) => {
    const l = left.get(k);
    const r = right.get(k);
    const base = (r ?? l)!;
    const changed = l && r ? attrDiff(l.attrs, r.attrs) : [];
    const status: RowStatus = !l ? 'added' : !r ? 'removed' : changed.length ? 'changed' : 'same';
    const cs = byRow.get(k) ?? [];
    return { version: base.version, path: base.path, depth: base.depth, left: l, right: r, status, changed, changes: cs, breaking: cs.some((c) => c.breaking) };
  });
}

function attrDiff(a: [string, string][], b: [string, string][]): string[] {
  const am = new Map(a);
  const bm = new Map(b);
  const names = new Set([...am.keys(), ...bm.keys()]);
  return [...names].filter((n) => am.get(n) !== bm.get(n));
}

/** The checker's changes no row shows (whole-CRD changes: scope, versions, stored versions). */
export function unplacedChanges(rows: DiffRow[], changes: SchemaChange[]): SchemaChange[] {
  const placed = new Set(rows.map((r) => rowKey(r.version, r.path)));
  return changes.filter((c) => !placed.has(changeKey(c)));
}
