// Runs: SkillPilot jobs and their run directories (timeline, requests/acks, reports, bundle, metrics).
import { useState } from "preact/hooks";
import { html } from "../lib/html.js";
import { Badge, ErrorBox, formatBytes, formatTime, Loaded, useApi, useTitle } from "../lib/ui.js";
import {
  Chart,
  duration,
  Facts,
  num,
  PALETTE,
  QueryPager,
  setQuery,
  TabPanel,
  Tabs,
} from "./parts.js";

function StatusBadge({ status }) {
  const kind = status === "PASS" ? "ok" : status === "FAIL" ? "bad" : "warn";
  return html`<${Badge} kind=${kind}>${status}<//>`;
}

function failureText(error_type, detail_code) {
  if (!error_type || error_type === "OK") return error_type ?? "–";
  return detail_code ? `${error_type} (${detail_code})` : error_type;
}

/** A time of day to the millisecond: a job's states follow each other within a second. */
function clockTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso ?? "");
  return d.toLocaleTimeString(undefined, { hour12: false, fractionalSecondDigits: 3 });
}

function jobDuration(j) {
  if (!j.created_at || !j.finished_at) return "–";
  return duration(Date.parse(j.finished_at) - Date.parse(j.created_at));
}

export function RunList({ query }) {
  useTitle("Runs");
  const state = useApi("/api/runs", { cursor: query.get("cursor") ?? undefined });
  return html`<section data-view="run-list">
    <h1>Runs</h1>
    <p class="muted">SkillPilot jobs of this workspace (<code>.skillpilot/runs/</code>), newest first.</p>
    <${Loaded} state=${state}>${(page) => html`
      ${
        page.items.length === 0
          ? html`<p>No jobs yet. <code>timewarp skill run SKILL --design QUERY</code> starts one.</p>`
          : html`
      <table>
        <thead><tr><th scope="col">Job</th><th scope="col">Skill</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Failure</th></tr></thead>
        <tbody>${page.items.map(
          (j) => html`<tr>
            <td><a href=${`/runs/${j.job_id}`}><code>${j.job_id}</code></a></td>
            <td>${j.skill ?? "–"}</td>
            <td><${StatusBadge} status=${j.status} />${j.resumable ? html` <${Badge} kind="warn">resumable<//>` : ""}</td>
            <td>${formatTime(j.created_at)}</td>
            <td>${jobDuration(j)}</td>
            <td>${failureText(j.error_type, j.detail_code)}</td>
          </tr>`,
        )}</tbody>
      </table>`
      }
      <p class="muted">${page.total} job${page.total === 1 ? "" : "s"}</p>
      <${QueryPager} query=${query} next=${page.next} />`}
    <//>
  </section>`;
}

function fileUrl(job, path, download = false) {
  const q = new URLSearchParams({ path });
  if (download) q.set("download", "1");
  return `/api/runs/${encodeURIComponent(job)}/file?${q}`;
}

