import { ErrorCode, TimewarpError } from "../core/index.ts";
import { type CompiledGoal, compileGoal } from "./goal.ts";
import type { Goal, GuardAction, GuardRecord, MemoryEvent, Weights } from "./schemas.ts";
import { runVerdict } from "./verdict.ts";

/** Sources that record an edit exactly: the edit itself is its evidence. */
const EXACT_SOURCES = new Set(["transcript", "trajectory", "patch", "ledger", "bus", "git"]);

/** Options for guard scoring; all optional. */
export interface GuardOptions {
  /** The workspace is a git work tree: rollback of a path is `git checkout -- <file>`. */
  gitWorkTree?: boolean;
}

/** The four guard values of one event, each in [0, 1] (1 = full violation). */
export interface GuardScores {
  scope: number;
  plan: number;
  test: number;
  evidence: number;
}

/**
 * Weighted drift, measured in units of the heaviest guard that applies to the event:
 * `min(1, Σ wᵢ·gᵢ / max wᵢ)` over the applicable guards (edits: scope, plan, evidence; tests:
 * test). A full violation of the heaviest guard alone reaches 1.0 (rollback); lighter guards
 * reach rollback only together. See README.md for why not the seed's plain sum.
 */
export function driftScore(
  scores: GuardScores,
  weights: Weights,
  applicable: (keyof GuardScores)[],
): number {
  let sum = 0;
  let unit = 0;
  for (const k of applicable) {
    sum += weights[k] * scores[k];
    unit = Math.max(unit, weights[k]);
  }
  if (unit === 0) return 0;
  return round(Math.min(1, sum / unit));
}

