// Shared pieces of every view: data loading, errors, paging, confirmation, formatting.
import { useCallback, useEffect, useId, useRef, useState } from "preact/hooks";
import { getJSON, takePreloaded } from "./api.js";
import { html } from "./html.js";

/**
 * Load `path` with `query`; `{ data, error, loading, reload }`. The request is made again when the
 * path or any query value changes.
 */
export function useApi(path, query = {}) {
  const key = `${path}?${JSON.stringify(query)}`;
  // the page may have come with the answer: the first render shows it, no request made
  const [state, setState] = useState(() => {
    const data = takePreloaded(path, query);
    return { data, error: undefined, loading: data === undefined };
  });
  const [tick, setTick] = useState(0);
  const preloaded = useRef(!state.loading);
  useEffect(() => {
    if (preloaded.current) {
      preloaded.current = false;
      return;
    }
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    getJSON(path, query).then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error) => live && setState({ data: undefined, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [key, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function Loading({ what = "Loading" }) {
  return html`<p class="muted" role="status" aria-live="polite">${what}…</p>`;
}

/** An error as the server gave it: its stable code and its message. */
export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<div class="error" role="alert">
    <strong>${error.code ?? "ERROR"}</strong> ${error.message}
  </div>`;
}

/** Data or its loading state or its error, in one place. */
export function Loaded({ state, children }) {
  if (state.error) return html`<${ErrorBox} error=${state.error} />`;
  if (state.data === undefined) return html`<${Loading} />`;
  return children(state.data);
}

/** Previous/next over a server-side page: `cursor` is what the server handed back as `next`. */
export function Pager({ next, onNext, onFirst, atFirst }) {
  return html`<nav class="pager" aria-label="pages">
    <button type="button" disabled=${atFirst} onClick=${onFirst}>First page</button>
    <button type="button" disabled=${next === undefined || next === null} onClick=${onNext}>Next page</button>
  </nav>`;
}

/**
 * A modal confirmation (<dialog>: focus is trapped, Escape cancels, and focus returns to the
 * control that opened it). `children` is the preview of what will happen; `onConfirm` runs the
 * action. The confirming button is named by `confirmLabel` (say the action: "Revert").
 */
export function Confirm({
  title,
  open,
  confirmLabel = "Confirm",
  onConfirm,
  onCancel,
  busy,
  children,
}) {
  const ref = useModal(open);
  const titleId = useId();
  return html`<dialog ref=${ref} aria-labelledby=${titleId} aria-busy=${busy ? "true" : undefined} onCancel=${(
    e,
  ) => {
    e.preventDefault();
    if (!busy) onCancel();
  }}>
    <h2 id=${titleId}>${title}</h2>
    <div class="confirm-body">${children}</div>
    <div class="actions">
      <button type="button" onClick=${onCancel} disabled=${busy}>Cancel</button>
      <button type="button" class="danger" onClick=${onConfirm} disabled=${busy}>${busy ? "Working…" : confirmLabel}</button>
    </div>
  </dialog>`;
}

/**
 * A `<dialog>` shown modal while `open`: focus goes into it, and back where it was when it
 * closes (or to the main region, when that element is gone).
 */
export function useModal(open) {
  const ref = useRef(null);
  const opener = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      opener.current = document.activeElement;
      d.showModal();
    }
    if (!open && d.open) {
      d.close();
      const back = opener.current;
      opener.current = null;
      if (back instanceof HTMLElement && back.isConnected && !back.hasAttribute("disabled"))
        back.focus();
      else document.getElementById("main")?.focus();
    }
  }, [open]);
  // A dialog unmounted while open (its owner stops rendering it on cancel) gives the focus back
  // too, once it has left the document.
  useEffect(
    () => () => {
      const back = opener.current;
      if (back instanceof HTMLElement)
        queueMicrotask(() => {
          if (back.isConnected && !back.hasAttribute("disabled")) back.focus();
        });
    },
    [],
  );
  return ref;
}

export function Badge({ kind = "", children }) {
  return html`<span class=${`badge ${kind}`}>${children}</span>`;
}

// what toLocaleString() shows, made once: a formatter per call costs more than the rest of a row
const DATE_TIME = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "numeric",
  day: "numeric",
  hour: "numeric",
  minute: "numeric",
  second: "numeric",
});

export function formatTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : DATE_TIME.format(d);
}

export function formatBytes(n) {
  if (typeof n !== "number") return "";
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** `<title>` follows the view, so history and tabs say where they are. */
export function useTitle(title) {
  useEffect(() => {
    document.title = title ? `${title} · timewarp` : "timewarp";
  }, [title]);
}
