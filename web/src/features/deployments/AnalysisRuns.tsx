import { RelativeTime } from '../../components/RelativeTime';
import type { Deployment } from './model';

type Run = NonNullable<Deployment['analysisRuns']>[number];

/** The deployment's analyses: per analysis, cluster and stage, its phase, the measurements taken of its count, and each measurement's query, value and verdict. */
export function AnalysisRuns({ runs }: { runs: Run[] }) {
  return (
    <table className="data analysis-runs" data-testid="analysis-runs">
      <caption className="visually-hidden">Analysis runs</caption>
      <thead>
        <tr>
          <th scope="col">Analysis</th>
          <th scope="col">Cluster</th>
          <th scope="col">Stage</th>
          <th scope="col">Phase</th>
          <th scope="col">Measured</th>
          <th scope="col">Message</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={`${r.name}/${r.cluster}/${r.stage}`} data-testid="analysis-run" data-phase={r.phase} data-cluster={r.cluster}>
            <td>{r.name}</td>
            <td>{r.cluster}</td>
            <td>{r.stage}</td>
            <td className={`phase phase-${r.phase}`}>{r.phase}</td>
            <td>
              {(r.measurements ?? []).length}/{r.count}
            </td>
            <td>
              {r.message}
              <Measurements run={r} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Measurements({ run }: { run: Run }) {
  const ms = run.measurements ?? [];
  if (ms.length === 0) return null;
  return (
    <details className="measurements">
      {/* Every run has one: the name says whose, for a screen reader going from one to the next. */}
      <summary aria-label={`Measurements of ${run.name} on ${run.cluster}, stage ${run.stage}`}>Measurements</summary>
      <ol>
        {ms.map((m, i) => (
          <li key={i} data-testid="analysis-measurement" data-verdict={m.verdict}>
            <RelativeTime value={m.at} /> <strong>{m.verdict}</strong>
            {m.value !== undefined && <> value {m.value}</>}
            {m.baselineValue !== undefined && <> (baseline {m.baselineValue})</>}: {m.message}
            <pre className="mono">{m.query}</pre>
          </li>
        ))}
      </ol>
    </details>
  );
}
