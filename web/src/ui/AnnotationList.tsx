import { useState } from 'preact/hooks';
import type { Annotation } from '../lib/types';
import { ratingOf, type Annotations } from './hooks/useAnnotations';

/** AnnotationList is a trace's annotations in reading order; the reader
 * edits and deletes their own comments in place. */
export function AnnotationList(props: { notes: Annotations; me: string | null; canWrite?: boolean }) {
  const { notes, me } = props;
  const [editing, setEditing] = useState<{ id: string; text: string } | null>(null);
  return (
    <div class="annotations">
      <h4>Annotations ({notes.anns.length})</h4>
      {notes.sorted.length === 0 && (
        <p class="muted small">{props.canWrite === false ? 'None yet.' : 'Select text, click a line number in the Lines view, or use Comment on an event.'}</p>
      )}
      {notes.sorted.map((a: Annotation) => {
        const own = !!me && a.author === me && a.source !== 'analyzer';
        const r = ratingOf(a);
        return (
          <div class={`ann ann-${a.source === 'analyzer' ? 'analyzer' : 'user'}`} data-ann={a.id}>
            <div class="ann-head">
              <a href={`#${a.address}`} class="ann-addr">
                {a.address}
              </a>
              <span class="badge">{a.source}</span>
              {a.author && <span class="muted small">{a.author}</span>}
              {r !== undefined && <span class="rating">{r > 0 ? '▲ thumbs up' : '▼ thumbs down'}</span>}
            </div>
            {editing?.id === a.id ? (
              <div>
                <textarea value={editing.text} onInput={(e) => setEditing({ id: a.id, text: e.currentTarget.value })} rows={3} aria-label="edit comment" />
                <div class="row">
                  <button type="button" class="small primary" onClick={() => notes.edit(a.id, editing.text).then((ok) => ok && setEditing(null))}>
                    Save
                  </button>
                  <button type="button" class="small" onClick={() => setEditing(null)}>
                    Cancel
                  </button>
                </div>
              </div>
            ) : (
              a.content && <div class="ann-content">{a.content}</div>
            )}
            {own && editing?.id !== a.id && (
              <div class="row">
                <button type="button" class="link small edit" onClick={() => setEditing({ id: a.id, text: a.content })}>
                  edit
                </button>
                <button type="button" class="link small delete" onClick={() => notes.remove(a.id)}>
                  delete
                </button>
              </div>
            )}
          </div>
        );
      })}
    </div>
  );
}
