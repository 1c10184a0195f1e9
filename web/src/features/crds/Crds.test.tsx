import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { json, mockApi } from '../../test/api';
import { WHOAMI, renderApp } from '../../test/render';
import { byAge, notesBetween, pairOf } from './CrdPage';
import { revisions, widgetsDetail, widgetsDiff, widgetsV1, widgetsV2 } from './fixtures';

afterEach(() => vi.unstubAllGlobals());

function routes() {
  return {
    'GET /api/v1/whoami': WHOAMI.Viewer,
    'GET /api/v1/crds': { items: [{ name: 'widgets.example.com', group: 'example.com', kind: 'Widget', revisions: 2, latest: revisions['2.0.0'] }] },
    'GET /api/v1/crds/widgets.example.com': widgetsDetail,
    'GET /api/v1/crds/widgets.example.com/diff': (_r: Request, url: URL) =>
      url.searchParams.get('from') === url.searchParams.get('to')
        ? { ...widgetsDiff, identical: true, breaking: false, changes: [] }
        : widgetsDiff,
    'GET /api/v1/crds/widgets.example.com/revisions/1.0.0': { crd: 'widgets.example.com', revision: revisions['1.0.0'], definition: widgetsV1 },
    'GET /api/v1/crds/widgets.example.com/revisions/2.0.0': { crd: 'widgets.example.com', revision: revisions['2.0.0'], definition: widgetsV2 },
  };
}

describe('CRDs', () => {
  it('lists the CRDs with their latest revision', async () => {
    mockApi(routes());
    renderApp('/crds');
    const row = await screen.findByTestId('crd-row');
    expect(row).toHaveTextContent('Widget');
    expect(row).toHaveTextContent('2.0.0 of widget-operator');
    // The note is markdown: code and emphasis rendered, not its backticks and asterisks.
    expect(row).toHaveTextContent('Set spec.mode on every Widget');
    expect(within(row).getByText('spec.mode').tagName).toBe('CODE');
    expect(within(row).getByText('every').tagName).toBe('STRONG');
  });

  it('compares the newest revision with the one before: breaking changes listed and highlighted side by side', async () => {
    const calls = mockApi(routes());
    renderApp('/crds/widgets.example.com');
    expect(await screen.findByTestId('crd-diff-verdict')).toHaveTextContent('✗ breaking: 5 changes');
    const diffCall = calls.find((c) => c.path.endsWith('/diff'))!;
    expect([diffCall.url.searchParams.get('from'), diffCall.url.searchParams.get('to'), diffCall.url.searchParams.get('operator')]).toEqual(['1.0.0', '2.0.0', 'widget-operator']);

    const changes = within(screen.getByTestId('crd-changes')).getAllByRole('listitem');
    expect(changes).toHaveLength(5);
    expect(changes.every((c) => c.dataset.breaking === 'true')).toBe(true);
    expect(changes[2]).toHaveTextContent('field spec.mode is now required');

    const notes = screen.getByTestId('crd-migration-notes');
    expect(notes).toHaveTextContent('2.0.0: Set spec.mode on every Widget before upgrading. migration guide');
    expect(within(notes).getByText('spec.mode').tagName).toBe('CODE');
    expect(within(notes).getByText('every').tagName).toBe('STRONG');
    const history = screen.getByTestId('crd-revisions');
    expect(within(history).getByText('spec.mode').tagName).toBe('CODE');
    expect(history).not.toHaveTextContent('**');

    const table = screen.getByTestId('crd-schema-diff');
    expect(within(table).getAllByRole('columnheader').map((h) => h.textContent)).toEqual(['Field', '1.0.0', '2.0.0']);
    const rows = within(table).getAllByTestId('crd-diff-row');
    // Only what changed by default: color, mode, replicas, size.
    expect(rows.map((r) => `${r.dataset.path}:${r.dataset.status}:${r.dataset.breaking}`)).toEqual([
      'spec.color:changed:true',
      'spec.mode:added:true',
      'spec.replicas:changed:true',
      'spec.size:removed:true',
    ]);
    const replicas = rows[2]!;
    const [before, after] = within(replicas).getAllByRole('cell');
    expect(before).toHaveTextContent('maximum: 10');
    expect(after).toHaveTextContent('maximum: 5');
    expect(replicas).toHaveTextContent('✗ breaking');
    expect(rows[3]).toHaveTextContent('(absent)');

    await userEvent.click(screen.getByTestId('crd-all-rows'));
    await waitFor(() => expect(within(screen.getByTestId('crd-schema-diff')).getAllByTestId('crd-diff-row')).toHaveLength(9));
  });

  it('takes the pair from the URL and the selects put it back there', async () => {
    const calls = mockApi(routes());
    renderApp('/crds/widgets.example.com?from=2.0.0&to=2.0.0');
    expect(await screen.findByTestId('crd-diff-verdict')).toHaveTextContent('the same revision');
    await userEvent.selectOptions(screen.getByTestId('crd-from'), '1.0.0');
    expect(await screen.findByTestId('crd-diff-verdict')).toHaveTextContent('breaking');
    expect(calls.filter((c) => c.path.endsWith('/diff')).at(-1)!.url.searchParams.get('from')).toBe('1.0.0');
  });

  it('links each revision to its comparison with the one before', async () => {
    mockApi(routes());
    renderApp('/crds/widgets.example.com?from=2.0.0&to=2.0.0');
    const link = await screen.findByTestId('crd-compare-previous');
    expect(link).toHaveAttribute('href', '/crds/widgets.example.com?from=1.0.0&to=2.0.0&operator=widget-operator');
    await userEvent.click(link);
    expect(await screen.findByTestId('crd-diff-verdict')).toHaveTextContent('breaking');
  });

  it('shows each cluster, one unreadable cluster as one row', async () => {
    mockApi(routes());
    renderApp('/crds/widgets.example.com');
    const rows = await screen.findAllByTestId('crd-cluster');
    expect(rows[0]).toHaveTextContent('2.0.0');
    expect(rows[0]).toHaveTextContent('✓ yes');
    expect(rows[1]).toHaveTextContent('could not be read: cluster unreachable');
  });

  it('shows the manager error when a revision is unknown', async () => {
    mockApi({ ...routes(), 'GET /api/v1/crds/widgets.example.com/diff': () => json({ message: 'CRD widgets.example.com has no revision for version 9.9.9 (from)' }, 404) });
    renderApp('/crds/widgets.example.com?from=9.9.9&to=2.0.0');
    expect(await screen.findByTestId('error')).toHaveTextContent('has no revision for version 9.9.9');
  });
});

describe('pair and notes', () => {
  const revs = byAge(widgetsDetail.revisions!);
  it('defaults to the newest revision against the one before', () => {
    expect(pairOf(revs, { from: '', to: '', operator: '' })).toEqual({ from: '1.0.0', to: '2.0.0', operator: 'widget-operator' });
    expect(pairOf(revs.slice(0, 1), { from: '', to: '', operator: '' })).toEqual({ from: '', to: '', operator: '' });
  });
  it('gives the notes of the revisions after from up to to, in either direction', () => {
    expect(notesBetween(revs, { from: '1.0.0', to: '2.0.0', operator: '' }).map((r) => r.version)).toEqual(['2.0.0']);
    expect(notesBetween(revs, { from: '2.0.0', to: '1.0.0', operator: '' }).map((r) => r.version)).toEqual(['2.0.0']);
    expect(notesBetween(revs, { from: '2.0.0', to: '2.0.0', operator: '' })).toEqual([]);
  });
});
