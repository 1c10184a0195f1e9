import { useId } from 'react';
import { Link } from 'react-router';
import { RelativeTime } from '../../components/RelativeTime';
import { ErrorNotice, Loading } from '../../components/States';
import { useFilters } from '../../lib/useFilters';
import { useOperators } from './hooks';

const KEYS = ['name', 'namespace'] as const;

/** /operators?name=&namespace=: every registered operator with its chart and versions. */
export function OperatorsPage() {
  const [f, setF] = useFilters(KEYS);
  const q = useOperators();
  const ids = { name: useId(), ns: useId() };
  const needle = f.name.trim().toLowerCase();
  const rows = (q.data ?? []).filter(
    (o) => (!needle || (o.name ?? '').toLowerCase().includes(needle)) && (!f.namespace || o.namespace === f.namespace),
  );
  return (
    <section aria-labelledby="operators-title">
      <h1 id="operators-title">Operators</h1>
      <form className="filters" role="search" aria-label="Filter operators" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor={ids.name}>
          Name
          <input id={ids.name} type="search" value={f.name} onChange={(e) => setF({ name: e.target.value })} placeholder="contains…" />
        </label>
        <label htmlFor={ids.ns}>
          Namespace
          <input id={ids.ns} type="search" value={f.namespace} onChange={(e) => setF({ namespace: e.target.value })} />
        </label>
      </form>
      {q.error ? (
        <ErrorNotice error={q.error} what="the operators" />
      ) : q.isLoading ? (
        <Loading what="the operators" />
      ) : rows.length === 0 ? (
        <p className="notice">{q.data?.length ? 'No operator matches these filters.' : 'No operator is registered yet.'}</p>
      ) : (
        <table className="data" data-testid="operators-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Namespace</th>
              <th scope="col">Chart</th>
              <th scope="col">Latest version</th>
              <th scope="col">Versions</th>
              <th scope="col">Source read</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((o) => (
              <tr key={o.id ?? o.name} data-testid="operator-row">
                <th scope="row">
                  <Link to={`/operators/${encodeURIComponent(o.name ?? '')}`}>{o.name}</Link>
                </th>
                <td>{o.namespace}</td>
                <td className="mono">
                  {o.chart?.repository} {o.chart?.name}
                </td>
                <td className="mono">{o.versions?.[0] ?? '—'}</td>
                <td>
                  {o.versions?.length ?? 0}
                  {o.removedVersions?.length ? <span className="muted"> ({o.removedVersions.length} removed)</span> : null}
                </td>
                <td>
                  {o.refresh?.error ? (
                    <span className="status status-bad" title={o.refresh.error}>
                      <span aria-hidden="true">✗</span> failing
                    </span>
                  ) : (
                    <RelativeTime value={o.refresh?.checkedAt} />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
