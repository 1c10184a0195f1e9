import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ErrorNotice, Loading } from '../../components/States';
import { api, unwrap } from '../../lib/api';
import { useDiff } from '../crds/hooks';
import { Note } from '../crds/Note';
import { useDeploymentEvents } from '../deployments/hooks';
import { changeText, type Deployment } from '../deployments/model';
import { breakingCrds, crdEvents, type MigrationNote } from './model';

/**
 * What a deployment does to CRDs, inline in an approval: planning's findings (its crd.* events),
 * for each CRD it breaks the breaking changes from the version each cluster runs (with a link to
 * the side-by-side schema diff), and the migration notes of the revisions it moves to.
 */
export function CrdReport({ d, notes }: { d: Deployment; notes: MigrationNote[] }) {
  const eq = useDeploymentEvents(d.id ?? '');
  const found = crdEvents(eq.data ?? []);
  const names = breakingCrds(found, notes);
  const from = useInstalledVersions(d, names.length > 0);
  if (eq.error) return <ErrorNotice error={eq.error} what="the deployment's CRD findings" />;
  if (eq.isLoading) return <Loading what="the CRD report" />;
  if (found.length === 0 && names.length === 0 && notes.length === 0) {
    return (
      <p className="muted small" data-testid="crd-report">
        CRDs: planning found no breaking change.
      </p>
    );
  }
  return (
    <div className="crd-report" data-testid="crd-report">
      <h4>CRD report</h4>
      {found.length > 0 && (
        <ul className="crd-findings">
          {found.map((e) => (
            <li key={e.id} data-testid="crd-finding" data-type={e.type}>
              <span className="mono small">{e.type}</span> {e.message}
            </li>
          ))}
        </ul>
      )}
      {names.map((name) => (
        <div key={name} className="crd-breaking" data-testid="crd-breaking" data-crd={name}>
          <strong className="mono">{name}</strong>
          {from.isLoading ? (
            <Loading what="the versions the clusters run" />
          ) : from.data && from.data.length > 0 ? (
            from.data.map((v) => <DiffSummary key={v} name={name} from={v} to={d.version ?? ''} operator={d.operator ?? ''} />)
          ) : (
            <p className="muted small">No cluster runs an earlier version: the CRD is new there.</p>
          )}
        </div>
      ))}
      {notes.length > 0 && (
        <>
          <h4>Migration notes</h4>
          <ul data-testid="migration-notes" className="note-list">
            {notes.map((n, i) => (
              <li key={`${n.crd}-${n.version}-${i}`} data-testid="migration-note" className="note-item">
                <span>
                  <span className="mono">{n.crd}</span> {n.version}:
                </span>{' '}
                <Note note={n.note} />
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

/** The versions of d's operator its clusters run now, other than d's (from the fleet). */
function useInstalledVersions(d: Deployment, enabled: boolean) {
  const clusters = new Set((d.clusters ?? []).map((c) => c.name));
  return useQuery({
    queryKey: ['fleet', ''],
    queryFn: () => unwrap(api.GET('/api/v1/fleet', { params: { query: {} } })),
    enabled,
    select: (fleet) => [
      ...new Set(
        (fleet.cells ?? [])
          .filter((c) => c.operator === d.operator && clusters.has(c.cluster) && c.version && c.version !== d.version)
          .map((c) => c.version as string),
      ),
    ].sort(),
  });
}

function DiffSummary({ name, from, to, operator }: { name: string; from: string; to: string; operator: string }) {
  const q = useDiff(name, { from, to, operator });
  const link = `/crds/${encodeURIComponent(name)}?${new URLSearchParams({ from, to, operator }).toString()}`;
  const breaking = (q.data?.changes ?? []).filter((c) => c.breaking);
  return (
    <div className="small" data-testid="crd-diff" data-from={from} data-to={to}>
      <Link to={link}>
        {from} → {to}: side-by-side schema diff
      </Link>
      {q.error ? (
        <ErrorNotice error={q.error} />
      ) : q.isLoading ? (
        <span className="muted"> (reading the changes…)</span>
      ) : breaking.length === 0 ? (
        <span className="muted"> (no breaking change between these versions)</span>
      ) : (
        <ul className="crd-changes">
          {breaking.map((c, i) => (
            <li key={i} className="breaking" data-testid="crd-breaking-change">
              <span className="mono">{changeText(c).where}</span>: {changeText(c).what}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
