// Issues: the friction records of the time machine (issue.json, chat.md, experiment.md, patches).
import { html } from "../lib/html.js";
import { Badge, formatBytes, formatTime, Loaded, useApi, useTitle } from "../lib/ui.js";
import { DiffView, Facts, QueryPager, setQuery, TabPanel, Tabs } from "./parts.js";

const STATUSES = ["all", "open", "fixed"];

function StatusBadge({ status }) {
  return html`<${Badge} kind=${status === "fixed" ? "ok" : "warn"}>${status}<//>`;
}

export function IssueList({ query }) {
  useTitle("Issues");
  const status = STATUSES.includes(query.get("status")) ? query.get("status") : "all";
  const state = useApi("/api/issues", { status, cursor: query.get("cursor") ?? undefined });
  return html`<section data-view="issue-list">
    <h1>Issues</h1>
    <div class="filters">
      <label>Status
        <select value=${status} onChange=${(e) => setQuery(query, { status: e.target.value, cursor: undefined })}>
          ${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select>
      </label>
    </div>
    <${Loaded} state=${state}>${(page) => html`
      <p class="muted">${page.total} issue${page.total === 1 ? "" : "s"}</p>
      ${
        page.items.length === 0
          ? html`<p>No issues${status === "all" ? "" : ` with status ${status}`}. An agent files one with <code>issue_report</code>; a person with <code>timewarp issue report</code>.</p>`
          : html`
        <table>
          <thead><tr><th scope="col">Issue</th><th scope="col">Symptom</th><th scope="col">Snapshot</th><th scope="col">Status</th><th scope="col">Reported</th></tr></thead>
          <tbody>${page.items.map(
            (i) => html`<tr>
              <td><a href=${`/issues/${i.issue_id}`}><code>${i.issue_id}</code></a></td>
              <td>${i.symptom}</td>
              <td><a href=${`/snapshots/${i.snapshot_id}`}><code>${i.snapshot_id}</code></a></td>
              <td><${StatusBadge} status=${i.status} /></td>
              <td>${formatTime(i.created_at)}</td>
            </tr>`,
          )}</tbody>
        </table>`
      }
      ${
        page.corrupt.length > 0 &&
        html`<div class="error" role="alert">
        <strong>${page.corrupt.length} issue folder(s) do not read</strong>
        <ul>${page.corrupt.map((c) => html`<li><code>${c.issue_id}</code>: ${c.code} ${c.message}</li>`)}</ul>
      </div>`
      }
      <${QueryPager} query=${query} next=${page.next} />`}
    <//>
  </section>`;
}

const ROLE_LABELS = { user: "User", assistant: "Assistant" };

function ChatEntry({ entry }) {
  const who =
    ROLE_LABELS[entry.kind] ??
    `Tool ${entry.tool} · ${entry.kind === "tool_input" ? "input" : "output"}`;
  return html`<li class=${`chat-entry chat-${entry.kind}`}>
    <div class="chat-who">${who}</div>
    <pre tabindex="0">${entry.text}</pre>
  </li>`;
}

function ChatPanel({ chat }) {
  if (chat === null) return html`<p>This issue has no chat.md.</p>`;
  return html`
    <${Facts} rows=${Object.entries(chat.header)} />
    ${chat.note !== null && html`<p class="muted">${chat.note}</p>`}
    <ol class="chat">${chat.entries.map((e) => html`<${ChatEntry} entry=${e} />`)}</ol>
    <p class="muted">As stored in chat.md: secrets were replaced by <code>***REDACTED***</code> when the issue was reported.</p>`;
}

function PatchPanel({ patches, query }) {
  const layout = query.get("view") === "side-by-side" ? "side-by-side" : "line-by-line";
  if (patches.length === 0)
    return html`<p>No patch saved. <code>timewarp return --save-patch ISSUE_ID</code> keeps the experiment's changes here.</p>`;
  return html`
    <div class="filters">
      <label>Layout
        <select value=${layout} onChange=${(e) => setQuery(query, { view: e.target.value })}>
          <option value="line-by-line">unified</option>
          <option value="side-by-side">side by side</option>
        </select>
      </label>
    </div>
    ${patches.map(
      (p) => html`<section>
        <h3><code>${p.name}</code> <span class="muted">${formatBytes(p.bytes)}</span></h3>
        <${DiffView} patch=${p.text} layout=${layout} />
      </section>`,
    )}`;
}

const TABS = [
  ["chat", "Chat"],
  ["experiment", "Experiment"],
  ["patch", "Patch"],
  ["json", "issue.json"],
];

function IssueBody({ doc, query }) {
  const i = doc.issue;
  const tab = TABS.some(([id]) => id === query.get("tab")) ? query.get("tab") : "chat";
  return html`
    <p><${StatusBadge} status=${i.status} /> reported ${formatTime(i.created_at)}${i.fixed_at ? html`, fixed ${formatTime(i.fixed_at)}` : ""}</p>
    <${Facts} rows=${[
      [
        "Snapshot",
        html`<a href=${`/snapshots/${i.snapshot_id}`}><code>${i.snapshot_id}</code></a>`,
      ],
      ["Session", i.session_id && html`<code>${i.session_id}</code>`],
      ["Task", i.task_context],
      ["Symptom", i.symptom],
      ["Success criteria", i.success_criteria],
      ["Suspected cause", i.suspected_cause],
      ["Chat summary", i.chat_summary],
    ]} />
    <${Tabs} label="issue files" tabs=${TABS.map(([id, label]) => [id, id === "patch" ? `${label} (${doc.patches.length})` : label])} current=${tab} onSelect=${(id) => setQuery(query, { tab: id })} />
    <${TabPanel} id=${tab}>
      ${tab === "chat" && html`<h2>Chat</h2><${ChatPanel} chat=${doc.chat} />`}
      ${tab === "experiment" && html`<h2>experiment.md</h2>${doc.experiment === null ? html`<p>No experiment.md.</p>` : html`<pre class="doc" tabindex="0">${doc.experiment}</pre>`}`}
      ${tab === "patch" && html`<h2>Saved patches</h2><${PatchPanel} patches=${doc.patches} query=${query} />`}
      ${tab === "json" && html`<h2>issue.json</h2><pre class="doc" tabindex="0">${doc.raw}</pre>`}
    <//>`;
}

export function IssueView({ params, query }) {
  useTitle(`Issue ${params.id}`);
  const state = useApi(`/api/issues/${encodeURIComponent(params.id)}`);
  return html`<section data-view="issue">
    <p><a href="/issues">← Issues</a></p>
    <h1>Issue <code>${params.id}</code></h1>
    <${Loaded} state=${state}>${(doc) => html`<${IssueBody} doc=${doc} query=${query} />`}<//>
  </section>`;
}
