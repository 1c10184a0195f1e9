import { useId, useMemo } from 'react';
import { ErrorNotice, Loading } from '../../components/States';
import { StatusBadge } from '../../components/HealthBadge';
import { useDiff, useRevision, type Pair } from './hooks';
import { Note, type Revision } from './Note';
import { diffSchemas, flattenCRD, unplacedChanges, type DiffRow, type SchemaRow } from './schemaDiff';

interface Props {
  name: string;
  pair: Pair;
  notes: Revision[];
  allRows: boolean;
  onAllRows: (all: boolean) => void;
}

/** The checker's changes (breaking first), migration notes, and the two schemas side by side. */
export function SchemaDiff({ name, pair, notes, allRows, onAllRows }: Props) {
  const diff = useDiff(name, pair);
  const left = useRevision(name, pair.from, pair.operator);
  const right = useRevision(name, pair.to, pair.operator);
  const rows = useMemo(
    () => (left.data && right.data && diff.data ? diffSchemas(flattenCRD(left.data.definition), flattenCRD(right.data.definition), diff.data.changes ?? []) : []),
    [left.data, right.data, diff.data],
  );
  const toggle = useId();
  const error = diff.error ?? left.error ?? right.error;
  if (error) return <ErrorNotice error={error} what="the comparison" />;
  if (!diff.data || !left.data || !right.data) return <Loading what="the comparison" />;
  const changes = diff.data.changes ?? [];
  const breaking = changes.filter((c) => c.breaking);
  const other = changes.filter((c) => !c.breaking);
  const shown = allRows ? rows : rows.filter((r) => r.status !== 'same' || r.changes.length > 0);
  return (
    <section aria-labelledby="diff-title" className="crd-diff" data-testid="crd-diff">
      <h2 id="diff-title">
        {pair.from} → {pair.to}{' '}
        {diff.data.identical ? (
          <StatusBadge tone="ok" testId="crd-diff-verdict">
            ✓ the same revision
          </StatusBadge>
        ) : diff.data.breaking ? (
          <StatusBadge tone="bad" testId="crd-diff-verdict">
            ✗ breaking: {breaking.length} {breaking.length === 1 ? 'change' : 'changes'}
          </StatusBadge>
        ) : (
          <StatusBadge tone="ok" testId="crd-diff-verdict">
            ✓ compatible
          </StatusBadge>
        )}
      </h2>
      {notes.length > 0 && (
        <div className="card" data-testid="crd-migration-notes">
          <h3>Migration notes</h3>
          <ul className="note-list">
            {notes.map((r) => (
              <li key={`${r.operator}/${r.version}`} className="note-item">
                <span>
                  <strong className="mono">{r.version}</strong>:
                </span>{' '}
                <Note note={r.migrationNote} />
              </li>
            ))}
          </ul>
        </div>
      )}
      {changes.length > 0 && (
        <ul className="crd-changes" data-testid="crd-changes">
          {[...breaking, ...other].map((c, i) => (
            <li key={i} className={c.breaking ? 'breaking' : undefined} data-breaking={c.breaking ? 'true' : 'false'}>
              {c.breaking ? <StatusBadge tone="bad">✗ breaking</StatusBadge> : <StatusBadge tone="unknown">compatible</StatusBadge>}{' '}
              {c.version && <span className="mono">{c.version} </span>}
              {c.message}
            </li>
          ))}
        </ul>
      )}
      {!diff.data.identical && (
        <>
          <div className="toolbar">
            <label htmlFor={toggle} className="inline">
              <input id={toggle} type="checkbox" checked={allRows} onChange={(e) => onAllRows(e.target.checked)} data-testid="crd-all-rows" /> Show unchanged fields too
            </label>
          </div>
          <SideBySide rows={shown} from={pair.from} to={pair.to} />
          {unplacedChanges(rows, changes).length > 0 && (
            <p className="muted small">Changes to the whole CRD (scope, versions) are listed above; they have no row of their own.</p>
          )}
        </>
      )}
    </section>
  );
}

const STATUS_WORD: Record<DiffRow['status'], string> = { same: '', changed: 'changed', added: 'added', removed: 'removed' };

function SideBySide({ rows, from, to }: { rows: DiffRow[]; from: string; to: string }) {
  if (rows.length === 0) return <p className="notice">The schemas have no field-level differences.</p>;
  return (
    <table className="data schema-diff" data-testid="crd-schema-diff" aria-label={`Schema of ${from} beside ${to}`}>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">{from}</th>
          <th scope="col">{to}</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr
            key={`${r.version}/${r.path}`}
            className={`row-${r.status}${r.breaking ? ' row-breaking' : ''}`}
            data-testid="crd-diff-row"
            data-path={r.path}
            data-status={r.status}
            data-breaking={r.breaking ? 'true' : 'false'}
          >
            <th scope="row" className="mono">
              <span className="schema-path">
                {r.version} {r.path || '(root)'}
              </span>
              {r.status !== 'same' && <span className="schema-status"> {STATUS_WORD[r.status]}</span>}
              {r.breaking && (
                <span className="schema-breaking" title={r.changes.map((c) => c.message).join('\n')}>
                  {' '}
                  ✗ breaking
                </span>
              )}
            </th>
            <td className="mono">
              <Attrs row={r.left} changed={r.changed} />
            </td>
            <td className="mono">
              <Attrs row={r.right} changed={r.changed} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Attrs({ row, changed }: { row: SchemaRow | undefined; changed: string[] }) {
  if (!row) return <span className="muted">(absent)</span>;
  if (row.attrs.length === 0) return <span className="muted">(any)</span>;
  return (
    <ul className="attrs">
      {row.attrs.map(([k, v]) => (
        <li key={k} className={changed.includes(k) ? 'attr-changed' : undefined}>
          {k === 'type' ? v : `${k}: ${v}`}
        </li>
      ))}
    </ul>
  );
}
