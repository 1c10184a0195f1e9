import type { GetResult, Item } from '../../api/types';

export type Revision = Item<GetResult<'/api/v1/crds/{name}'>['revisions']>;

/** A revision's migration note: its text and a link to the guide. */
export function Note({ note }: { note: Revision['migrationNote'] }) {
  if (!note?.text && !note?.url) return <span className="muted">—</span>;
  return (
    <span>
      {note.text}
      {note.url && (
        <>
          {' '}
          <a href={note.url} target="_blank" rel="noreferrer noopener">
            migration guide
          </a>
        </>
      )}
    </span>
  );
}
