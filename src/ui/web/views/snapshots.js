// /snapshots and /snapshots/:id — the snapshots (paged), one snapshot's files and skipped paths,
// a comparison with another snapshot or the workspace now, and (actions allowed) travel,
// return and rewind, each previewed then confirmed, with the time machine's state on top.
import { useState } from "preact/hooks";
import { html } from "../lib/html.js";
import { Badge, formatBytes, formatTime, Loaded, Pager, useApi, useTitle } from "../lib/ui.js";
import { ActionSteps, ResultDoc } from "./action-steps.js";
import { DiffView, diffViewOf, setQuery } from "./diff-view.js";

const ORIGIN = { manual: "by hand", session: "session start", turn: "turn checkpoint" };

export function SnapshotList({ query, workspace }) {
  useTitle("Snapshots");
  const cursor = query.get("cursor") ?? undefined;
  const list = useApi("/api/snapshots", { limit: 50, cursor });
  const status = useApi("/api/status");
  return html`<div data-view="snapshot-list">
    <h1>Snapshots</h1>
    <${TimeMachineState} status=${status} workspace=${workspace} />
    <${Loaded} state=${list}>
      ${(l) => html`
        <p class="muted">${l.total} snapshot(s), newest first.</p>
        <table>
          <thead><tr>
            <th scope="col">Snapshot</th><th scope="col">Kind</th><th scope="col">Time</th><th scope="col">Files</th>
            <th scope="col">Size</th><th scope="col">Captured</th><th scope="col">Session</th><th scope="col">Pinned</th>
          </tr></thead>
          <tbody>
            ${l.items.map(
              (s) => html`<tr>
                <td><a href=${`/snapshots/${s.snapshot_id}`}><code>${s.snapshot_id}</code></a></td>
                <td>${ORIGIN[s.origin] ?? s.origin}</td>
                <td><time datetime=${s.created_at}>${formatTime(s.created_at)}</time></td>
                <td>${s.files}</td>
                <td>${formatBytes(s.bytes)}</td>
                <td>${s.partial ? html`<${Badge} kind="warn">partial: skipped some<//>` : html`<${Badge} kind="ok">whole<//>`}</td>
                <td>${s.session_id ? html`<code>${s.session_id}</code>` : html`<span class="muted">—</span>`}</td>
                <td>${s.pinned ? html`<${Badge} kind="ok">pinned<//>` : html`<span class="muted">no</span>`}</td>
              </tr>`,
            )}
          </tbody>
        </table>
        <${Pager} next=${l.next} atFirst=${cursor === undefined} onFirst=${() => setQuery({ cursor: undefined })} onNext=${() => setQuery({ cursor: l.next })} />
        ${l.corrupt.length > 0 ? html`<h2>Records that do not read</h2><ul>${l.corrupt.map((c) => html`<li><code>${c.id}</code> <strong>${c.code}</strong> ${c.message}</li>`)}</ul>` : null}
      `}
    <//>
  </div>`;
}

/** Where the time machine is: the present, or in the past at a snapshot (with Return). */
function TimeMachineState({ status, workspace, onChange }) {
  // A return or an undone rewind changes the state shown here and what the page around shows.
  const changed = (doc, cli) => {
    status.reload();
    onChange?.(doc, cli);
  };
  return html`<section class="card" aria-label="time machine state">
    <${Loaded} state=${status}>
      ${(s) => html`
        <p style="margin:0">
          ${
            s.mode === "past"
              ? html`<${Badge} kind="warn">in the past<//> at <a href=${`/snapshots/${s.current_snapshot_id}`}><code>${s.current_snapshot_id}</code></a> since <time datetime=${s.entered_at}>${formatTime(s.entered_at)}</time>; the present is kept in <code>${s.backup_path}</code>`
              : html`<${Badge} kind="ok">present<//> the workspace is in the present`
          }
          ${s.transition ? html` <${Badge} kind="bad">interrupted ${s.transition.kind}<//> run <code>timewarp recover</code>` : null}
        </p>
        ${
          s.mode === "past" && workspace?.allow_actions
            ? html`<${ActionSteps}
                title="Return"
                level=${2}
                path="/api/return"
                cli="timewarp return"
                label="Return to present"
                confirmLabel="Return"
                onDone=${changed}
                renderPreview=${(p, o = {}) => html`<${ReturnPreview} preview=${p} brief=${o.brief} />`}
              />`
            : null
        }
        ${
          s.mode === "present" && workspace?.allow_actions
            ? html`<details class="undo-rewind">
                <summary>Undo the last rewind</summary>
                <p class="muted">Takes back the last rewind still in effect: its files as they were before it. A file changed since is a conflict, and nothing changes.</p>
                <${ActionSteps}
                  title="Undo the last rewind"
                  level=${2}
                  path="/api/rewind/undo"
                  cli="timewarp rewind --undo"
                  label="Undo the last rewind"
                  confirmLabel="Undo"
                  onDone=${changed}
                  renderPreview=${(p) => html`<${UndoRewindPreview} preview=${p} />`}
                />
              </details>`
            : null
        }
      `}
    <//>
  </section>`;
}

function UndoRewindPreview({ preview: p }) {
  const files = p.affected_files;
  return html`<p>Takes back <code>${p.rewind_operation_id}</code> (${p.description}): ${files.length} path(s) go back to what they were before it.</p>
    <ul>${files.slice(0, 100).map((f) => html`<li><code>${f}</code></li>`)}</ul>
    ${files.length > 100 ? html`<p class="muted">… and ${files.length - 100} more</p>` : null}`;
}

function ReturnPreview({ preview, brief }) {
  const w = preview.past_work;
  const n =
    w === null
      ? 0
      : w.added.length +
        w.removed.length +
        w.modified.length +
        w.mode_changed.length +
        w.type_changed.length;
  return html`<p>Back to the present from <code>${preview.status.current_snapshot_id}</code>, verified against the backup.
    ${n === 0 ? " Nothing was changed while in the past." : ` ${n} path(s) changed while in the past are kept as a patch in .timewarp/past-work/ (never dropped).`}</p>
    ${w !== null && n > 0 && !brief ? html`<${PathLists} diff=${w} level=${2} />` : null}`;
}

export function SnapshotView({ params, query, workspace }) {
  const id = params.id;
  useTitle(`Snapshot ${id}`);
  // A travel, return or rewind changes what every part shows: load them all again.
  const [epoch, setEpoch] = useState(0);
  const [last, setLast] = useState(undefined);
  const changed = (doc, cli) => {
    setLast(doc === undefined ? undefined : { doc, cli });
    setEpoch((e) => e + 1);
  };
  return html`<div data-view="snapshot">
    <h1>Snapshot <code>${id}</code></h1>
    ${last === undefined ? null : html`<section class="card" aria-label="last action"><${ResultDoc} doc=${last.doc} cli=${last.cli} level=${2} /></section>`}
    <${SnapshotParts} key=${epoch} id=${id} query=${query} workspace=${workspace} onChange=${changed} />
  </div>`;
}

function SnapshotParts({ id, query, workspace, onChange }) {
  const snap = useApi(`/api/snapshots/${encodeURIComponent(id)}`);
  const status = useApi("/api/status");
  return html`
    <${TimeMachineState} status=${status} workspace=${workspace} onChange=${onChange} />
    <${Loaded} state=${snap}>
      ${(d) => html`
        <${Record} record=${d.snapshot} />
        ${workspace?.allow_actions ? html`<${Actions} id=${id} turns=${d.turns} onChange=${onChange} />` : null}
        <${Files} id=${id} query=${query} />
        <${Skipped} record=${d.snapshot} />
        <${Compare} id=${id} query=${query} />
      `}
    <//>`;
}

function Record({ record: r }) {
  return html`<dl class="meta">
    <dt>Kind</dt><dd>${ORIGIN[r.origin ?? "session"] ?? r.origin}</dd>
    <dt>Time</dt><dd><time datetime=${r.created_at}>${formatTime(r.created_at)}</time></dd>
    <dt>Session</dt><dd>${r.session_id ? html`<code>${r.session_id}</code>` : html`<span class="muted">none</span>`}</dd>
    ${r.initial_task_hint ? html`<dt>Task</dt><dd>${r.initial_task_hint}</dd>` : null}
    <dt>Contents</dt><dd>${r.files} files, ${r.dirs} directories, ${r.symlinks} symlinks, ${formatBytes(r.bytes)}</dd>
    <dt>Captured</dt><dd>${r.partial ? html`<${Badge} kind="warn">partial<//> ${r.skipped.length} path(s) skipped` : html`<${Badge} kind="ok">whole<//>`}</dd>
    <dt>Manifest</dt><dd><code>${r.manifest.hash}</code></dd>
  </dl>`;
}

/** Travel here, and rewind to before each turn whose checkpoint this is. */
function Actions({ id, turns, onChange }) {
  return html`<section aria-labelledby="snapshot-actions">
    <h2 id="snapshot-actions">Actions</h2>
    <h3>Travel to this snapshot</h3>
    <p class="muted">The present is backed up first; <em>Return</em> brings it back, verified.</p>
    <${ActionSteps}
      title="Travel"
      path=${`/api/snapshots/${encodeURIComponent(id)}/travel`}
      cli=${`timewarp travel ${id}`}
      label="Travel here"
      confirmLabel="Travel"
      onDone=${onChange}
      renderPreview=${(p, o = {}) => html`<${TravelPreview} preview=${p} brief=${o.brief} />`}
    />
    ${turns.map(
      (t) => html`<h3>Rewind to before turn ${t.turn}</h3>
        <p class="muted">Session <code>${t.session_id}</code>, prompt at <time datetime=${t.created_at}>${formatTime(t.created_at)}</time>: ${t.prompt || "(no prompt text)"}</p>
        <${ActionSteps}
          title=${`Rewind to before turn ${t.turn}`}
          path="/api/rewind"
          body=${{ turn: String(t.turn), session_id: t.session_id }}
          cli=${`timewarp rewind ${t.turn} --session ${t.session_id}`}
          label="Rewind"
          confirmLabel="Rewind"
          onDone=${onChange}
          renderPreview=${(p) => html`<${RewindPreview} preview=${p} />`}
        />`,
    )}
  </section>`;
}

function TravelPreview({ preview: p, brief }) {
  const d = p.difference;
  const past = p.status.mode === "past";
  return html`
    ${past ? html`<p role="alert"><${Badge} kind="warn">in the past<//> already at <code>${p.status.current_snapshot_id}</code>: the time machine refuses a travel from the past (NESTED_TRAVEL); return first.</p>` : null}
    <p>Travel rewrites what differs between the workspace now and <code>${p.snapshot_id}</code>:
      ${d.added.length} path(s) created since are removed, ${d.removed.length} removed since come back, ${d.modified.length} modified are put back${d.mode_changed.length + d.type_changed.length > 0 ? `, ${d.mode_changed.length + d.type_changed.length} change mode or type` : ""}.</p>
    ${brief ? null : html`<${PathLists} diff=${d} level=${4} labels=${{ added: "Removed by the travel (created since)", removed: "Brought back (removed since)", modified: "Put back as they were" }} />`}`;
}

function RewindPreview({ preview: p }) {
  return html`<p>${p.changes.length} path(s) go back to before turn ${p.turn} of <code>${p.session_id}</code>.</p>
    <ul>${p.changes.slice(0, 100).map((c) => html`<li><code>${c.path}</code> <span class="muted">${c.change}</span></li>`)}</ul>
    ${p.changes.length > 100 ? html`<p class="muted">… and ${p.changes.length - 100} more</p>` : null}
    ${p.left_alone.length > 0 ? html`<p class="muted">Left alone: ${p.left_alone.map((l) => `${l.path} (${l.reason})`).join(", ")}</p>` : null}`;
}

/** The lists of a `snapshot diff` document; a path is a button when `onPick` is given. */
function PathLists({ diff, labels = {}, onPick, picked, level = 3 }) {
  const groups = [
    ["added", labels.added ?? "Added", diff.added],
    ["removed", labels.removed ?? "Removed", diff.removed],
    ["modified", labels.modified ?? "Modified", diff.modified],
    ["mode_changed", "Mode changed", diff.mode_changed.map((m) => m.path)],
    ["type_changed", "Type changed", diff.type_changed.map((t) => t.path)],
    ["skipped", "Not captured (not compared)", diff.skipped],
  ].filter(([, , paths]) => paths.length > 0);
  if (groups.length === 0) return html`<p class="muted">No differences.</p>`;
  return groups.map(
    ([key, label, paths]) =>
      html`<${PathGroup} key=${key} label=${label} paths=${paths} onPick=${key === "skipped" ? undefined : onPick} picked=${picked} level=${level} />`,
  );
}

const SHOWN = 200;

function PathGroup({ label, paths, onPick, picked, level }) {
  const [all, setAll] = useState(false);
  const shown = all ? paths : paths.slice(0, SHOWN);
  const H = `h${level}`;
  return html`<${H}>${label} <span class="muted">(${paths.length})</span><//>
    <ul class="paths">
      ${shown.map(
        (p) =>
          html`<li>${
            onPick
              ? html`<button type="button" class="link" aria-pressed=${p === picked ? "true" : "false"} onClick=${() => onPick(p)}><code>${p}</code></button>`
              : html`<code>${p}</code>`
          }</li>`,
      )}
    </ul>
    ${paths.length > SHOWN && !all ? html`<button type="button" onClick=${() => setAll(true)}>Show all ${paths.length}</button>` : null}`;
}

/** The manifest's entries, paged, filtered by a glob kept in `?glob=`. */
function Files({ id, query }) {
  const glob = query.get("glob") ?? "";
  const [cursor, setCursor] = useState(undefined);
  const [draft, setDraft] = useState(glob);
  const files = useApi(`/api/snapshots/${encodeURIComponent(id)}/files`, {
    glob,
    limit: 100,
    cursor,
  });
  return html`<section aria-labelledby="snapshot-files">
    <h2 id="snapshot-files">Files</h2>
    <form class="filters" role="search" onSubmit=${(e) => {
      e.preventDefault();
      setCursor(undefined);
      setQuery({ glob: draft });
    }}>
      <label>Path glob <input type="search" value=${draft} placeholder="src/**/*.ts" onInput=${(e) => setDraft(e.currentTarget.value)} /></label>
      <button type="submit">Filter</button>
    </form>
    <${Loaded} state=${files}>
      ${(f) => html`
        <p class="muted">${f.total} entr${f.total === 1 ? "y" : "ies"}${glob ? html` matching <code>${glob}</code>` : ""}.</p>
        <table>
          <thead><tr><th scope="col">Path</th><th scope="col">Type</th><th scope="col">Mode</th><th scope="col">Size</th></tr></thead>
          <tbody>
            ${f.items.map(
              (e) => html`<tr>
                <td><code>${e.path}</code>${e.type === "symlink" ? html` <span class="muted">→ <code>${e.target ?? "(bytes)"}</code></span>` : null}</td>
                <td>${e.type}</td><td><code>${e.mode}</code></td><td>${e.type === "dir" ? "—" : formatBytes(e.size)}</td>
              </tr>`,
            )}
          </tbody>
        </table>
        <${Pager} next=${f.next} atFirst=${cursor === undefined} onFirst=${() => setCursor(undefined)} onNext=${() => setCursor(f.next)} />
      `}
    <//>
  </section>`;
}

function Skipped({ record }) {
  if (record.skipped.length === 0) return null;
  return html`<section aria-labelledby="snapshot-skipped">
    <h2 id="snapshot-skipped">Skipped paths</h2>
    <p class="muted">Not captured, so never restored, deleted or compared.</p>
    <table>
      <thead><tr><th scope="col">Path</th><th scope="col">Reason</th><th scope="col">Detail</th></tr></thead>
      <tbody>${record.skipped.map((s) => html`<tr><td><code>${s.path}</code></td><td>${s.reason}</td><td>${s.detail}</td></tr>`)}</tbody>
    </table>
  </section>`;
}

/** `timewarp snapshot diff ID [B]`, with the other side (`?to=`) and a file (`?file=`) in the URL. */
function Compare({ id, query }) {
  const to = query.get("to") ?? "workspace";
  const file = query.get("file") ?? undefined;
  const others = useApi("/api/snapshots", { limit: 500 });
  const diff = useApi(`/api/snapshots/${encodeURIComponent(id)}/diff`, { to });
  return html`<section aria-labelledby="snapshot-compare">
    <h2 id="snapshot-compare">Compare</h2>
    <div class="filters">
      <label>Compare with
        <select value=${to} onChange=${(e) => setQuery({ to: e.currentTarget.value === "workspace" ? undefined : e.currentTarget.value, file: undefined })}>
          <option value="workspace">the workspace now</option>
          ${(others.data?.items ?? []).filter((s) => s.snapshot_id !== id).map((s) => html`<option value=${s.snapshot_id}>${s.snapshot_id} (${formatTime(s.created_at)})</option>`)}
        </select>
      </label>
    </div>
    <${Loaded} state=${diff}>
      ${(d) => html`
        <p class="muted">From <code>${d.from}</code> to <code>${d.to}</code>. Choose a path to see its diff.</p>
        <${PathLists} diff=${d} onPick=${(p) => setQuery({ file: p })} picked=${file} />
        ${file ? html`<${FileDiff} id=${id} to=${to} path=${file} view=${diffViewOf(query)} />` : null}
      `}
    <//>
  </section>`;
}

function FileDiff({ id, to, path, view }) {
  const d = useApi(`/api/snapshots/${encodeURIComponent(id)}/diff/file`, { to, path });
  return html`<section aria-labelledby="file-diff">
    <h3 id="file-diff">Diff of <code>${path}</code></h3>
    <${Loaded} state=${d}>
      ${(f) =>
        f.omitted
          ? html`<p class="muted">No text diff: ${f.omitted === "binary" ? "binary content" : f.omitted === "too_large" ? "a side is over 4 MiB" : "a directory"} (${f.before ? formatBytes(f.before.size) : "absent"} → ${f.after ? formatBytes(f.after.size) : "absent"}).</p>`
          : html`<${DiffView} id="snapshot-file" patch=${f.diff} view=${view} label="diff layout" empty="The content is the same on both sides." />`}
    <//>
  </section>`;
}
