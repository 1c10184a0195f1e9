import type { GetResult, Item } from '../../api/types';
import { Markdown } from '../../components/Markdown';

export type Revision = Item<GetResult<'/api/v1/crds/{name}'>['revisions']>;

/** The guide's URL when it is an http(s) one (the manager checks it too), else undefined. */
function guideHref(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : undefined;
  } catch {
    return undefined;
  }
}

/** A revision's migration note: its text (markdown) and a link to the guide. */
export function Note({ note }: { note: Revision['migrationNote'] }) {
  const href = guideHref(note?.url);
  if (!note?.text && !href) return <span className="muted">—</span>;
  return (
    <div className="note">
      {note?.text && <Markdown text={note.text} />}
      {href && (
        <>
          {' '}
          <a className="note-guide" href={href} target="_blank" rel="noopener noreferrer">
            migration guide
          </a>
        </>
      )}
    </div>
  );
}
