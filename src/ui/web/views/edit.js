// /edits/:id — one ledger operation: its diff (unified or side by side), what it was, the
// history of each of its files, and (actions allowed) its revert, previewed then confirmed.
import { useState } from "preact/hooks";
import { html } from "../lib/html.js";
import { Badge, formatBytes, formatTime, Loaded, Pager, useApi, useTitle } from "../lib/ui.js";
import { ActionSteps } from "./action-steps.js";
import { DiffBody, DiffView, diffViewOf, setQuery } from "./diff-view.js";

export function EditView({ params, query, workspace }) {
  const id = params.id;
  useTitle(`Edit ${id}`);
  const op = useApi(`/api/edits/${encodeURIComponent(id)}`, { format: "git" });
  const view = diffViewOf(query);
  // A revert adds an operation to the file's history: load it again.
  const [tick, setTick] = useState(0);
  const reverted = () => {
    op.reload();
    setTick((t) => t + 1);
  };
  return html`<div data-view="edit">
    <h1>Edit <code>${id}</code></h1>
    <${Loaded} state=${op}>
      ${(o) => html`
        <${Summary} op=${o} />
        <h2 id="edit-diff">Diff</h2>
        <${DiffView} id="edit" patch=${o.diff} view=${view} label="diff layout" />
        <${FileHistory} key=${tick} op=${o} file=${query.get("file") ?? o.affected_files[0]} />
        ${workspace?.allow_actions ? html`<${Revert} op=${o} view=${view} onDone=${reverted} />` : null}
      `}
    <//>
  </div>`;
}

const SOURCE = {
  agent: "an agent's own tool",
  shell: "a shell command (found by scanning)",
  timewarp: "timewarp's edit tools (CLI or MCP)",
  revert: "a revert",
  rewind: "a rewind",
};

