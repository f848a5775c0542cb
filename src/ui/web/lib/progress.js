// Long work in progress (issue 19 item 5): a status bar fed by /api/progress/stream, one
// progress bar per running command (gc, fsck, travel, a SkillPilot job, …), gone when it ends.
import { useEffect, useState } from "preact/hooks";
import { html } from "./html.js";

/** The progress records the server streams: `[]` until the first event, and when idle. */
function useProgress() {
  const [items, setItems] = useState([]);
  useEffect(() => {
    const source = new EventSource("/api/progress/stream");
    source.addEventListener("progress", (e) => {
      try {
        setItems(JSON.parse(e.data).items ?? []);
      } catch {
        setItems([]);
      }
    });
    // EventSource reconnects by itself; what it showed may be over by then.
    source.onerror = () => setItems([]);
    return () => source.close();
  }, []);
  return items;
}

function label(r) {
  const what = r.message ?? r.phase;
  return `${r.command}: ${what}`;
}

function counts(r) {
  if (r.done === null) return "";
  return r.total === null ? `${r.done}` : `${r.done} / ${r.total}`;
}

/**
 * The status bar. Its live region stays in the page (a region added with its text is often not
 * read out); it announces what runs, while the bars themselves carry the numbers.
 */
export function ProgressStatus() {
  const items = useProgress();
  return html`<div class="progress-status" role="status" aria-live="polite"
    style=${items.length === 0 ? "" : "position:fixed;left:0;right:0;bottom:0;padding:.4rem 1rem;border-top:1px solid GrayText;background:Canvas;color:CanvasText"}>
    ${items.map((r) => {
      const id = `progress-${r.pid}`;
      return html`<div class="progress-item" key=${r.pid} style="display:flex;gap:.6rem;align-items:center">
        <label for=${id}>${label(r)}</label>
        <progress id=${id} max=${r.total ?? undefined} value=${r.total === null ? undefined : (r.done ?? 0)}></progress>
        <span aria-hidden="true">${counts(r)}</span>
      </div>`;
    })}
  </div>`;
}
