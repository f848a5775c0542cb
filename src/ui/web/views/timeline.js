// The timeline: sessions → turns → edits, snapshots, travels and returns, issues, guards and
// SkillPilot jobs, newest first, paged on the server, filtered through the URL, updated live.
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { getJSON } from "../lib/api.js";
import { html } from "../lib/html.js";
import { useLive } from "../lib/live.js";
import { navigate } from "../lib/router.js";
import { Badge, ErrorBox, formatTime, Loading, Pager, useApi, useTitle } from "../lib/ui.js";

const FILTERS = ["agent", "glob", "since", "until", "kind", "session"];
const KINDS = [
  ["", "All kinds"],
  ["session,turn", "Sessions and turns"],
  ["edit,revert,rewind,shell", "Edits"],
  ["snapshot,travel,return,recover", "Snapshots, travels, returns"],
  ["issue", "Issues"],
  ["guard", "Guard warnings and blocks"],
  ["job", "SkillPilot jobs"],
  ["card,milestone,hook", "Cards, milestones, hook failures"],
];
const SOURCE_LABEL = { agent: "agent tool", shell: "shell", mcp: "MCP/CLI", timewarp: "timewarp" };
const PAGE = 50;
/** Bus events that never become a row: no catch-up request for them. */
const QUIET = new Set([
  "gc.completed",
  "cache.discarded",
  "milestone.signal",
  "card.offered",
  "workspace.initialized",
  "snapshot.deleted",
]);

/** The URL's filters as the API wants them (datetime-local values become ISO times). */
function apiQuery(query) {
  const q = {};
  for (const k of FILTERS) {
    const v = query.get(k);
    if (!v) continue;
    if (k === "since" || k === "until") {
      const d = new Date(v);
      q[k] = Number.isNaN(d.getTime()) ? v : d.toISOString();
    } else q[k] = v;
  }
  return q;
}

export function TimelineView({ query }) {
  useTitle("Timeline");
  const filters = apiQuery(query);
  const cursor = query.get("cursor") ?? undefined;
  const state = useApi("/api/timeline", { ...filters, limit: PAGE, cursor });
  const live = useLiveRows(filters, state, cursor === undefined);
  const go = (params) => navigate(`/timeline${params.toString() ? `?${params}` : ""}`);
  const page = (next) => {
    const p = new URLSearchParams(query);
    if (next) p.set("cursor", next);
    else p.delete("cursor");
    go(p);
  };
  const data = state.data;
  // the same element while rows and sessions stay: the live status changing re-renders no row
  const list = useMemo(
    () =>
      data
        ? html`<${Groups} items=${[...live.rows, ...data.items]} sessions=${{ ...data.sessions, ...live.sessions }} fresh=${live.fresh} />`
        : "",
    [data, live.rows, live.sessions, live.fresh],
  );
  return html`<section data-view="timeline" aria-labelledby="timeline-h1">
    <h1 id="timeline-h1">Timeline</h1>
    <${Filters} query=${query} agents=${data?.agents ?? []} onApply=${go} />
    <p class="live-status muted">
      ${data ? html`${data.total} events${cursor ? "" : ", newest first"}. ` : ""}
      ${cursor ? "Live updates show on the first page." : html`Live: ${live.status === "open" ? "on" : live.status}.`}
    </p>
    <div class="sr-only" role="status" aria-live="polite" aria-atomic="true">${live.announce}</div>
    ${state.error ? html`<${ErrorBox} error=${state.error} />` : ""}
    ${data === undefined && !state.error ? html`<${Loading} what="Loading the timeline" />` : ""}
    ${list}
    ${data ? html`<${Pager} next=${data.next} atFirst=${cursor === undefined} onNext=${() => page(data.next)} onFirst=${() => page(undefined)} />` : ""}
  </section>`;
}

/**
 * Rows that arrived since the page loaded: on a bus event, the API is asked for what came after
 * the newest row shown (with the same filters), and the answer goes on top. The count is
 * announced politely; focus stays where it is.
 */