function Summary({ op }) {
  const s = op.stats;
  return html`<dl class="meta">
    <dt>What</dt><dd>${op.description || html`<span class="muted">(no description)</span>`}</dd>
    <dt>Tool</dt><dd><code>${op.tool}</code> <${Badge}>${op.source}<//> <span class="muted">${SOURCE[op.source]}</span></dd>
    <dt>Time</dt><dd><time datetime=${op.timestamp}>${formatTime(op.timestamp)}</time></dd>
    <dt>Session</dt><dd>${op.session_id ? html`<code>${op.session_id}</code>` : html`<span class="muted">none</span>`}</dd>
    <dt>Timeline</dt><dd>${
      op.timeline === "past"
        ? html`<${Badge} kind="warn">past<//> made during a travel to <a href=${`/snapshots/${op.travel?.snapshot_id}`}>${op.travel?.snapshot_id}</a>`
        : html`<${Badge}>present<//>`
    }</dd>
    <dt>Changes</dt><dd>${op.affected_files.length} path(s), <span>+${s.lines_added}</span> <span>−${s.lines_removed}</span> lines, ${formatBytes(s.files_size_bytes)}, ${s.execution_time_ms} ms</dd>
    ${op.reverts.length > 0 ? html`<dt>Reverts</dt><dd>${op.reverts.map((r) => html`<a href=${`/edits/${r}`}><code>${r}</code></a> `)}</dd>` : null}
  </dl>
  <h2>Files</h2>
  <table>
    <thead><tr><th scope="col">Path</th><th scope="col">Change</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>
    <tbody>
      ${op.files.map(
        (f) => html`<tr>
          <td><code>${f.new_path ?? f.old_path}</code>${f.old_path && f.new_path && f.old_path !== f.new_path ? html` <span class="muted">from <code>${f.old_path}</code></span>` : null}</td>
          <td>${changeOf(f)}</td>
          <td>${f.before ? `${formatBytes(f.before.size)} (${f.before.mode})` : "—"}</td>
          <td>${f.after ? `${formatBytes(f.after.size)} (${f.after.mode})` : "—"}</td>
        </tr>`,
      )}
      ${op.directories.map(
        (d) =>
          html`<tr><td><code>${d.path}/</code></td><td>directory ${d.action}</td><td>—</td><td>—</td></tr>`,
      )}
    </tbody>
  </table>`;
}

function changeOf(f) {
  if (f.old_path === null) return "created";
  if (f.new_path === null) return "deleted";
  if (f.old_path !== f.new_path) return "renamed";
  if (f.before && f.after && f.before.mode !== f.after.mode && f.before.oid === f.after.oid)
    return "mode changed";
  return "modified";
}

/** The ledger's history of one path of the operation, paged, newest first. */
function FileHistory({ op, file }) {
  const [cursor, setCursor] = useState(undefined);
  const history = useApi(`/api/edits/${encodeURIComponent(op.id)}/history`, {
    path: file,
    limit: 20,
    cursor,
  });
  if (!file) return null;
  return html`<section aria-labelledby="file-history">
    <h2 id="file-history">History of a file</h2>
    <div class="filters">
      <label>File
        <select value=${file} onChange=${(e) => {
          setCursor(undefined);
          setQuery({ file: e.currentTarget.value });
        }}>
          ${op.affected_files.map((p) => html`<option value=${p}>${p}</option>`)}
        </select>
      </label>
    </div>
    <${Loaded} state=${history}>
      ${(h) => html`
        <p class="muted">${h.total} operation(s) touched <code>${file}</code>.</p>
        <table>
          <thead><tr><th scope="col">Operation</th><th scope="col">Time</th><th scope="col">Tool</th><th scope="col">Description</th><th scope="col">Lines</th></tr></thead>
          <tbody>
            ${h.items.map(
              (i) => html`<tr aria-current=${i.id === op.id ? "true" : undefined}>
                <td>${i.id === op.id ? html`<code>${i.id}</code> <${Badge}>this edit<//>` : html`<a href=${`/edits/${i.id}`}><code>${i.id}</code></a>`}${i.timeline === "past" ? html` <${Badge} kind="warn">past<//>` : null}</td>
                <td><time datetime=${i.timestamp}>${formatTime(i.timestamp)}</time></td>
                <td><code>${i.tool}</code></td>
                <td>${i.description}</td>
                <td>${i.lines_changed}</td>
              </tr>`,
            )}
          </tbody>
        </table>
        <${Pager} next=${h.next} atFirst=${cursor === undefined} onFirst=${() => setCursor(undefined)} onNext=${() => setCursor(h.next)} />
      `}
    <//>
  </section>`;
}

/** Revert: the dry run's reverse diff first, then a confirmation, then `timewarp revert ID --json`. */
function Revert({ op, view, onDone }) {
  const [force, setForce] = useState(false);
  return html`<section aria-labelledby="revert">
    <h2 id="revert">Revert</h2>
    <p class="muted">Undo this operation by the rollback ladder; a conflict changes nothing.</p>
    <div class="filters">
      <label style="flex-direction:row;align-items:center;gap:0.4rem">
        <input type="checkbox" checked=${force} onChange=${(e) => setForce(e.currentTarget.checked)} />
        Force: overwrite changes made since
      </label>
    </div>
    <${ActionSteps}
      key=${force ? "force" : "plain"}
      title="Revert"
      path=${`/api/edits/${encodeURIComponent(op.id)}/revert`}
      body=${force ? { force: true } : {}}
      cli=${`timewarp revert ${op.id}${force ? " --force" : ""}`}
      label="Revert"
      confirmLabel="Revert"
      onDone=${onDone}
      renderPreview=${(p, o = {}) => html`
        <p>${p.message}</p>
        <p class="muted">Reverts ${p.revertedIds.map((r) => html`<code>${r}</code> `)} — ${(p.affectedFiles ?? []).length} path(s): ${(p.affectedFiles ?? []).join(", ")}</p>
        ${o.brief ? null : html`<h3>The reverse diff</h3><${DiffBody} patch=${p.reversedDiff} view=${view} />`}
      `}
    />
  </section>`;
}
