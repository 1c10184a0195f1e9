// The fleet grid's model, pure: operators (rows) × clusters (columns, grouped by environment),
// filtered as the URL says, with each cell looked up by operator and cluster.
import type { Fleet, FleetCell, FleetCluster, FleetOperator } from '../../api/types';

export const HEALTHS = ['Healthy', 'Degraded', 'Unhealthy', 'Unknown'] as const;
export const ENVIRONMENTS = ['Dev', 'Staging', 'Production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export interface FleetFilters {
  environment: string;
  /** A part of the operator's name (any case). */
  operator: string;
  /** Only what has this health: clusters with it or a cell with it, operators with such a cell. */
  health: string;
  /** "behind": only cells behind the latest version (and their rows and columns). */
  drift: string;
}

export interface EnvGroup {
  environment: string;
  /** The first column of the group and how many columns it spans. */
  start: number;
  count: number;
}

/** n and the word, in the singular for one: "1 cluster", "4 clusters". */
export function counted(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * An environment group's header: short enough for a group of one column ("Staging · 1") and
 * the whole ("Staging · 1 cluster") for its title and accessible name.
 */
export function groupLabel(g: EnvGroup): { short: string; full: string } {
  const env = g.environment || 'no environment';
  return { short: `${env} · ${g.count}`, full: `${env} · ${counted(g.count, 'cluster')}` };
}

export interface FleetModel {
  rows: FleetOperator[];
  cols: FleetCluster[];
  groups: EnvGroup[];
  cell: (row: number, col: number) => FleetCell | undefined;
  /** Counts over what is shown. */
  cells: number;
  bad: number;
  behind: number;
}

const key = (op: string | undefined, cluster: string | undefined) => `${op ?? ''}\u0000${cluster ?? ''}`;

function cellMatches(c: FleetCell, f: FleetFilters): boolean {
  if (f.health && (c.health ?? 'Unknown') !== f.health) return false;
  if (f.drift === 'behind' && c.drift !== 'behind') return false;
  return true;
}

export function buildFleet(fleet: Fleet | undefined, f: FleetFilters): FleetModel {
  const byKey = new Map<string, FleetCell>();
  for (const c of fleet?.cells ?? []) byKey.set(key(c.operator, c.cluster), c);

  const needle = f.operator.trim().toLowerCase();
  let rows = (fleet?.operators ?? []).filter((o) => !needle || (o.name ?? '').toLowerCase().includes(needle));
  let cols = (fleet?.clusters ?? []).filter((c) => !f.environment || c.environment === f.environment);

  if (f.health || f.drift) {
    const matching = (fleet?.cells ?? []).filter((c) => cellMatches(c, f));
    const rowNames = new Set(rows.map((o) => o.name));
    const colNames = new Set(cols.map((c) => c.name));
    const hitRows = new Set<string | undefined>();
    const hitCols = new Set<string | undefined>();
    for (const c of matching) {
      if (!rowNames.has(c.operator) || !colNames.has(c.cluster)) continue;
      hitRows.add(c.operator);
      hitCols.add(c.cluster);
    }
    // A cluster whose own health matches shows even where no operator's cell does.
    const clusterHit = (c: FleetCluster) => hitCols.has(c.name) || (!!f.health && !f.drift && (c.health || 'Unknown') === f.health);
    cols = cols.filter(clusterHit);
    rows = hitRows.size > 0 ? rows.filter((o) => hitRows.has(o.name)) : cols.length > 0 ? rows : [];
  }

  // Clusters come ordered by environment then name; keep the server's order, group runs.
  const groups: EnvGroup[] = [];
  cols.forEach((c, i) => {
    const env = c.environment ?? '';
    const last = groups[groups.length - 1];
    if (last && last.environment === env) last.count++;
    else groups.push({ environment: env, start: i, count: 1 });
  });

  let cells = 0;
  let bad = 0;
  let behind = 0;
  const colNames = new Set(cols.map((c) => c.name));
  const rowNames = new Set(rows.map((o) => o.name));
  for (const c of fleet?.cells ?? []) {
    if (!rowNames.has(c.operator) || !colNames.has(c.cluster)) continue;
    cells++;
    if (c.health === 'Unhealthy' || c.health === 'Degraded') bad++;
    if (c.drift === 'behind') behind++;
  }

  return {
    rows,
    cols,
    groups,
    cell: (r, c) => byKey.get(key(rows[r]?.name, cols[c]?.name)),
    cells,
    bad,
    behind,
  };
}

/**
 * The words a screen reader says for a cell (and its title): where it is, then what the cell shows
 * in the order it shows it (version, health, an alert, the newer latest), so its visible text is a run of
 * the name's words (WCAG 2.5.3, label in name: speech input users say what they see), then why it
 * is not healthy.
 */
export function cellLabel(op: string | undefined, cluster: string | undefined, c: FleetCell | undefined): string {
  if (!c) return `${op} is not installed on ${cluster}`;
  const parts = [`${op} on ${cluster}: ${c.version || '?'}`, c.health || 'Unknown'];
  if (isAlert(c)) parts.push(`alert, no automatic rollback: ${c.alertReason ?? ''}`.replace(/: $/, ''));
  parts.push(c.drift === 'behind' ? `${c.latestVersion ?? ''} is the latest`.trim() : 'current');
  if (c.healthReason) parts.push(c.healthReason);
  return parts.join(', ');
}

/**
 * An Unhealthy operator whose failed checks alert and no longer roll its deployment back (past the
 * bake window, or what a rollback restored): the cell says so.
 */
export function isAlert(c: FleetCell): boolean {
  return c.health === 'Unhealthy' && c.onUnhealthy === 'alert';
}