function useLiveRows(filters, state, firstPage) {
  const [rows, setRows] = useState([]);
  const [sessions, setSessions] = useState({});
  const [fresh, setFresh] = useState(new Set());
  const [announce, setAnnounce] = useState("");
  const head = useRef(null);
  const timer = useRef(undefined);
  const key = JSON.stringify(filters);
  useEffect(() => {
    // the same (empty) state when there is nothing to clear: no second render of every row
    setRows((r) => (r.length === 0 ? r : []));
    setSessions((s) => (Object.keys(s).length === 0 ? s : {}));
    setFresh((f) => (f.size === 0 ? f : new Set()));
    head.current = state.data?.head ?? null;
  }, [key, state.data]);
  const catchUp = useCallback(async () => {
    if (!firstPage || state.data === undefined) return;
    if (head.current === null) return state.reload();
    const got = await getJSON("/api/timeline", {
      ...filters,
      after: head.current,
      limit: 200,
    }).catch(() => undefined);
    if (got === undefined || got.items.length === 0) return;
    if (got.truncated) return state.reload();
    head.current = got.head;
    setRows((r) => [...got.items, ...r]);
    setSessions((s) => ({ ...s, ...got.sessions }));
    setFresh(new Set(got.items.map((i) => i.key)));
    const n = got.items.length;
    setAnnounce(`${n} new timeline ${n === 1 ? "event" : "events"}: ${got.items[0].title}`);
  }, [key, state.data, firstPage]);
  const status = useLive((event) => {
    if (event.type === "stream.gap") return state.reload();
    if (QUIET.has(event.type)) return;
    clearTimeout(timer.current);
    timer.current = setTimeout(catchUp, 250);
  });
  useEffect(() => () => clearTimeout(timer.current), []);
  return { rows, sessions, fresh, announce, status };
}

function Filters({ query, agents, onApply }) {
  const form = useRef(null);
  const submit = (e) => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(form.current))
      if (typeof v === "string" && v.trim() !== "") p.set(k, v.trim());
    onApply(p);
  };
  const value = (k) => query.get(k) ?? "";
  const agent = value("agent");
  return html`<form class="filters" ref=${form} onSubmit=${submit} aria-label="filter the timeline">
    <label>Agent
      <select name="agent">
        <option value="">All agents</option>
        ${[...new Set([...agents, ...(agent ? [agent] : [])])].map((a) => html`<option value=${a} selected=${a === agent}>${a}</option>`)}
      </select>
    </label>
    <label>Files (glob)
      <input name="glob" type="text" placeholder="src/**/*.ts" value=${value("glob")} spellcheck="false" />
    </label>
    <label>Kind
      <select name="kind">
        ${KINDS.map(([v, label]) => html`<option value=${v} selected=${v === value("kind")}>${label}</option>`)}
      </select>
    </label>
    <label>From <input name="since" type="datetime-local" step="1" value=${value("since")} /></label>
    <label>To <input name="until" type="datetime-local" step="1" value=${value("until")} /></label>
    ${value("session") ? html`<input type="hidden" name="session" value=${value("session")} />` : ""}
    <button type="submit" class="primary">Apply</button>
    <button type="button" onClick=${() => onApply(new URLSearchParams())}>Clear</button>
  </form>
  ${value("session") ? html`<p>Only session <code>${value("session")}</code>. <a href="/timeline">Show all sessions</a></p>` : ""}`;
}

/** Consecutive rows of one session form a group; within it, consecutive rows of one turn. */
function groupRows(items) {
  const groups = [];
  for (const row of items) {
    const sid = row.session_id ?? null;
    let g = groups[groups.length - 1];
    if (g === undefined || g.session_id !== sid) {
      g = { key: "", session_id: sid, turns: [] };
      groups.push(g);
    }
    // named by its oldest row: rows arriving live go on top, so the group (its button, its
    // focus, its collapsed state) stays the same element
    g.key = `${sid ?? "-"}:${row.key}`;
    const turn = row.turn ?? null;
    let t = g.turns[g.turns.length - 1];
    if (t === undefined || t.turn !== turn) {
      t = { turn, head: undefined, rows: [] };
      g.turns.push(t);
    }
    if (row.kind === "turn" && t.head === undefined) t.head = row;
    else t.rows.push(row);
  }
  return groups;
}

function Groups({ items, sessions, fresh }) {
  const [collapsed, setCollapsed] = useState(new Set());
  if (items.length === 0)
    return html`<p class="muted">Nothing on the timeline matches. <a href="/timeline">Clear the filters</a>.</p>`;
  const groups = groupRows(items);
  const toggle = (key) =>
    setCollapsed((c) => {
      const n = new Set(c);
      n.has(key) ? n.delete(key) : n.add(key);
      return n;
    });
  return html`<div class="timeline">
    <div class="actions">
      <button type="button" onClick=${() => setCollapsed(new Set())}>Expand all</button>
      <button type="button" onClick=${() => setCollapsed(new Set(groups.map((g) => g.key)))}>Collapse all</button>
    </div>
    ${groups.map(
      (
        g,
      ) => html`<${Group} key=${g.key} group=${g} info=${g.session_id ? sessions[g.session_id] : undefined}
      open=${!collapsed.has(g.key)} onToggle=${() => toggle(g.key)} fresh=${fresh} />`,
    )}
  </div>`;
}

