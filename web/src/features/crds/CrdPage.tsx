import { useId, useMemo } from 'react';
import { Link, useParams } from 'react-router';
import type { GetResult } from '../../api/types';
import { HealthBadge, StatusBadge } from '../../components/HealthBadge';
import { RelativeTime } from '../../components/RelativeTime';
import { ErrorNotice, Loading } from '../../components/States';
import { useFilters } from '../../lib/useFilters';
import { SchemaDiff } from './SchemaDiff';
import { useCrd, type Pair } from './hooks';
import { Note, type Revision } from './Note';
import './crds.css';

type Crd = GetResult<'/api/v1/crds/{name}'>;

const KEYS = ['from', 'to', 'operator', 'rows'] as const;

/** Oldest first; the order the migration notes apply in. */
export function byAge(revs: Revision[]): Revision[] {
  return [...revs].sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? ''));
}

/** The pair to compare: the URL's, else the newest revision against the one before it. */
export function pairOf(revs: Revision[], f: { from: string; to: string; operator: string }): Pair {
  if (f.from && f.to) return { from: f.from, to: f.to, operator: f.operator };
  const old = byAge(revs);
  if (old.length < 2) return { from: '', to: '', operator: '' };
  const a = old[old.length - 2]!;
  const b = old[old.length - 1]!;
  return { from: a.version ?? '', to: b.version ?? '', operator: a.operator && a.operator === b.operator ? a.operator : '' };
}

/** /crds/:name?from=&to=&operator=&rows=all: history, a side-by-side schema diff, per-cluster status. */
export function CrdPage() {
  const name = useParams().name ?? '';
  const q = useCrd(name);
  if (q.error) return <ErrorNotice error={q.error} what={`CRD ${name}`} />;
  if (q.isLoading || !q.data) return <Loading what={`CRD ${name}`} />;
  return <CrdView crd={q.data} />;
}

function CrdView({ crd }: { crd: Crd }) {
  const [f, setF] = useFilters(KEYS);
  const revs = useMemo(() => byAge(crd.revisions ?? []), [crd.revisions]);
  const pair = pairOf(revs, f);
  const choose = (side: 'from' | 'to', version: string) => {
    const next = { ...pair, [side]: version };
    const a = revs.find((r) => r.version === next.from);
    const b = revs.find((r) => r.version === next.to);
    setF({ from: next.from, to: next.to, operator: a?.operator && a.operator === b?.operator ? a.operator : '' }, true);
  };
  return (
    <section aria-labelledby="crd-title">
      <h1 id="crd-title">CRD {crd.name}</h1>
      <dl className="facts">
        <dt>Group</dt>
        <dd>{crd.group}</dd>
        <dt>Kind</dt>
        <dd>{crd.kind}</dd>
        <dt>Scope</dt>
        <dd>{crd.scope}</dd>
      </dl>
      <History revs={revs} pair={pair} />
      {revs.length >= 2 && <Compare revs={revs} pair={pair} onChoose={choose} />}
      {pair.from && pair.to && (
        <SchemaDiff name={crd.name ?? ''} pair={pair} notes={notesBetween(revs, pair)} allRows={f.rows === 'all'} onAllRows={(all) => setF({ rows: all ? 'all' : '' })} />
      )}
      <Clusters crd={crd} />
    </section>
  );
}

/** The migration notes of the revisions after from up to to, oldest first. */
export function notesBetween(revs: Revision[], p: Pair): Revision[] {
  const i = revs.findIndex((r) => r.version === p.from || r.versions?.includes(p.from));
  const j = revs.findIndex((r) => r.version === p.to || r.versions?.includes(p.to));
  if (j < 0) return [];
  const lo = Math.min(i, j);
  const hi = Math.max(i, j);
  return revs.slice(lo + 1, hi + 1).filter((r) => r.migrationNote?.text || r.migrationNote?.url);
}

/** The deep link comparing two revisions. */
function compareHref(a: Revision, b: Revision): string {
  const q = new URLSearchParams({ from: a.version ?? '', to: b.version ?? '' });
  if (a.operator && a.operator === b.operator) q.set('operator', a.operator);
  return `?${q}`;
}

