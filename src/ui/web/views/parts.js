// Pieces the issue, run and memory views share: tabs, a chart, query-string state, a pager.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { html } from "../lib/html.js";
import { navigate } from "../lib/router.js";
import { loadStyle, vendorUrl } from "../lib/styles.js";
import { Pager } from "../lib/ui.js";
import { DiffBody } from "./diff-view.js";

/** Change the current URL's query (filters, tabs, the page) without a new history entry. */
export function setQuery(query, changes, { push = false } = {}) {
  const q = new URLSearchParams(query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === null || v === "") q.delete(k);
    else q.set(k, String(v));
  }
  const s = q.toString();
  navigate(s === "" ? location.pathname : `${location.pathname}?${s}`, { replace: !push });
}

/** The server's pages, the cursor kept in `?cursor=` (so a page can be reloaded and shared). */
export function QueryPager({ query, next, name = "cursor" }) {
  return html`<${Pager}
    next=${next}
    atFirst=${!query.get(name)}
    onNext=${() => setQuery(query, { [name]: next }, { push: true })}
    onFirst=${() => setQuery(query, { [name]: undefined }, { push: true })}
  />`;
}

/**
 * Tabs as WAI-ARIA says: a tablist of buttons, arrow keys/Home/End move and select, one tab
 * stop. `tabs` is [[id, label]]; the panel is the caller's `<${TabPanel}>`.
 */
export function Tabs({ label, tabs, current, onSelect }) {
  const onKeyDown = (e) => {
    const i = tabs.findIndex(([id]) => id === current);
    const to = {
      ArrowRight: (i + 1) % tabs.length,
      ArrowLeft: (i - 1 + tabs.length) % tabs.length,
      Home: 0,
      End: tabs.length - 1,
    }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const id = tabs[to][0];
    onSelect(id);
    requestAnimationFrame(() => document.getElementById(`tab-${id}`)?.focus());
  };
  return html`<div class="tabs" role="tablist" aria-label=${label} onKeyDown=${onKeyDown}>
    ${tabs.map(
      ([id, text]) => html`<button
        type="button"
        role="tab"
        id=${`tab-${id}`}
        aria-selected=${id === current ? "true" : "false"}
        aria-controls=${`panel-${id}`}
        tabindex=${id === current ? 0 : -1}
        onClick=${() => onSelect(id)}
      >${text}</button>`,
    )}
  </div>`;
}

export function TabPanel({ id, children }) {
  return html`<div role="tabpanel" id=${`panel-${id}`} aria-labelledby=${`tab-${id}`} tabindex="0">
    ${children}
  </div>`;
}

const uPlotStyle = loadStyle(vendorUrl("uPlot.min.css"));

/**
 * A uPlot chart, made in a ref and destroyed on unmount. `data` is uPlot's columns (x first);
 * the chart is an image to assistive technology (`label`): every caller puts a table beside it.
 */
export function Chart({ label, data, series, scales, axes, height = 260 }) {
  const ref = useRef(null);
  const key = JSON.stringify([data, series.map((s) => s.label), scales]);
  useEffect(() => {
    let plot;
    let live = true;
    // drawn once its stylesheet is there (its legend and cursor are laid out by it)
    uPlotStyle.then(() => {
      const el = ref.current;
      if (!live || !el) return;
      const width = Math.max(320, Math.min(el.clientWidth || 720, 960));
      plot = new uPlot({ width, height, series, scales, axes }, data, el);
    });
    return () => {
      live = false;
      plot?.destroy();
    };
  }, [key]);
  return html`<figure class="chart">
    <div ref=${ref} role="img" aria-label=${label}></div>
  </figure>`;
}

/** Colours for series: distinct, readable on light and dark backgrounds. */
export const PALETTE = [
  "#2f6fdb",
  "#d9480f",
  "#2b8a3e",
  "#862e9c",
  "#c92a2a",
  "#0b7285",
  "#e67700",
];

/** A number as a table shows it: up to 4 decimals, "–" for none. */
export function num(v) {
  if (typeof v !== "number") return v === null || v === undefined ? "–" : String(v);
  return Number.isInteger(v) ? String(v) : String(Number(v.toFixed(4)));
}

/** Milliseconds as people read them. */
export function duration(ms) {
  if (typeof ms !== "number" || Number.isNaN(ms)) return "–";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

/** Render a diff with diff2html (it escapes the text), side by side or line by line. */
export function DiffView({ patch, layout }) {
  return html`<${DiffBody} patch=${patch} view=${layout === "side-by-side" ? "side-by-side" : "line-by-line"} />`;
}

/** A `<dl>` of label/value pairs; values left out when null or undefined. */
export function Facts({ rows }) {
  return html`<dl class="facts">
    ${rows
      .filter(([, v]) => v !== null && v !== undefined && v !== "")
      .map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}
  </dl>`;
}