function Group({ group, info, open, onToggle, fresh }) {
  const id = `tl-${group.key.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  const count = group.turns.reduce((n, t) => n + t.rows.length + (t.head ? 1 : 0), 0);
  const sid = group.session_id;
  // A session interrupted by other work shows as several groups: the newest time tells them apart
  // (for people, and for screen readers, which list the groups by name).
  const first = group.turns[0];
  const newest = first?.rows[0]?.ts ?? first?.head?.ts;
  return html`<section class="tl-group" aria-labelledby=${`${id}-h`}>
    <h2 class="tl-group-head" id=${`${id}-h`}>
      <button type="button" aria-expanded=${open ? "true" : "false"} aria-controls=${id} onClick=${onToggle}>
        <span aria-hidden="true">${open ? "▾" : "▸"}</span>
        ${sid ? html` Session <code>${sid}</code>` : " Workspace (no session)"}
        <span class="muted"> · ${count} ${count === 1 ? "event" : "events"}${newest ? `, up to ${formatTime(newest)}` : ""}</span>
      </button>
      ${info?.agent ? html` <${Badge}>${info.agent}<//>` : ""}
      ${info?.live ? html` <${Badge} kind="ok">live<//>` : ""}
    </h2>
    <div id=${id} hidden=${!open}>
      ${sid ? html`<p class="tl-session muted">${sessionLine(sid, info)}</p>` : ""}
      ${group.turns.map((t) => html`<${Turn} turn=${t} fresh=${fresh} />`)}
    </div>
  </section>`;
}

/** A session's facts and links, joined by " · " (only those it has). */
function sessionLine(sid, info) {
  const when = info?.started_at
    ? `started ${formatTime(info.started_at)}${info.ended_at ? `, ended ${formatTime(info.ended_at)}` : ""}`
    : undefined;
  const parts = [
    info?.task_hint,
    when,
    html`<a href=${`/timeline?session=${encodeURIComponent(sid)}`}>only this session</a>`,
    info?.snapshot_id
      ? html`<a href=${`/snapshots/${info.snapshot_id}`}>its snapshot</a>`
      : undefined,
  ].filter((p) => p);
  return parts.flatMap((p, i) => (i === 0 ? [p] : [" · ", p]));
}

function Turn({ turn, fresh }) {
  const rows = html`<ol class="tl-rows">${turn.rows.map((r) => html`<${Row} key=${r.key} row=${r} fresh=${fresh.has(r.key)} />`)}</ol>`;
  if (turn.turn === null && turn.head === undefined) return rows;
  const head = turn.head;
  return html`<div class="tl-turn">
    <h3 class=${`tl-turn-head${head && fresh.has(head.key) ? " new" : ""}`}>
      Turn ${turn.turn ?? head?.turn}${head ? html`: <a href=${head.link}>${head.title}</a> <time class="muted" datetime=${head.ts}>${formatTime(head.ts)}</time>` : " (its prompt is on an older page)"}
    </h3>
    ${turn.rows.length > 0 ? rows : ""}
  </div>`;
}

const KIND_LABEL = {
  session: "session",
  turn: "turn",
  edit: "edit",
  revert: "revert",
  rewind: "rewind",
  shell: "shell",
  snapshot: "snapshot",
  travel: "travel",
  return: "return",
  recover: "recover",
  issue: "issue",
  guard: "guard",
  card: "card",
  milestone: "milestone",
  job: "job",
  hook: "hook",
};

function kindBadge(row) {
  if (row.kind === "guard")
    return html`<${Badge} kind=${row.action === "block" ? "bad" : "warn"}>guard ${row.action}<//>`;
  if (row.kind === "job" && row.status)
    return html`<${Badge} kind=${row.status === "PASS" ? "ok" : row.status === "FAIL" ? "bad" : ""}>job ${row.status.toLowerCase()}<//>`;
  if (row.kind === "hook") return html`<${Badge} kind="bad">hook failed<//>`;
  return html`<${Badge}>${KIND_LABEL[row.kind] ?? row.kind}${row.action && row.kind !== "job" ? ` ${row.action}` : ""}<//>`;
}

function Row({ row, fresh }) {
  const files = row.files ?? [];
  return html`<li class=${`tl-row${fresh ? " new" : ""}`}>
    <time datetime=${row.ts}>${formatTime(row.ts)}</time>
    ${kindBadge(row)}
    ${row.source ? html` <${Badge}>${SOURCE_LABEL[row.source] ?? row.source}${row.agent_tool ? ` (${row.agent_tool})` : ""}<//>` : ""}
    ${row.tool && row.source !== "shell" ? html` <span class="muted">${row.tool}</span>` : ""}
    <span class="tl-title">${row.link ? html`<a href=${row.link}>${row.title}</a>` : row.title}</span>
    ${typeof row.score === "number" ? html` <span class="muted">drift ${row.score.toFixed(2)}</span>` : ""}
    ${files.length > 1 ? html`<details class="tl-files"><summary>${files.length} files</summary><ul class="tl-file-list">${files.slice(0, 50).map((f) => html`<li><code>${f}</code></li>`)}</ul></details>` : ""}
  </li>`;
}