function History({ revs, pair }: { revs: Revision[]; pair: Pair }) {
  const newest = [...revs].reverse();
  return (
    <>
      <h2>Revision history</h2>
      <table className="data crd-revisions" data-testid="crd-revisions">
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">Shipped by</th>
            <th scope="col">Digest</th>
            <th scope="col">Recorded</th>
            <th scope="col">Migration note</th>
            <th scope="col">Compare</th>
          </tr>
        </thead>
        <tbody>
          {newest.map((r, i) => {
            const prev = newest[i + 1];
            const current = r.version === pair.to;
            return (
              <tr key={`${r.operator}/${r.version}/${r.digest}`} data-testid="crd-revision" data-version={r.version} aria-current={current ? 'true' : undefined}>
                <th scope="row" className="mono">
                  {r.version}
                  {r.dropped && <StatusBadge tone="warn"> dropped</StatusBadge>}
                </th>
                <td>
                  {r.operator ? <Link to={`/operators/${encodeURIComponent(r.operator)}`}>{r.operator}</Link> : <span className="muted">posted</span>}
                  {r.versions && r.versions.length > 1 && <div className="muted small">versions {r.versions.join(', ')}</div>}
                </td>
                <td className="mono" title={r.digest}>
                  {(r.digest ?? '').replace(/^sha256:/, '').slice(0, 12)}
                </td>
                <td>
                  <RelativeTime value={r.createdAt} />
                </td>
                <td className="crd-note">
                  <Note note={r.migrationNote} />
                </td>
                <td>
                  {prev && (
                    <Link to={compareHref(prev, r)} data-testid="crd-compare-previous">
                      {prev.version} → {r.version}
                    </Link>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

function Compare({ revs, pair, onChoose }: { revs: Revision[]; pair: Pair; onChoose: (side: 'from' | 'to', v: string) => void }) {
  const ids = { from: useId(), to: useId() };
  const options = [...revs].reverse().map((r) => (
    <option key={`${r.operator}/${r.version}`} value={r.version}>
      {r.version}
      {r.operator ? ` (${r.operator})` : ''}
    </option>
  ));
  return (
    <form className="filters" aria-label="Choose the revisions to compare" onSubmit={(e) => e.preventDefault()}>
      <label htmlFor={ids.from}>
        Compare from
        <select id={ids.from} value={pair.from} onChange={(e) => onChoose('from', e.target.value)} data-testid="crd-from">
          {options}
        </select>
      </label>
      <label htmlFor={ids.to}>
        to
        <select id={ids.to} value={pair.to} onChange={(e) => onChoose('to', e.target.value)} data-testid="crd-to">
          {options}
        </select>
      </label>
    </form>
  );
}

function Clusters({ crd }: { crd: Crd }) {
  const rows = crd.clusters ?? [];
  return (
    <>
      <h2>On each cluster</h2>
      {rows.length === 0 ? (
        <p className="notice">No cluster is registered.</p>
      ) : (
        <table className="data" data-testid="crd-clusters">
          <thead>
            <tr>
              <th scope="col">Cluster</th>
              <th scope="col">Installed revision</th>
              <th scope="col">Matches the deployed operator</th>
              <th scope="col">Storage version</th>
              <th scope="col">Stored versions</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((c) => (
              <tr key={c.cluster} data-testid="crd-cluster" data-cluster={c.cluster}>
                <th scope="row">
                  <Link to={`/clusters/${encodeURIComponent(c.cluster ?? '')}`}>{c.cluster}</Link> <span className="muted">{c.environment}</span>
                </th>
                {c.error ? (
                  <td colSpan={4}>
                    <HealthBadge health="Unknown" /> could not be read: {c.error}
                  </td>
                ) : !c.installed ? (
                  <td colSpan={4} className="muted">
                    not installed
                  </td>
                ) : (
                  <>
                    <td className="mono">{c.revision?.version ?? 'unknown revision'}</td>
                    <td>
                      {c.deployed ? (
                        c.matchesDeployed ? (
                          <StatusBadge tone="ok">✓ yes ({c.deployed.operator} {c.deployed.version})</StatusBadge>
                        ) : (
                          <StatusBadge tone="warn">! differs from {c.deployed.operator} {c.deployed.version}</StatusBadge>
                        )
                      ) : (
                        <span className="muted">no deployment recorded</span>
                      )}
                    </td>
                    <td className="mono">{c.storageVersion}</td>
                    <td className="mono">{(c.storedVersions ?? []).join(', ')}</td>
                  </>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