/** `ok < warn ≤ drift < rollback ≤ drift`. */
export function actionFor(
  drift: number,
  thresholds: { warn: number; rollback: number },
): GuardAction {
  if (drift >= thresholds.rollback) return "rollback";
  if (drift >= thresholds.warn) return "warn";
  return "ok";
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

/** Markers that make a failing test pass without fixing anything. */
const TAMPER_MARKERS: { re: RegExp; label: string }[] = [
  {
    re: /@pytest\.mark\.(skip|skipif|xfail)\b|\bpytest\.skip\(|@unittest\.skip/,
    label: "pytest/unittest skip marker",
  },
  {
    re: /\b(it|test|describe)\.(skip|todo)\s*\(|\bx(it|describe|test)\s*\(/,
    label: "jest/vitest/mocha skip",
  },
  { re: /\bt\.Skip(Now|f)?\(/, label: "go t.Skip" },
  { re: /#\[ignore\]/, label: "rust #[ignore]" },
  { re: /@(Disabled|Ignore)\b/, label: "JUnit @Disabled/@Ignore" },
  { re: /\b(sys\.|process\.|os\.)?[eE]xit\(\s*0\s*\)/, label: "exit(0)" },
];

/** Test commands that cannot fail any more. */
const MASKED_TEST_CMD: { re: RegExp; label: string }[] = [
  { re: /\|\|\s*(true|:|exit\s+0)\b/, label: "`|| true` masks the exit code" },
  { re: /;\s*exit\s+0\b/, label: "`; exit 0` masks the exit code" },
  { re: /--deselect\b|-k\s+["']?not\b/, label: "deselects tests" },
  { re: /--passWithNoTests\b|--bail\s*=?\s*0\b/, label: "passes with no tests" },
  { re: /\b-run\s+['"]?\^\$/, label: "runs no tests" },
];

const TEST_PATH =
  /(^|\/)(tests?|__tests__|spec|specs)\/|\.(test|spec)\.[cm]?[jt]sx?$|(^|\/)test_[^/]*\.py$|_test\.(py|go)$|Tests?\.(java|kt|cs)$/;

/** Does the path look like a test file (any common layout)? */
export function isTestPath(path: string): boolean {
  return TEST_PATH.test(path);
}

/** The tamper markers found in text that an edit adds. */
export function findTamperMarkers(addedText: string): string[] {
  return TAMPER_MARKERS.filter((m) => m.re.test(addedText)).map((m) => m.label);
}

/** Lines a diff adds (`+` lines), or the whole text when it is not a diff. */
function addedText(text: string): string {
  if (!/^(@@|\+\+\+|---|diff --git)/m.test(text)) return text;
  return text
    .split("\n")
    .filter((l) => l.startsWith("+") && !l.startsWith("+++"))
    .map((l) => l.slice(1))
    .join("\n");
}

/** Strip a trailing `:line` or `:start-end` from an event's `where`. */
export function pathOfWhere(where: string | undefined): string | undefined {
  if (where === undefined || where === "") return undefined;
  return where.replace(/:\d+(-\d+)?$/, "").replace(/:\?$/, "");
}

interface ScopeVerdict {
  scope: number;
  reasons: string[];
  path?: string;
  outOfScope: boolean;
  /** The verdict does not depend on the edit's content (no tamper check applied): cacheable per path. */
  pathOnly?: boolean;
  /** The path is on the goal's blacklist: a rule, not a score (see `runGuards`). */
  blacklisted?: boolean;
}

function scopeOf(
  compiled: CompiledGoal,
  rawPath: string | undefined,
  evidence: string | undefined,
): ScopeVerdict {
  if (rawPath === undefined) {
    return { scope: 0.5, reasons: ["scope: edit location unknown"], outOfScope: false };
  }
  const c = compiled.classify(rawPath);
  const path = c.path;
  if (c.outside)
    return {
      scope: 1,
      reasons: [`scope: ${rawPath} is outside the workspace`],
      path,
      outOfScope: true,
    };
  const goal = compiled.goal;
  const reasons: string[] = [];
  let scope = 0;
  let outOfScope = false;
  if (c.baseline) {
    return {
      scope: 0,
      reasons: [`scope: ${path} was modified before the run started (baseline)`],
      path,
      outOfScope,
    };
  }
  if (c.blacklisted !== null) {
    scope = 1;
    outOfScope = true;
    reasons.push(
      `scope: ${path} is blacklisted by ${JSON.stringify(c.blacklisted)}` +
        (c.whitelisted !== null
          ? ` (also whitelisted by ${JSON.stringify(c.whitelisted)}: the blacklist wins)`
          : ""),
    );
  } else if (goal.whitelist.length > 0 && c.whitelisted === null) {
    scope = goal.whitelist_scope;
    outOfScope = true;
    reasons.push(`scope: ${path} is not in the whitelist [${goal.whitelist.join(", ")}]`);
  }
  if (c.protectedBy !== null) {
    scope = 1;
    outOfScope = true;
    reasons.push(
      `scope: ${path} is a protected test (${JSON.stringify(c.protectedBy)}): editing it is test tampering`,
    );
  }
  const testLike = c.protectedBy !== null || isTestPath(path);
  if (evidence !== undefined && testLike) {
    const markers = findTamperMarkers(addedText(evidence));
    if (markers.length > 0) {
      scope = 1;
      outOfScope = true;
      reasons.push(`scope: test tampering in ${path}: adds ${markers.join(", ")}`);
    }
  }
  if (scope === 0 && !outOfScope) reasons.push(`scope: ${path} is in scope`);
  const blacklisted = c.blacklisted !== null;
  if (!testLike) return { scope, reasons, path, outOfScope, pathOnly: true, blacklisted };
  return { scope, reasons, path, outOfScope, blacklisted };
}

interface PathKeys {
  p: string;
  base: string;
  stem: RegExp | null;
  dir: string;
}

function pathKeys(path: string): PathKeys {
  const p = path.toLowerCase();
  const base = p.split("/").pop() ?? p;
  const stem = base.replace(/\.[^.]+$/, "");
  return {
    p,
    base: base.length >= 3 ? base : "",
    stem: stem.length >= 4 ? new RegExp(`(^|[^a-z0-9])${escapeRe(stem)}([^a-z0-9]|$)`) : null,
    dir:
      p.includes("/") && p.split("/").slice(0, -1).join("/").length >= 3
        ? `${p.split("/").slice(0, -1).join("/")}/`
        : "",
  };
}

/** Does a (lowercased) plan text name the file: its path, base name, stem as a word, or its folder? */
function mentions(lower: string, k: PathKeys): boolean {
  return (
    lower.includes(k.p) ||
    (k.base !== "" && lower.includes(k.base)) ||
    k.stem?.test(lower) === true ||
    (k.dir !== "" && lower.includes(k.dir))
  );
}

/**
 * Plans seen so far, searched incrementally: each (path, plan) pair is tested at most once, so
 * a long run costs O(distinct paths × plans), not O(edits × plans).
 */
function createPlanIndex(objective: string) {
  const texts: string[] = [objective.toLowerCase()];
  let plans = 0;
  const seen = new Map<string, { keys: PathKeys; checked: number; hit: boolean }>();
  return {
    add(text: string): void {
      texts.push(text.toLowerCase());
      plans++;
    },
    get plans(): number {
      return plans;
    },
    mentioned(path: string): boolean {
      let entry = seen.get(path);
      if (entry === undefined) {
        entry = { keys: pathKeys(path), checked: 0, hit: false };
        seen.set(path, entry);
      }
      for (; !entry.hit && entry.checked < texts.length; entry.checked++) {
        if (mentions(texts[entry.checked] ?? "", entry.keys)) entry.hit = true;
      }
      return entry.hit;
    },
  };
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function isMaskedCmd(cmd: string): string[] {
  return MASKED_TEST_CMD.filter((m) => m.re.test(cmd)).map((m) => m.label);
}

function failed(e: MemoryEvent): boolean | undefined {
  if (e.result === undefined) return undefined;
  return e.result.failed > 0 || (e.result.exit_code !== null && e.result.exit_code !== 0);
}

function normCmd(cmd: string | undefined): string {
  return (cmd ?? "").trim().replace(/\s+/g, " ");
}

/**
 * Score every event of a run against its goal (pure). Plans are never scored (`action: "ok"`);
 * edits score Scope/Plan/Evidence; test commands score Test. See README.md for each formula.
 */
export function runGuards(
  goal: Goal | CompiledGoal,
  events: readonly MemoryEvent[],
  options: GuardOptions = {},
): GuardRecord[] {
  const compiled = "classify" in goal ? goal : compileGoal(goal);
  const g = compiled.goal;
  const planIndex = createPlanIndex(g.objective);
  const scopeCache = new Map<string, ScopeVerdict>();
  const maskedCache = new Map<string, string[]>();
  const out: GuardRecord[] = [];
  // For the flaky rule: the index of the next edit after each position, and the commands that pass later.
  const nextEditAt = new Array<number>(events.length + 1).fill(Number.POSITIVE_INFINITY);
  for (let i = events.length - 1; i >= 0; i--) {
    nextEditAt[i] =
      events[i]?.tool === "edit" ? i : (nextEditAt[i + 1] ?? Number.POSITIVE_INFINITY);
  }
  // Test runs from a terminal log beside a transcript happened outside the session it records:
  // an edit between two of them would not be seen, so a fail-then-pass there is not called flaky.
  const termBesideTranscript = events.some(
    (e) => e.source === "transcript" || e.source === "trajectory",
  );
  const laterPass = new Map<string, number[]>();
  events.forEach((e, i) => {
    if (e.tool === "shell" && failed(e) === false) {
      const k = normCmd(e.cmd);
      const list = laterPass.get(k) ?? [];
      list.push(i);
      laterPass.set(k, list);
    }
  });
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (e === undefined) continue;
    // Records are built as literals, not spreads: an object spread per event was the largest cost
    // of scoring 100k events (see bench/memory.ts).
    if (e.tool === "plan") {
      if (e.why) planIndex.add(e.why);
      out.push({
        run_id: e.run_id,
        step: e.step,
        tool: e.tool,
        phase: e.phase,
        scope_guard: 0,
        plan_guard: 0,
        test_guard: 0,
        evidence_guard: 0,
        drift_score: 0,
        action: "ok",
        reasons: ["plan: never scored"],
      });
      continue;
    }
    if (e.tool === "edit") {
      const rawPath = pathOfWhere(e.where);
      let s = rawPath === undefined ? undefined : scopeCache.get(rawPath);
      if (s === undefined) {
        s = scopeOf(compiled, rawPath, e.evidence);
        if (s.pathOnly === true && rawPath !== undefined) scopeCache.set(rawPath, s);
      }
      const reasons = s.reasons.slice();
      let plan = 0;
      if (planIndex.plans === 0) reasons.push("plan: no plan stated before this edit");
      else if (s.path !== undefined && planIndex.mentioned(s.path))
        reasons.push("plan: the edit was planned");
      else {
        plan = 0.5;
        reasons.push(
          `plan: ${s.path ?? "this edit"} is not mentioned by the objective or any plan so far`,
        );
      }
      let evidence = 0;
      if (e.source !== undefined && EXACT_SOURCES.has(e.source))
        reasons.push(`evidence: exact (${e.source})`);
      else if (e.evidence !== undefined && e.evidence !== "") {
        if ((e.confidence ?? 1) < 0.5) {
          evidence = 0.5;
          reasons.push(`evidence: a snippet, low confidence ${e.confidence}`);
        } else reasons.push("evidence: a snippet shows the change");
      } else {
        evidence = 1;
        reasons.push("evidence: none (claimed, not shown)");
      }
      // driftScore() inlined for the three edit guards
      const w = g.weights;
      const unit = Math.max(w.scope, w.plan, w.evidence);
      const drift =
        unit === 0
          ? 0
          : round(Math.min(1, (w.scope * s.scope + w.plan * plan + w.evidence * evidence) / unit));
      // The blacklist says "must not edit": whatever weights and thresholds a goal sets (say,
      // to let edits outside the whitelist through with a warning), a blacklisted path rolls back.
      const action = s.blacklisted === true ? "rollback" : actionFor(drift, g.thresholds);
      const record: GuardRecord = {
        run_id: e.run_id,
        step: e.step,
        tool: e.tool,
        phase: e.phase,
        scope_guard: s.scope,
        plan_guard: plan,
        test_guard: 0,
        evidence_guard: evidence,
        drift_score: drift,
        action,
        reasons,
      };
      if (s.path !== undefined) record.file = s.path;
      if (action === "rollback" && s.outOfScope && s.path !== undefined) {
        const fix = fixFor({ path: s.path, event: e, options });
        record.auto_fixable = fix.auto_fixable;
        if (fix.fix_cmd !== undefined) record.fix_cmd = fix.fix_cmd;
      }
      out.push(record);
      continue;
    }
    // shell: only test commands become events
    const reasons: string[] = [];
    let test = 0;
    const cmd = e.cmd ?? "";
    let masked = maskedCache.get(cmd);
    if (masked === undefined) {
      masked = isMaskedCmd(cmd);
      maskedCache.set(cmd, masked);
    }
    const f = failed(e);
    if (masked.length > 0) {
      test = 1;
      reasons.push(`test: tampering — ${masked.join(", ")}`);
    } else if (f === true) {
      const n = e.result?.failed ?? 0;
      const next = firstAfter(laterPass.get(normCmd(e.cmd)) ?? [], i);
      const passesLater =
        next !== undefined &&
        (nextEditAt[i + 1] ?? Number.POSITIVE_INFINITY) > next &&
        !(termBesideTranscript && e.source === "term");
      if (e.phase === "reproduce") reasons.push(`test: ${n} failed while reproducing (expected)`);
      else if (passesLater) {
        test = 0.25;
        reasons.push(`test: ${n} failed, then passed on retry without edits (flaky)`);
      } else {
        test = 0.6;
        reasons.push(`test: ${n} failed in ${e.phase}`);
      }
    } else if (f === false) reasons.push(`test: passed (${e.result?.passed ?? 0})`);
    else reasons.push("test: result unknown");
    const drift = g.weights.test === 0 ? 0 : round(Math.min(1, test));
    const record: GuardRecord = {
      run_id: e.run_id,
      step: e.step,
      tool: e.tool,
      phase: e.phase,
      scope_guard: 0,
      plan_guard: 0,
      test_guard: test,
      evidence_guard: 0,
      drift_score: drift,
      action: actionFor(drift, g.thresholds),
      reasons,
    };
    if (e.cmd !== undefined) record.cmd = e.cmd;
    out.push(record);
  }
  return out;
}

/** The first element greater than `i` in an ascending list (binary search). */
function firstAfter(sorted: readonly number[], i: number): number | undefined {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] ?? 0) <= i) lo = mid + 1;
    else hi = mid;
  }
  return sorted[lo];
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./@%+=:,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function fixFor(args: {
  path: string;
  event: MemoryEvent;
  options: GuardOptions;
}): Pick<GuardRecord, "auto_fixable" | "fix_cmd"> {
  const { path, event, options } = args;
  if (options.gitWorkTree === true) {
    if (event.change === "added")
      return { auto_fixable: true, fix_cmd: `rm -f -- ${shellQuote(path)}` };
    return { auto_fixable: true, fix_cmd: `git checkout -- ${shellQuote(path)}` };
  }
  if (event.op_id !== undefined)
    return { auto_fixable: true, fix_cmd: `timewarp revert ${shellQuote(event.op_id)}` };
  return { auto_fixable: false };
}

/** A run-level view of its guard records: counts, checkpoints reached, required tests, success. */
export interface GuardSummary {
  events: number;
  scored: number;
  ok: number;
  warn: number;
  rollback: number;
  max_drift: number;
  checkpoints_reached: string[];
  missing_checkpoints: string[];
  required_tests: { test: string; ran: boolean; passed: boolean }[];
  /**
   * The run's verdict is success on its own evidence (verdict.ts, without an external verdict):
   * the required tests' last runs passed with a known result (or, none required, the last test
   * after the last edit did), and no rollback was left in place.
   */
  successful: boolean;
}

/** Summarize guard records for a run (pure). */
export function summarizeGuards(
  goal: Goal,
  events: readonly MemoryEvent[],
  records: readonly GuardRecord[],
): GuardSummary {
  const count = (a: GuardAction) => records.filter((r) => r.action === a).length;
  const reached = new Set(events.filter((e) => e.tool !== "plan").map((e) => e.phase));
  // The verdict from the run's own evidence (verdict.ts): a required test passed only on a known
  // result, and an unknown result is never a success.
  const verdict = runVerdict({ goal, events, guards: records });
  const required = verdict.required.map((r) => ({
    test: r.test,
    ran: r.step !== undefined,
    passed: r.status === "pass",
  }));
  const rollback = count("rollback");
  return {
    events: events.length,
    scored: records.filter((r) => r.tool !== "plan").length,
    ok: count("ok"),
    warn: count("warn"),
    rollback,
    max_drift: records.reduce((m, r) => Math.max(m, r.drift_score), 0),
    checkpoints_reached: goal.checkpoints.filter((c) => reached.has(c)),
    missing_checkpoints: goal.checkpoints.filter((c) => !reached.has(c)),
    required_tests: required,
    successful: verdict.outcome === "success",
  };
}

/** A proposed edit, as a PreToolUse hook sees it. */
export interface ProposedEdit {
  /** Workspace-relative or absolute (then relativized against `root`). */
  paths: string[];
  /** The agent's tool (`Edit`, `Write`, `apply_patch`, …): recorded in reasons only. */
  tool?: string;
  /** A unified diff of the edit, when known (its `+` lines are checked for tamper markers). */
  diff?: string;
  /** The new text (Edit's `new_string`, Write's `content`). */
  content?: string;
  /** Plans stated so far in the session (plan guard); none means nothing to deviate from. */
  plans?: string[];
}

export interface CheckEditOptions extends GuardOptions {
  /** Workspace root for relativizing absolute paths. */
  root?: string;
  /** A ledger operation id to revert when the workspace is not a git work tree. */
  opId?: string;
}

/** The verdict on a proposed edit: the worst file decides. */
export interface EditCheck {
  scores: GuardScores;
  drift_score: number;
  action: GuardAction;
  reasons: string[];
  auto_fixable: boolean;
  fix_cmd?: string;
  files: {
    path: string;
    drift_score: number;
    action: GuardAction;
    reasons: string[];
    fix_cmd?: string;
  }[];
}

/**
 * Score a proposed edit against the goal before it happens (pure, no I/O; PreToolUse calls it).
 * The edit's own tool input is its evidence, so only Scope and Plan can fire.
 *
 * @example
 *   const check = checkEdit(readGoal(".timewarp/memory/goal.json").goal, { paths: ["requirements.txt"], tool: "Edit" }, { gitWorkTree: true });
 *   if (check.action === "rollback") block(check.reasons.join("\n"));
 */
export function checkEdit(
  goal: Goal | CompiledGoal,
  edit: ProposedEdit,
  options: CheckEditOptions = {},
): EditCheck {
  const compiled = "classify" in goal ? goal : compileGoal(goal);
  const { root } = options;
  const text = edit.diff ?? edit.content;
  const plans = edit.plans ?? [];
  const events: MemoryEvent[] = [];
  let step = 0;
  for (const plan of plans)
    events.push({ run_id: "check", step: step++, phase: "modify", tool: "plan", why: plan });
  const paths = edit.paths.length > 0 ? edit.paths : [""];
  for (const p of paths) {
    const rel = root !== undefined && p !== "" ? relativeTo(root, p) : p;
    events.push({
      run_id: "check",
      step: step++,
      phase: "modify",
      tool: "edit",
      ...(rel !== "" ? { where: rel } : {}),
      source: "transcript",
      ...(text !== undefined ? { evidence: text } : {}),
      ...(options.opId !== undefined ? { op_id: options.opId } : {}),
    });
  }
  const records = runGuards(compiled, events, options).filter((r) => r.tool === "edit");
  let worst = records[0];
  for (const r of records) if (worst === undefined || r.drift_score > worst.drift_score) worst = r;
  if (worst === undefined)
    throw new TimewarpError(ErrorCode.INTERNAL, "checkEdit: no edit record (unreachable)");
  const tool = edit.tool !== undefined ? [`tool: ${edit.tool}`] : [];
  const fix = records.filter((r) => r.fix_cmd !== undefined).map((r) => r.fix_cmd ?? "");
  return {
    scores: {
      scope: worst.scope_guard,
      plan: worst.plan_guard,
      test: 0,
      evidence: worst.evidence_guard,
    },
    drift_score: worst.drift_score,
    action: worst.action,
    reasons: [
      ...tool,
      ...records.flatMap((r) => r.reasons.filter((x) => !x.startsWith("evidence:"))),
    ],
    auto_fixable:
      fix.length > 0 && records.every((r) => r.action !== "rollback" || r.auto_fixable === true),
    ...(fix.length > 0 ? { fix_cmd: fix.join(" && ") } : {}),
    files: records.map((r) => ({
      path: r.file ?? "",
      drift_score: r.drift_score,
      action: r.action,
      reasons: r.reasons,
      ...(r.fix_cmd !== undefined ? { fix_cmd: r.fix_cmd } : {}),
    })),
  };
}

function relativeTo(root: string, p: string): string {
  if (!p.startsWith("/")) return p;
  const r = root.endsWith("/") ? root : `${root}/`;
  return p.startsWith(r) ? p.slice(r.length) : p;
}
