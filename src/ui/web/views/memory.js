// Memory: runs of the memory lab — events, guards with the drift score over steps, cards, views.
import { html } from "../lib/html.js";
import { Badge, formatTime, Loaded, useApi, useTitle } from "../lib/ui.js";
import { Chart, Facts, num, QueryPager, setQuery } from "./parts.js";

function ActionBadge({ action }) {
  return html`<${Badge} kind=${action === "rollback" ? "bad" : action === "warn" ? "warn" : "ok"}>${action}<//>`;
}

export function MemoryList({ query }) {
  useTitle("Memory");
  const state = useApi("/api/memory", { cursor: query.get("cursor") ?? undefined });
  return html`<section data-view="memory-list">
    <h1>Memory runs</h1>
    <p class="muted">Runs of the memory lab (<code>.timewarp/memory/runs/</code>), most recently changed first.</p>
    <${Loaded} state=${state}>${(page) => html`
      ${
        page.items.length === 0
          ? html`<p>No runs yet. <code>timewarp memory import FILE</code> makes one from an agent's own record; <code>timewarp memory e2e RUN</code> takes it through events, guards and a card.</p>`
          : html`
      <table>
        <thead><tr><th scope="col">Run</th><th scope="col">Objective</th><th scope="col">Events</th><th scope="col">Warn</th><th scope="col">Rollback</th><th scope="col">Max drift</th><th scope="col">Changed</th></tr></thead>
        <tbody>${page.items.map(
          (r) => html`<tr>
            <td><a href=${`/memory/${encodeURIComponent(r.run_id)}`}><code>${r.run_id}</code></a></td>
            <td>${r.objective ?? html`<span class="muted">no goal</span>`}</td>
            <td>${r.events ?? "–"}</td>
            <td>${r.guards === null ? "–" : r.warn}</td>
            <td>${r.guards === null ? "–" : r.rollback}</td>
            <td>${r.guards === null ? "not scored" : num(r.max_drift)}</td>
            <td>${formatTime(r.modified_at)}</td>
          </tr>`,
        )}</tbody>
      </table>`
      }
      <p class="muted">${page.total} run${page.total === 1 ? "" : "s"}</p>
      <${QueryPager} query=${query} next=${page.next} />`}
    <//>
  </section>`;
}

/** Whole steps on the x axis (uPlot would otherwise tick at 0.25). */
const STEP_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];

/** The drift score of every guard record over its step, with the goal's thresholds as lines. */
function DriftChart({ run }) {
  const g = run.guards;
  if (g.length === 0)
    return html`<p>No guard records: <code>timewarp memory guards ${run.run_id}</code> scores the events.</p>`;
  const steps = g.map((r) => r.step);
  const data = [
    steps,
    g.map((r) => r.drift_score),
    g.map(() => run.thresholds.warn),
    g.map(() => run.thresholds.rollback),
  ];
  const series = [
    { label: "step" },
    { label: "drift_score", stroke: "#2f6fdb", width: 2, points: { show: true } },
    {
      label: `warn ≥ ${run.thresholds.warn}`,
      stroke: "#e67700",
      dash: [6, 4],
      points: { show: false },
    },
    {
      label: `rollback ≥ ${run.thresholds.rollback}`,
      stroke: "#c92a2a",
      dash: [2, 3],
      points: { show: false },
    },
  ];
  return html`<${Chart}
    label=${`drift score over ${g.length} steps; thresholds warn ${run.thresholds.warn}, rollback ${run.thresholds.rollback}; highest ${num(Math.max(...g.map((r) => r.drift_score)))}`}
    data=${data}
    series=${series}
    scales=${{ x: { time: false }, y: { range: [0, 1] } }}
    axes=${[{ label: "step", incrs: STEP_INCRS }, { label: "drift score" }]}
  />`;
}

function GuardTable({ guards }) {
  return html`<table>
    <caption>Guard records (guards.jsonl)</caption>
    <thead><tr><th scope="col">Step</th><th scope="col">Tool</th><th scope="col">File / command</th><th scope="col">Scope</th><th scope="col">Plan</th><th scope="col">Test</th><th scope="col">Evidence</th><th scope="col">Drift</th><th scope="col">Action</th><th scope="col">Why</th></tr></thead>
    <tbody>${guards.map(
      (r) => html`<tr>
        <td>${r.step}</td>
        <td>${r.tool}</td>
        <td><code>${r.file ?? r.cmd ?? ""}</code>${r.fix_cmd ? html`<div class="small">fix: <code>${r.fix_cmd}</code></div>` : ""}</td>
        <td>${num(r.scope_guard)}</td><td>${num(r.plan_guard)}</td><td>${num(r.test_guard)}</td><td>${num(r.evidence_guard)}</td>
        <td>${num(r.drift_score)}</td>
        <td><${ActionBadge} action=${r.action} /></td>
        <td>${r.reasons.join("; ")}</td>
      </tr>`,
    )}</tbody>
  </table>`;
}

const KINDS = ["", "edit", "plan", "shell"];

function resultText(r) {
  if (!r) return "";
  return `${r.framework}: ${r.passed} passed, ${r.failed} failed${r.exit_code !== null && r.exit_code !== undefined ? `, exit ${r.exit_code}` : ""}`;
}