/** A run-directory file: shown inline on demand (text), or downloaded. */
function FileRow({ job, file }) {
  const [shown, setShown] = useState(undefined);
  const show = async () => {
    if (shown !== undefined) return setShown(undefined);
    try {
      const res = await fetch(fileUrl(job, file.path), { credentials: "same-origin" });
      const text = await res.text();
      if (!res.ok) {
        let err = { code: `HTTP_${res.status}`, message: text };
        try {
          err = JSON.parse(text).error ?? err;
        } catch {}
        return setShown({ error: err });
      }
      setShown({ text });
    } catch (e) {
      setShown({ error: { code: "NETWORK", message: e.message } });
    }
  };
  return html`<tr>
    <td><code>${file.path}</code>${file.symlink ? html` <${Badge}>symlink<//>` : ""}</td>
    <td>${formatBytes(file.bytes)}</td>
    <td>
      <button type="button" onClick=${show} aria-expanded=${shown !== undefined ? "true" : "false"}>${shown === undefined ? "Show" : "Hide"}<span class="sr-only"> ${file.path}</span></button>
      ${" "}<a href=${fileUrl(job, file.path, true)} download>Download<span class="sr-only"> ${file.path}</span></a>
    </td>
  </tr>
  ${shown !== undefined && html`<tr><td colspan="3">${shown.error ? html`<${ErrorBox} error=${shown.error} />` : html`<pre class="doc" tabindex="0">${shown.text}</pre>`}</td></tr>`}`;
}

function FileTable({ job, files, caption }) {
  if (files.length === 0) return html`<p class="muted">${caption}: none.</p>`;
  return html`<table>
    <caption>${caption}</caption>
    <thead><tr><th scope="col">File</th><th scope="col">Size</th><th scope="col">Open</th></tr></thead>
    <tbody>${files.map((f) => html`<${FileRow} job=${job} file=${f} />`)}</tbody>
  </table>`;
}

/** Where a state sits in the job's time, as a bar (the table beside it has the numbers). */
function spanBar(s, t0, total) {
  if (!(total > 0)) return null;
  const left = ((Date.parse(s.entered_at) - t0) / total) * 100;
  const width = s.duration_ms === null ? 100 - left : Math.max(0.5, (s.duration_ms / total) * 100);
  return html`<div class="span-track" aria-hidden="true"><div class="span-bar" style=${`margin-left:${left.toFixed(2)}%;width:${width.toFixed(2)}%`}></div></div>`;
}

function TimelinePanel({ files }) {
  const times = files.timeline.map((e) => Date.parse(e.ts)).filter((t) => !Number.isNaN(t));
  const t0 = Math.min(...times);
  const total = Math.max(...times) - t0;
  return html`
    <h2>States</h2>
    <table>
      <thead><tr><th scope="col">State</th><th scope="col">Entered</th><th scope="col">Left</th><th scope="col">Took</th><th scope="col">In the job's time</th></tr></thead>
      <tbody>${files.states.map(
        (s) => html`<tr>
          <td><code>${s.state}</code>${s.left_by ? html` <${Badge} kind="warn">left: ${s.left_by}<//>` : ""}</td>
          <td>${clockTime(s.entered_at)}</td>
          <td>${s.exited_at ? clockTime(s.exited_at) : html`<${Badge} kind="warn">open<//>`}</td>
          <td>${duration(s.duration_ms)}</td>
          <td class="span-cell">${spanBar(s, t0, total)}</td>
        </tr>`,
      )}</tbody>
    </table>
    <h2>Events <span class="muted">(job_timeline.jsonl, ${files.timeline.length})</span></h2>
    <table>
      <thead><tr><th scope="col">Time</th><th scope="col">Level</th><th scope="col">Event</th><th scope="col">State</th><th scope="col">Message / data</th></tr></thead>
      <tbody>${files.timeline.map(
        (e) => html`<tr>
          <td>${clockTime(e.ts)}</td>
          <td><${Badge} kind=${e.level === "ERROR" ? "bad" : e.level === "WARN" ? "warn" : ""}>${e.level}<//></td>
          <td><code>${e.event}</code></td>
          <td>${e.state ?? ""}</td>
          <td class="wrap">${e.message ?? ""}${e.data ? html`<div><code class="small">${JSON.stringify(e.data)}</code></div>` : ""}</td>
        </tr>`,
      )}</tbody>
    </table>`;
}

function RequestsPanel({ files }) {
  if (files.requests.length === 0) return html`<p>No requests were made.</p>`;
  return html`<table>
    <thead><tr><th scope="col">Request</th><th scope="col">Script</th><th scope="col">Queue</th><th scope="col">Ack</th><th scope="col">Took</th><th scope="col">Message</th></tr></thead>
    <tbody>${files.requests.map(
      (r) => html`<tr>
        <td><code>${r.request_id}</code></td>
        <td><code>${r.request?.script ?? r.ack?.script ?? "–"}</code></td>
        <td>${r.queue_state}<div class="muted small">${r.queue_files.map((f) => f.slice(r.request_id.length)).join(", ")}</div></td>
        <td>${r.ack ? html`<${StatusBadge} status=${r.ack.status} /> ${failureText(r.ack.error_type, r.ack.detail_code)}${r.ack.by ? html`<div class="muted small">by ${r.ack.by}</div>` : ""}` : html`<${Badge} kind="warn">no ack<//>`}</td>
        <td>${duration(r.ack?.duration_ms)}</td>
        <td>${r.ack?.message ?? ""}</td>
      </tr>`,
    )}</tbody>
  </table>`;
}

function SummaryPanel({ job }) {
  const s = job.summary;
  const m = job.manifest;
  return html`
    <h2>Failure taxonomy</h2>
    <${Facts} rows=${[
      ["Status", html`<${StatusBadge} status=${m.status} />`],
      ["error_type", html`<code>${m.error_type ?? "–"}</code>`],
      ["detail_code", m.detail_code && html`<code>${m.detail_code}</code>`],
      ["Message", m.message],
      ["Closed", m.closed_reason],
    ]} />
    ${
      s === null
        ? html`<p>No summary.json yet.</p>`
        : html`
      <h2>summary.json</h2>
      <${Facts} rows=${[
        [
          "Findings",
          s.findings?.length ? html`<ul>${s.findings.map((f) => html`<li>${f}</li>`)}</ul>` : null,
        ],
        [
          "Risks",
          s.risks?.length ? html`<ul>${s.risks.map((f) => html`<li>${f}</li>`)}</ul>` : null,
        ],
        ["Duration", s.duration_ms !== undefined ? duration(s.duration_ms) : null],
      ]} />
      <table>
        <caption>Metrics of this job</caption>
        <thead><tr><th scope="col">Metric</th><th scope="col">Value</th></tr></thead>
        <tbody>${Object.entries(s.metrics).map(([k, v]) => html`<tr><td><code>${k}</code></td><td>${typeof v === "object" ? JSON.stringify(v) : num(v)}</td></tr>`)}</tbody>
      </table>`
    }
    ${job.files.summary_md !== null && html`<h2>summary.md</h2><pre class="doc" tabindex="0">${job.files.summary_md}</pre>`}`;
}

function BundlePanel({ job }) {
  const b = job.files.debug_bundle;
  if (b === null) return html`<p>No debug bundle (a job writes one when it fails).</p>`;
  return html`
    ${
      b.index &&
      html`<${Facts} rows=${[
        ["Summary", b.index.summary],
        [
          "Failing ack",
          b.index.pointers.last_fail_ack && html`<code>${b.index.pointers.last_fail_ack}</code>`,
        ],
        [
          "errorInfo",
          b.index.pointers.error_info && html`<code>${b.index.pointers.error_info}</code>`,
        ],
        ["Next actions", html`<ol>${b.index.next_actions.map((a) => html`<li>${a}</li>`)}</ol>`],
      ]} />`
    }
    <${FileTable} job=${job.job_id} files=${b.files} caption="debug_bundle/" />`;
}

/** Every job of the skill: one series per metric they all share, and the numbers in a table. */
function MetricsPanel({ jobId }) {
  const state = useApi(`/api/runs/${encodeURIComponent(jobId)}/metrics`);
  return html`<${Loaded} state=${state}>${(m) => {
    const jobs = m.jobs.filter((j) => Object.keys(j.metrics).length > 0);
    if (jobs.length === 0 || m.shared.length === 0)
      return html`<p>No numeric metrics shared by the jobs of <code>${m.skill}</code> (a subskill writes them to <code>reports/metrics.json</code>).</p>`;
    const byTime = jobs.every((j) => j.created_at);
    const xs = jobs.map((j, i) => (byTime ? Date.parse(j.created_at) / 1000 : i + 1));
    const data = [xs, ...m.shared.map((k) => jobs.map((j) => j.metrics[k]))];
    const series = [
      { label: byTime ? "started" : "job" },
      ...m.shared.map((k, i) => ({
        label: k,
        scale: k,
        stroke: PALETTE[i % PALETTE.length],
        width: 2,
        points: { show: true },
      })),
    ];
    const scales = { x: { time: byTime } };
    for (const k of m.shared) scales[k] = { auto: true };
    const axes = [{}, { scale: m.shared[0], label: m.shared[0] }];
    return html`
      <p>${jobs.length} job${jobs.length === 1 ? "" : "s"} of <code>${m.skill}</code> with metrics; each series has its own scale (hover for values).</p>
      <${Chart} label=${`metrics of the jobs of ${m.skill} over their start times: ${m.shared.join(", ")}`} data=${data} series=${series} scales=${scales} axes=${axes} />
      <table>
        <caption>Metrics per job (oldest first)</caption>
        <thead><tr><th scope="col">Job</th><th scope="col">Started</th>${m.shared.map((k) => html`<th scope="col"><code>${k}</code></th>`)}</tr></thead>
        <tbody>${jobs.map(
          (j) => html`<tr aria-current=${j.job_id === jobId ? "true" : undefined}>
            <td><a href=${`/runs/${j.job_id}?tab=metrics`}><code>${j.job_id}</code></a></td>
            <td>${formatTime(j.created_at)}</td>
            ${m.shared.map((k) => html`<td>${num(j.metrics[k])}</td>`)}
          </tr>`,
        )}</tbody>
      </table>`;
  }}<//>`;
}

const TABS = [
  ["timeline", "Timeline"],
  ["requests", "Requests & acks"],
  ["reports", "Reports"],
  ["summary", "Summary"],
  ["bundle", "Debug bundle"],
  ["metrics", "Metrics"],
];

function RunBody({ job, query }) {
  const m = job.manifest;
  const tab = TABS.some(([id]) => id === query.get("tab")) ? query.get("tab") : "timeline";
  return html`
    <p><${StatusBadge} status=${m.status} /> ${failureText(m.error_type, m.detail_code)}${job.resumable ? html` · <${Badge} kind="warn">resumable<//> until ${formatTime(job.resumable.until)}: <code>timewarp skill resume ${job.job_id}</code>` : ""}</p>
    <${Facts} rows=${[
      ["Skill", `${m.skill.name} ${m.skill.version}`],
      ["Design", html`<code>${m.design.enc_path || m.design.locator.query}</code>`],
      ["Adapter", m.runtime.adapter],
      ["Started", formatTime(m.created_at)],
      ["Finished", m.finished_at && formatTime(m.finished_at)],
      [
        "Scheduler",
        m.runtime.scheduler &&
          `${m.runtime.scheduler.kind} job ${m.runtime.scheduler.job_id ?? "?"} ${m.runtime.scheduler.state ?? ""}`,
      ],
      ["Run directory", html`<code>${job.run_dir}</code>`],
    ]} />
    <${Tabs} label="job" tabs=${TABS} current=${tab} onSelect=${(id) => setQuery(query, { tab: id })} />
    <${TabPanel} id=${tab}>
      ${tab === "timeline" && html`<${TimelinePanel} files=${job.files} />`}
      ${tab === "requests" && html`<h2>Requests and acks</h2><${RequestsPanel} files=${job.files} />`}
      ${tab === "reports" && html`<h2>Reports</h2><${FileTable} job=${job.job_id} files=${job.files.reports} caption="reports/" /><${FileTable} job=${job.job_id} files=${job.files.session} caption="session/" />`}
      ${tab === "summary" && html`<${SummaryPanel} job=${job} />`}
      ${tab === "bundle" && html`<h2>Debug bundle</h2><${BundlePanel} job=${job} />`}
      ${tab === "metrics" && html`<h2>Metrics across jobs of ${m.skill.name}</h2><${MetricsPanel} jobId=${job.job_id} />`}
    <//>`;
}

export function RunView({ params, query }) {
  useTitle(`Job ${params.job}`);
  const state = useApi(`/api/runs/${encodeURIComponent(params.job)}`);
  return html`<section data-view="run">
    <p><a href="/runs">← Runs</a></p>
    <h1>Job <code>${params.job}</code></h1>
    <${Loaded} state=${state}>${(job) => html`<${RunBody} job=${job} query=${query} />`}<//>
  </section>`;
}
