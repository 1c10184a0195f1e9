// The fleet as an ARIA grid: operators (rows) × clusters (columns, grouped by environment),
// virtualised both ways with @tanstack/react-virtual, so only the cells in view (plus a small
// overscan) are in the DOM however big the fleet. Arrow keys, Home/End and PageUp/PageDown move
// between cells (one tab stop: roving tabindex); Enter follows a cell's link.
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { Link } from 'react-router';
import type { FleetCell, FleetCluster } from '../../api/types';
import { healthTone } from '../../components/HealthBadge';
import { cellLabel, groupLabel, isAlert, type FleetModel } from './model';
import './fleet.css';

export const ROW_H = 56;
export const COL_W = 136;
export const ROWHEAD_W = 220;
export const GROUP_H = 28;
export const COLHEAD_H = 52;
const HEAD_H = GROUP_H + COLHEAD_H;

const SYMBOL: Record<string, string> = { ok: '✓', warn: '!', bad: '✗', unknown: '?' };

/**
 * The scroll offset that shows an item at [start, start+len) in a viewport of size whose first
 * pad pixels are covered by sticky headers: unchanged when it is in view already.
 */
export function reveal(scroll: number, size: number, pad: number, start: number, len: number): number {
  if (start < scroll + pad) return Math.max(0, start - pad);
  if (start + len > scroll + size) return start + len - size;
  return scroll;
}

interface Pos {
  r: number;
  /** -1: the operator's row header. */
  c: number;
}