function EventsSection({ run, query }) {
  const kind = KINDS.includes(query.get("kind") ?? "") ? (query.get("kind") ?? "") : "";
  const page = run.events;
  return html`<section aria-labelledby="events-h">
    <h2 id="events-h">Events <span class="muted">(${page.total} shown of ${page.all})</span></h2>
    <div class="filters">
      <label>Kind
        <select value=${kind} onChange=${(e) => setQuery(query, { kind: e.target.value, cursor: undefined })}>
          ${KINDS.map((k) => html`<option value=${k}>${k === "" ? "all" : k}</option>`)}
        </select>
      </label>
    </div>
    <table>
      <thead><tr><th scope="col">Step</th><th scope="col">Phase</th><th scope="col">Kind</th><th scope="col">Where / command</th><th scope="col">Source</th><th scope="col">Confidence</th><th scope="col">Result</th></tr></thead>
      <tbody>${page.items.map(
        (e) => html`<tr id=${`event-${e.step}`}>
          <td>${e.step}</td>
          <td>${e.phase}</td>
          <td>${e.tool}${e.claim ? html` <${Badge} kind="warn">claim<//>` : ""}</td>
          <td><code>${e.where ?? e.cmd ?? ""}</code>${e.why ? html`<div class="muted small">${e.why}</div>` : ""}</td>
          <td>${e.source ?? ""}</td>
          <td>${num(e.confidence)}</td>
          <td>${resultText(e.result)}</td>
        </tr>`,
      )}</tbody>
    </table>
    <${QueryPager} query=${query} next=${page.next} />
  </section>`;
}

function CardsSection({ run, query }) {
  return html`<section aria-labelledby="cards-h">
    <h2 id="cards-h">Pattern cards from this run</h2>
    <div class="filters">
      <label>View for user
        <select value=${run.user} onChange=${(e) => setQuery(query, { user: e.target.value })}>
          ${[...new Set(["default", ...run.users, run.user])].map((u) => html`<option value=${u}>${u}</option>`)}
        </select>
      </label>
      <span>${html`<${Badge}>${run.route.view}<//>`} ${run.route.reason}${run.profile_found ? "" : " (no profile for this user)"}</span>
    </div>
    ${
      run.cards.length === 0
        ? html`<p>No card in the libraries names this run (<code>timewarp memory card ${run.run_id}</code> distills one from a successful run).</p>`
        : run.cards.map(
            (c) => html`<article class="card">
        <h3>${c.card.title} <code class="small">${c.card.pattern_id}</code></h3>
        <${Facts} rows=${[
          [
            "From runs",
            html`${c.card.provenance.source_runs.map((r, i) => html`${i > 0 ? ", " : ""}<a href=${`/memory/${encodeURIComponent(r)}`}><code>${r}</code></a>`)}`,
          ],
          [
            "Events it names",
            c.event_steps.length === 0
              ? "none"
              : html`${c.event_steps.map((s, i) => html`${i > 0 ? ", " : ""}<a href=${`#event-${s}`}>step ${s}</a>`)}`,
          ],
          [
            "Made by",
            `${c.card.provenance.created_by}, ${formatTime(c.card.provenance.created_at)}${c.card.provenance.reflected ? " (reflected)" : ""}`,
          ],
          ["Uses", c.card.uses],
          ["File", html`<code>${c.file}</code>`],
        ]} />
        <h4>As ${run.user} sees it (${run.route.view})</h4>
        <pre class="doc" tabindex="0">${c.text}</pre>
      </article>`,
          )
    }
  </section>`;
}

function MemoryRunBody({ run, query }) {
  const goal = run.goal;
  const s = run.summary;
  return html`
    ${
      goal
        ? html`<${Facts} rows=${[
            ["Objective", goal.objective],
            [
              "Edit only",
              goal.whitelist.length ? goal.whitelist.join(", ") : "anything not blacklisted",
            ],
            ["Never edit", goal.blacklist.join(", ")],
            ["Protected", goal.protected.join(", ")],
            ["Required tests", goal.required_tests.join(", ")],
            [
              "Guards",
              s &&
                `${s.ok} ok, ${s.warn} warn, ${s.rollback} rollback; checkpoints reached: ${s.checkpoints_reached.join(", ") || "none"}`,
            ],
          ]} />`
        : html`<p class="muted">This run has no readable goal.json.</p>`
    }
    ${run.warnings.length > 0 && html`<details><summary>${run.warnings.length} warning(s)</summary><ul>${run.warnings.map((w) => html`<li>${w}</li>`)}</ul></details>`}
    <section aria-labelledby="drift-h">
      <h2 id="drift-h">Drift score over steps</h2>
      <${DriftChart} run=${run} />
      ${run.guards.length > 0 && html`<${GuardTable} guards=${run.guards} />`}
    </section>
    <${EventsSection} run=${run} query=${query} />
    <${CardsSection} run=${run} query=${query} />`;
}

export function MemoryRunView({ params, query }) {
  useTitle(`Memory run ${params.run}`);
  const state = useApi(`/api/memory/${encodeURIComponent(params.run)}`, {
    kind: query.get("kind") ?? undefined,
    user: query.get("user") ?? undefined,
    cursor: query.get("cursor") ?? undefined,
  });
  return html`<section data-view="memory-run">
    <p><a href="/memory">← Memory runs</a></p>
    <h1>Memory run <code>${params.run}</code></h1>
    <${Loaded} state=${state}>${(run) => html`<${MemoryRunBody} run=${run} query=${query} />`}<//>
  </section>`;
}
