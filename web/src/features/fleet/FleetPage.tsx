import { useId, useMemo } from 'react';
import { Link } from 'react-router';
import { ErrorNotice, Loading } from '../../components/States';
import { useFilters } from '../../lib/useFilters';
import { FleetGrid } from './FleetGrid';
import { ENVIRONMENTS, HEALTHS, buildFleet, counted } from './model';
import { isEnvironment, useFleet } from './useFleet';

const KEYS = ['environment', 'operator', 'health', 'drift'] as const;

/** / and /fleet?environment=&operator=&health=&drift=: every operator on every cluster. */
export function FleetPage() {
  const [f, setF] = useFilters(KEYS);
  const badEnv = f.environment !== '' && !isEnvironment(f.environment);
  const q = useFleet(isEnvironment(f.environment) ? f.environment : '');
  const model = useMemo(() => buildFleet(q.data, f), [q.data, f]);
  const ids = { env: useId(), op: useId(), health: useId(), drift: useId() };
  const filtered = f.environment || f.operator || f.health || f.drift;

  return (
    <section aria-labelledby="fleet-title">
      <h1 id="fleet-title">Fleet</h1>
      <form className="filters" role="search" aria-label="Filter the fleet" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor={ids.env}>
          Environment
          <select id={ids.env} value={f.environment} onChange={(e) => setF({ environment: e.target.value })} data-testid="filter-environment">
            <option value="">All</option>
            {ENVIRONMENTS.map((e) => (
              <option key={e}>{e}</option>
            ))}
          </select>
        </label>
        <label htmlFor={ids.op}>
          Operator
          <input id={ids.op} type="search" value={f.operator} placeholder="name contains…" onChange={(e) => setF({ operator: e.target.value })} data-testid="filter-operator" />
        </label>
        <label htmlFor={ids.health}>
          Health
          <select id={ids.health} value={f.health} onChange={(e) => setF({ health: e.target.value })} data-testid="filter-health">
            <option value="">Any</option>
            {HEALTHS.map((h) => (
              <option key={h}>{h}</option>
            ))}
          </select>
        </label>
        <label htmlFor={ids.drift}>
          Version
          <select id={ids.drift} value={f.drift} onChange={(e) => setF({ drift: e.target.value })} data-testid="filter-drift">
            <option value="">Any</option>
            <option value="behind">Behind the latest</option>
          </select>
        </label>
        {filtered && (
          <Link to="/fleet" className="button">
            Clear filters
          </Link>
        )}
      </form>
      {badEnv ? (
        <p className="notice error" role="alert" data-testid="error">
          Unknown environment “{f.environment}”: choose Dev, Staging or Production.
        </p>
      ) : q.error ? (
        <ErrorNotice error={q.error} what="the fleet" />
      ) : q.isLoading ? (
        <Loading what="the fleet" />
      ) : (
        <>
          <p className="fleet-summary" data-testid="fleet-summary" aria-live="polite">
            <span>
              {counted(model.rows.length, 'operator')} × {counted(model.cols.length, 'cluster')}, {model.cells} installed
            </span>
            <Link to={`?${new URLSearchParams({ ...clean(f), health: 'Unhealthy' })}`}>{model.bad} degraded or unhealthy</Link>
            <Link to={`?${new URLSearchParams({ ...clean(f), drift: 'behind' })}`}>{model.behind} behind the latest</Link>
          </p>
          {model.rows.length === 0 || model.cols.length === 0 ? (
            <p className="notice" data-testid="fleet-empty">
              {filtered ? 'Nothing in the fleet matches these filters.' : 'No operator runs on any cluster yet: register clusters and operators, then deploy.'}
            </p>
          ) : (
            <FleetGrid model={model} label={`Fleet: ${counted(model.rows.length, 'operator')} by ${counted(model.cols.length, 'cluster')}`} />
          )}
        </>
      )}
    </section>
  );
}

function clean(f: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v !== ''));
}
