// A diff rendered by diff2html, unified or side by side, with the choice kept in `?view=`.
import { useRef } from "preact/hooks";
import { useDiff2Html } from "../lib/diff2html.js";
import { html } from "../lib/html.js";
import { navigate } from "../lib/router.js";

export const DIFF_VIEWS = [
  ["line-by-line", "Unified"],
  ["side-by-side", "Side by side"],
];

/** The view a URL asks for (`?view=side-by-side`), unified by default. */
export function diffViewOf(query) {
  return query.get("view") === "side-by-side" ? "side-by-side" : "line-by-line";
}

/** The current URL with `changes` applied to its query (a value of undefined or "" removes it). */
export function withQuery(changes) {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === null || v === "") q.delete(k);
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s === "" ? location.pathname : `${location.pathname}?${s}`;
}

/** Replace the URL's query (no new history entry: a filter or a tab is not a navigation). */
export function setQuery(changes) {
  navigate(withQuery(changes), { replace: true });
}

/**
 * Tabs (role=tablist) choosing between unified and side by side; arrow keys move between them,
 * as the ARIA tabs pattern says. `id` prefixes the ids linking each tab to its panel.
 */
export function DiffTabs({ id, view, label = "diff layout" }) {
  const refs = useRef([]);
  const choose = (i) => {
    setQuery({ view: DIFF_VIEWS[i][0] === "line-by-line" ? undefined : DIFF_VIEWS[i][0] });
    refs.current[i]?.focus();
  };
  const onKey = (e) => {
    const at = DIFF_VIEWS.findIndex(([v]) => v === view);
    if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      e.preventDefault();
      choose((at + (e.key === "ArrowRight" ? 1 : DIFF_VIEWS.length - 1)) % DIFF_VIEWS.length);
    } else if (e.key === "Home" || e.key === "End") {
      e.preventDefault();
      choose(e.key === "Home" ? 0 : DIFF_VIEWS.length - 1);
    }
  };
  return html`<div class="tabs" role="tablist" aria-label=${label} onKeyDown=${onKey}>
    ${DIFF_VIEWS.map(
      ([v, text], i) => html`<button
        type="button"
        role="tab"
        id=${`${id}-tab-${v}`}
        aria-controls=${`${id}-panel`}
        aria-selected=${v === view ? "true" : "false"}
        tabindex=${v === view ? 0 : -1}
        ref=${(el) => {
          refs.current[i] = el;
        }}
        onClick=${() => choose(i)}
      >${text}</button>`,
    )}
  </div>`;
}

/** A patch text rendered; diff2html escapes the text it shows. */
export function DiffBody({ patch, view, empty = "No textual change." }) {
  if (!patch) return html`<p class="muted">${empty}</p>`;
  const d2h = useDiff2Html();
  if (d2h === undefined) return html`<pre class="mono">${patch}</pre>`;
  const markup = d2h.html(patch, { outputFormat: view, drawFileList: false, matching: "lines" });
  return html`<div class="diff" dangerouslySetInnerHTML=${{ __html: markup }}></div>`;
}

/** Tabs and the diff under them, as one tab panel. */
export function DiffView({ id, patch, view, label, empty }) {
  return html`<div class="diff-view">
    <${DiffTabs} id=${id} view=${view} label=${label} />
    <div role="tabpanel" id=${`${id}-panel`} aria-labelledby=${`${id}-tab-${view}`} tabindex="0">
      <${DiffBody} patch=${patch} view=${view} empty=${empty} />
    </div>
  </div>`;
}
