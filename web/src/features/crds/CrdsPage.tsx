import { useId } from 'react';
import { Link } from 'react-router';
import { RelativeTime } from '../../components/RelativeTime';
import { ErrorNotice, Loading } from '../../components/States';
import { useFilters } from '../../lib/useFilters';
import { useCrds } from './hooks';
import { Note } from './Note';

const KEYS = ['group', 'name'] as const;

/** /crds?group=&name=: every CRD the operators ship, with its latest revision. */
export function CrdsPage() {
  const [f, setF] = useFilters(KEYS);
  const q = useCrds(f.group);
  const ids = { group: useId(), name: useId() };
  const needle = f.name.trim().toLowerCase();
  const rows = (q.data ?? []).filter((c) => !needle || (c.name ?? '').toLowerCase().includes(needle));
  return (
    <section aria-labelledby="crds-title">
      <h1 id="crds-title">CRDs</h1>
      <form className="filters" role="search" aria-label="Filter CRDs" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor={ids.group}>
          Group
          <input id={ids.group} type="search" value={f.group} onChange={(e) => setF({ group: e.target.value })} placeholder="example.com" />
        </label>
        <label htmlFor={ids.name}>
          Name
          <input id={ids.name} type="search" value={f.name} onChange={(e) => setF({ name: e.target.value })} placeholder="contains…" />
        </label>
      </form>
      {q.error ? (
        <ErrorNotice error={q.error} what="the CRDs" />
      ) : q.isLoading ? (
        <Loading what="the CRDs" />
      ) : rows.length === 0 ? (
        <p className="notice">{f.group || f.name ? 'No CRD matches these filters.' : 'No CRD is known yet: register an operator whose chart ships CRDs.'}</p>
      ) : (
        <table className="data" data-testid="crds-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Kind</th>
              <th scope="col">Revisions</th>
              <th scope="col">Latest revision</th>
              <th scope="col">Migration note</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((c) => (
              <tr key={c.name} data-testid="crd-row" data-crd={c.name}>
                <th scope="row">
                  <Link to={`/crds/${encodeURIComponent(c.name ?? '')}`}>{c.name}</Link>
                </th>
                <td>{c.kind}</td>
                <td>{c.revisions ?? 0}</td>
                <td>
                  <span className="mono">{c.latest?.version ?? '—'}</span>
                  {c.latest?.operator && <span className="muted"> of {c.latest.operator}</span>} <RelativeTime value={c.latest?.createdAt} />
                </td>
                <td>
                  <Note note={c.latest?.migrationNote} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