export function FleetGrid({ model, label }: { model: FleetModel; label: string }) {
  const scroller = useRef<HTMLDivElement>(null);
  const rows = model.rows.length;
  const cols = model.cols.length;
  const rowV = useVirtualizer({
    count: rows,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_H,
    paddingStart: HEAD_H,
    scrollPaddingStart: HEAD_H,
    overscan: 3,
    useFlushSync: false,
  });
  const colV = useVirtualizer({
    horizontal: true,
    count: cols,
    getScrollElement: () => scroller.current,
    estimateSize: () => COL_W,
    paddingStart: ROWHEAD_W,
    scrollPaddingStart: ROWHEAD_W,
    overscan: 2,
    useFlushSync: false,
  });
  const [active, setActive] = useState<Pos>({ r: 0, c: -1 });
  const [focusWanted, setFocusWanted] = useState(false);
  const pos = { r: Math.min(active.r, Math.max(rows - 1, 0)), c: Math.min(active.c, cols - 1) };

  const vRows = rowV.getVirtualItems();
  const vCols = colV.getVirtualItems();
  const rendered = (p: Pos) =>
    vRows.some((v) => v.index === p.r) && (p.c < 0 || vCols.some((v) => v.index === p.c));

  // After a key moved the active cell (and scrolled it into view), focus it once it renders.
  useEffect(() => {
    if (!focusWanted) return;
    const el = scroller.current?.querySelector<HTMLElement>(`[data-pos="${pos.r}:${pos.c}"]`);
    if (el) {
      el.focus({ preventScroll: true });
      setFocusWanted(false);
    }
  });

  function move(p: Pos) {
    const next = { r: Math.max(0, Math.min(rows - 1, p.r)), c: Math.max(-1, Math.min(cols - 1, p.c)) };
    setActive(next);
    const el = scroller.current;
    if (el) {
      const top = reveal(el.scrollTop, el.clientHeight, HEAD_H, HEAD_H + next.r * ROW_H, ROW_H);
      const left = next.c < 0 ? 0 : reveal(el.scrollLeft, el.clientWidth, ROWHEAD_W, ROWHEAD_W + next.c * COL_W, COL_W);
      if (top !== el.scrollTop || left !== el.scrollLeft) el.scrollTo({ top, left });
    }
    setFocusWanted(true);
  }

  function onKeyDown(e: KeyboardEvent) {
    const page = Math.max(1, Math.floor(((scroller.current?.clientHeight ?? 600) - HEAD_H) / ROW_H));
    const map: Record<string, () => Pos> = {
      ArrowUp: () => ({ r: pos.r - 1, c: pos.c }),
      ArrowDown: () => ({ r: pos.r + 1, c: pos.c }),
      ArrowLeft: () => ({ r: pos.r, c: pos.c - 1 }),
      ArrowRight: () => ({ r: pos.r, c: pos.c + 1 }),
      PageUp: () => ({ r: pos.r - page, c: pos.c }),
      PageDown: () => ({ r: pos.r + page, c: pos.c }),
      Home: () => (e.ctrlKey ? { r: 0, c: -1 } : { r: pos.r, c: -1 }),
      End: () => (e.ctrlKey ? { r: rows - 1, c: cols - 1 } : { r: pos.r, c: cols - 1 }),
    };
    const f = map[e.key];
    if (!f || rows === 0) return;
    e.preventDefault();
    move(f());
  }

  // The grid is reachable by Tab even when the active cell is scrolled out of the DOM.
  function onFocus(e: React.FocusEvent) {
    if (e.target === scroller.current) move(pos);
  }

  return (
    <div
      ref={scroller}
      className="fleet-grid"
      role="grid"
      aria-label={label}
      aria-rowcount={rows + 2}
      aria-colcount={cols + 1}
      tabIndex={rendered(pos) ? -1 : 0}
      onKeyDown={onKeyDown}
      onFocus={onFocus}
      data-testid="fleet-grid"
    >
      <div className="fleet-canvas" style={{ width: colV.getTotalSize(), height: rowV.getTotalSize() }}>
        <div className="fleet-head" role="rowgroup" style={{ width: colV.getTotalSize() }}>
          <div role="row" aria-rowindex={1} className="fleet-grouprow">
            <div role="columnheader" aria-colindex={1} className="fleet-corner" />
            {model.groups
              .filter((g) => vCols.length > 0 && g.start <= vCols[vCols.length - 1]!.index && g.start + g.count > vCols[0]!.index)
              .map((g) => {
                const label = groupLabel(g);
                return (
                  <div
                    key={g.environment + g.start}
                    role="columnheader"
                    aria-colindex={g.start + 2}
                    aria-colspan={g.count}
                    aria-label={label.full}
                    title={label.full}
                    className={`fleet-group env-${g.environment}`}
                    style={{ left: ROWHEAD_W + g.start * COL_W, width: g.count * COL_W }}
                    data-testid={`fleet-group-${g.environment}`}
                  >
                    <span className="fleet-group-label">{label.short}</span>
                  </div>
                );
              })}
          </div>
          <div role="row" aria-rowindex={2} className="fleet-colrow">
            <div role="columnheader" aria-colindex={1} className="fleet-corner">
              Operator \ Cluster
            </div>
            {vCols.map((v) => (
              <ClusterHeader key={v.key} cluster={model.cols[v.index]!} index={v.index} left={v.start} />
            ))}
          </div>
        </div>
        <div role="rowgroup">
          {vRows.map((vr) => {
            const op = model.rows[vr.index]!;
            return (
              <div key={vr.key} role="row" aria-rowindex={vr.index + 3} className="fleet-row" style={{ top: vr.start, width: colV.getTotalSize() }}>
                <div role="rowheader" aria-colindex={1} className="fleet-rowhead">
                  <Link
                    to={`/operators/${encodeURIComponent(op.name ?? '')}`}
                    tabIndex={pos.r === vr.index && pos.c === -1 ? 0 : -1}
                    data-pos={`${vr.index}:-1`}
                    onFocus={() => setActive({ r: vr.index, c: -1 })}
                  >
                    {op.name}
                  </Link>
                  <span className="muted">latest {op.latestVersion || '—'}</span>
                </div>
                {vCols.map((vc) => (
                  <Cell
                    key={vc.key}
                    r={vr.index}
                    c={vc.index}
                    left={vc.start}
                    op={op.name}
                    cluster={model.cols[vc.index]!}
                    cell={model.cell(vr.index, vc.index)}
                    active={pos.r === vr.index && pos.c === vc.index}
                    onFocus={() => setActive({ r: vr.index, c: vc.index })}
                  />
                ))}
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}

function ClusterHeader({ cluster, index, left }: { cluster: FleetCluster; index: number; left: number }) {
  const tone = healthTone(cluster.health);
  return (
    <div
      role="columnheader"
      aria-colindex={index + 2}
      className={`fleet-colhead tone-${tone}`}
      style={{ left, width: COL_W }}
      title={cluster.healthReason || undefined}
    >
      <Link to={`/clusters/${encodeURIComponent(cluster.name ?? '')}`} tabIndex={-1}>
        {cluster.name}
      </Link>
      <span className={`status status-${tone}`}>
        <span aria-hidden="true">{SYMBOL[tone]}</span>
        {cluster.health || 'Unknown'}
      </span>
    </div>
  );
}

interface CellProps {
  r: number;
  c: number;
  left: number;
  op: string | undefined;
  cluster: FleetCluster;
  cell: FleetCell | undefined;
  active: boolean;
  onFocus: () => void;
}

function Cell({ r, c, left, op, cluster, cell, active, onFocus }: CellProps) {
  const label = cellLabel(op, cluster.name, cell);
  const common = {
    tabIndex: active ? 0 : -1,
    'data-pos': `${r}:${c}`,
    'aria-label': label,
    title: label,
    onFocus,
  };
  if (!cell) {
    return (
      <div role="gridcell" aria-colindex={c + 2} className="fleet-cell empty" style={{ left, width: COL_W }}>
        <span {...common} className="fleet-cell-body">
          <span aria-hidden="true">—</span>
        </span>
      </div>
    );
  }
  const tone = healthTone(cell.health);
  const to = cell.deploymentId
    ? `/deployments/${encodeURIComponent(cell.deploymentId)}`
    : `/clusters/${encodeURIComponent(cluster.name ?? '')}`;
  return (
    <div
      role="gridcell"
      aria-colindex={c + 2}
      className={`fleet-cell tone-${tone}${cell.drift === 'behind' ? ' behind' : ''}`}
      style={{ left, width: COL_W }}
      data-testid="fleet-cell"
      data-operator={op}
      data-cluster={cluster.name}
      data-health={cell.health || 'Unknown'}
      data-drift={cell.drift}
      data-on-unhealthy={cell.onUnhealthy}
    >
      <Link to={to} {...common} className="fleet-cell-body">
        <span className="fleet-version">{cell.version || '?'}</span>
        <span className="fleet-health">
          <span aria-hidden="true">{SYMBOL[tone]}</span> {cell.health || 'Unknown'}
          {isAlert(cell) && <span className="fleet-alert"> alert</span>}
        </span>
        {cell.drift === 'behind' && <span className="fleet-drift">↑ {cell.latestVersion}</span>}
      </Link>
    </div>
  );
}
