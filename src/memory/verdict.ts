import type { Goal, GuardRecord, MemoryEvent } from "./schemas.ts";

/**
 * A run's verdict from evidence (pure): did the task end well, and was drift caught and fixed
 * on the way? Success needs a fact — an external verdict (SWE-bench's `report.json`, a results
 * file with a resolved flag), or the required tests' last run passing with a known result, or,
 * when none are required, the last test run after the last edit passing. A test whose result is
 * unknown stays unknown: it is never counted as a pass.
 */

export type Outcome = "success" | "failure" | "unknown";

/** An external verdict on the run, read from its `raw/` folder (verdict-file.ts). */
export interface ExternalVerdict {
  /** true resolved, false unresolved, null: the file names the run but decides nothing (an error, an empty patch). */
  resolved: boolean | null;
  /** The file it came from (`raw/report.json`, …). */
  source: string;
  detail?: string;
}

/** One fact the verdict rests on. */
export interface VerdictEvidence {
  kind: "external" | "required_test" | "last_test" | "drift" | "fix";
  /** The event's step, when the fact is an event. */
  step?: number;
  detail: string;
}

/** What a run did to fix one caught drift. */
export interface DriftFix {
  /** The step of the fixing event; absent when the fix is known from the final patch only. */
  step?: number;
  /** `revert` (the file put back by a command or an edit that says so), `unmasked` (the test run again without masking, and passing), `final_patch` (the file is not in the final patch). */
  how: "revert" | "unmasked" | "final_patch";
  /** The command that ran, when the fix was a command. */
  cmd?: string;
  detail: string;
}

/** A guard warn/rollback the run got: the drift it caught and its fix, if the evidence shows one. */
export interface CaughtDrift {
  step: number;
  tool: "edit" | "shell";
  action: "warn" | "rollback";
  file?: string;
  cmd?: string;
  reason: string;
  fixed_by: DriftFix | null;
}

export interface RunVerdict {
  outcome: Outcome;
  /** Drift was caught (a guard warn/rollback), its fix is in the evidence, and the run ended in success. */
  high_value: boolean;
  reasons: string[];
  evidence: VerdictEvidence[];
  /** Each required test's last run (step) and its status; `unknown` when it never ran or its result is unknown. */
  required: { test: string; status: TestStatus; step?: number }[];
  drift: CaughtDrift[];
}

export interface VerdictInput {
  goal: Goal;
  events: readonly MemoryEvent[];
  guards: readonly GuardRecord[];
  external?: ExternalVerdict | null;
  /** The files the run's final patch (`raw/patch.diff`) changes, when it has one: a drift file absent from it was put back. */
  final_files?: readonly string[];
}

/** An event's path without `:line` (guards.ts's pathOfWhere; kept here so guards.ts can import this file). */
function pathOfWhere(where: string | undefined): string | undefined {
  if (where === undefined || where === "") return undefined;
  return where.replace(/:\d+(-\d+)?$/, "").replace(/:\?$/, "");
}

export type TestStatus = "pass" | "fail" | "unknown";

/**
 * A shell event that runs tests: a test runner's command (extraction names its framework), not a
 * run of a scratch script the run wrote itself (framework `script`): a reproduction shows the bug
 * or its absence, it is not the project's tests passing.
 */
export function isTestRun(e: MemoryEvent): boolean {
  return e.tool === "shell" && e.result?.framework !== "script";
}

/** A test event's result: `pass` only on known counts (≥ 1 passed, none failed) or exit code 0; `unknown` without either. */
export function testStatus(e: MemoryEvent): TestStatus {
  const r = e.result;
  if (r === undefined) return "unknown";
  if (r.failed > 0 || (r.exit_code !== null && r.exit_code !== 0)) return "fail";
  if (r.passed > 0 || r.exit_code === 0) return "pass";
  return "unknown";
}

const REVERT_CUE =
  /\b(revert(ed|ing)?|restor(e|ed|ing)|undo(ne)?|undid|roll(ed)?[\s-]?back|put (it )?back|back(ed)? out|discard(ed)?)\b|撤销|恢复|还原|回滚|撤回/i;
const REVERT_CMD =
  /\bgit\s+(checkout|restore|reset|stash|rm)\b|\btimewarp\s+(revert|rewind)\b|(^|[;&|]\s*)(rm|unlink)\s/;

/** Commands that put back every file of the work tree. */
const WHOLE_TREE_REVERT =
  /\bgit\s+(checkout\s+(--\s+)?\.(\s|$)|restore\s+(--\S+\s+)*\.(\s|$)|stash(\s+push)?(\s|$)|reset\s+--hard\b)/;

/** Does a shell command put `file` back (git checkout/restore, rm of an added file, timewarp revert)? */
function revertsFile(cmd: string, file: string, fixCmd: string | undefined): boolean {
  if (fixCmd !== undefined && cmd.trim() === fixCmd.trim()) return true;
  if (WHOLE_TREE_REVERT.test(cmd)) return true;
  if (/\btimewarp\s+revert\b/.test(cmd) && fixCmd?.startsWith("timewarp revert") === true)
    return cmd.includes(fixCmd.slice("timewarp revert ".length));
  if (!REVERT_CMD.test(cmd)) return false;
  const base = file.split("/").pop() ?? file;
  return cmd.includes(file) || new RegExp(`(^|[\\s/'"])${escapeRe(base)}($|[\\s'"])`).test(cmd);
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** What drifted at one event: an edit of `file`, or a test command (masked). */
export interface DriftAt {
  tool: "edit" | "shell";
  file?: string;
  /** The guard's fix command, when it named one (`git checkout -- f`, `timewarp revert <op>`). */
  fix_cmd?: string;
}

/**
 * The fix of one drift at `events[i]`, from the events after it (or the final patch): for an
 * edit, a command that puts the file back, a later edit of it that says it reverts, the delete
 * of a file the drift added, or the file's absence from the final patch; for a masked test, a
 * later run that is not masked (`unmasked`) and passed.
 */
export function findDriftFix(
  events: readonly MemoryEvent[],
  i: number,
  drift: DriftAt,
  options: { finalFiles?: ReadonlySet<string>; unmasked: (e: MemoryEvent) => boolean },
): DriftFix | null {
  const at = events[i];
  if (at === undefined) return null;
  if (drift.tool === "shell") {
    for (let j = i + 1; j < events.length; j++) {
      const e = events[j];
      if (e?.tool !== "shell") continue;
      if (options.unmasked(e) && testStatus(e) === "pass")
        return {
          step: e.step,
          how: "unmasked",
          ...(e.cmd !== undefined ? { cmd: e.cmd } : {}),
          detail: `ran \`${e.cmd ?? "the tests"}\` without masking and it passed`,
        };
    }
    return null;
  }
  const file = drift.file ?? pathOfWhere(at.where);
  if (file === undefined) return null;
  for (let j = i + 1; j < events.length; j++) {
    const e = events[j];
    if (e === undefined) continue;
    if (e.tool === "shell" && e.cmd !== undefined && revertsFile(e.cmd, file, drift.fix_cmd))
      return { step: e.step, how: "revert", cmd: e.cmd, detail: `reverted ${file}: \`${e.cmd}\`` };
    if (e.tool !== "edit" || pathOfWhere(e.where) !== file) continue;
    // an edit event that says it reverts, or that a reverting command made (an extractor's `why`/`cmd`)
    const text = `${e.why ?? ""}\n${e.cmd ?? ""}`;
    if (
      REVERT_CUE.test(text) ||
      revertsFile(text, file, drift.fix_cmd) ||
      (at.change === "added" && e.change === "deleted")
    )
      return {
        step: e.step,
        how: "revert",
        detail: `reverted ${file}${e.why !== undefined ? ` (${clip(e.why, 80)})` : ""}`,
      };
  }
  if (options.finalFiles !== undefined && !options.finalFiles.has(file))
    return { how: "final_patch", detail: `${file} is not in the final patch: it was put back` };
  return null;
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The guard warnings and rollbacks of a run, each with its fix when the evidence shows one (pure). */
export function caughtDrift(
  events: readonly MemoryEvent[],
  guards: readonly GuardRecord[],
  finalFiles?: readonly string[],
): CaughtDrift[] {
  const byStep = new Map(guards.map((g) => [g.step, g]));
  const final = finalFiles !== undefined ? new Set(finalFiles) : undefined;
  const out: CaughtDrift[] = [];
  // the revert of a blacklisted file is itself an edit of it: a fix, not more drift
  const fixes = new Set<number>();
  events.forEach((e, i) => {
    const g = byStep.get(e.step);
    if (g === undefined || g.action === "ok" || g.tool === "plan" || fixes.has(e.step)) return;
    // a failing test after the fix is a warning about the code, not drift from the goal
    if (g.tool === "shell" && g.test_guard < 1) return;
    const fix = findDriftFix(
      events,
      i,
      {
        tool: g.tool === "edit" ? "edit" : "shell",
        ...(g.file !== undefined ? { file: g.file } : {}),
        ...(g.fix_cmd !== undefined ? { fix_cmd: g.fix_cmd } : {}),
      },
      {
        ...(final !== undefined ? { finalFiles: final } : {}),
        unmasked: (e) => (byStep.get(e.step)?.test_guard ?? 0) < 1,
      },
    );
    if (fix?.step !== undefined) fixes.add(fix.step);
    const reason =
      g.reasons.find((r) => /^(scope|test): /.test(r) && !r.endsWith("in scope")) ??
      g.reasons.find((r) => r.startsWith("plan: ")) ??
      g.reasons[0] ??
      "drift";
    out.push({
      step: e.step,
      tool: g.tool === "edit" ? "edit" : "shell",
      action: g.action === "rollback" ? "rollback" : "warn",
      ...(g.file !== undefined ? { file: g.file } : {}),
      ...(g.tool === "shell" && e.cmd !== undefined ? { cmd: e.cmd } : {}),
      reason,
      fixed_by: fix,
    });
  });
  return out;
}

/** Does a test event run the required test `t` (its command contains it, or its output names it)? */
function runsRequired(e: MemoryEvent, t: string): boolean {
  return (e.cmd ?? "").includes(t) || e.result?.tests?.some((n) => n.name === t) === true;
}

/**
 * The verdict on a run (pure). Order of evidence: an external verdict decides when present;
 * else the required tests (each one's last run: passed, failed or unknown); else the last test
 * run after the last edit. A rollback whose fix the evidence does not show is drift left in
 * place: the run fails whatever the tests said. High-value: success, and at least one caught
 * drift with its fix.
 */
export function runVerdict(input: VerdictInput): RunVerdict {
  const { goal, events, guards } = input;
  const byStep = new Map(guards.map((g) => [g.step, g]));
  const reasons: string[] = [];
  const evidence: VerdictEvidence[] = [];
  const required: RunVerdict["required"] = [];
  const tests = events.filter(isTestRun);
  const masked = (e: MemoryEvent) => (byStep.get(e.step)?.test_guard ?? 0) >= 1;
  const statusOf = (e: MemoryEvent): TestStatus => (masked(e) ? "unknown" : testStatus(e));
  let outcome: Outcome = "unknown";
  const ext = input.external ?? null;
  if (ext !== null) {
    outcome = ext.resolved === true ? "success" : ext.resolved === false ? "failure" : "unknown";
    const said =
      ext.resolved === null ? "decides nothing" : ext.resolved ? "resolved" : "unresolved";
    reasons.push(
      `external verdict (${ext.source}): ${said}${ext.detail ? ` — ${ext.detail}` : ""}`,
    );
    evidence.push({ kind: "external", detail: `${ext.source}: ${said}` });
  }
  // the required tests are always judged (cards name those that passed); they decide without an external verdict
  const per = goal.required_tests.map((t) => {
    const runs = tests.filter((e) => runsRequired(e, t));
    const last = runs[runs.length - 1];
    if (last === undefined) {
      required.push({ test: t, status: "unknown" });
      return { t, status: "unknown" as TestStatus, why: "never ran" };
    }
    const named = last.result?.tests?.find((n) => n.name === t);
    const status: TestStatus =
      masked(last) || named === undefined
        ? statusOf(last)
        : named.status === "pass"
          ? "pass"
          : named.status === "fail"
            ? "fail"
            : "unknown";
    required.push({ test: t, status, step: last.step });
    evidence.push({
      kind: "required_test",
      step: last.step,
      detail: `\`${t}\` last ran as \`${last.cmd ?? "?"}\`: ${status}${countsOf(last)}`,
    });
    return {
      t,
      status,
      why:
        status === "unknown"
          ? masked(last)
            ? "its exit code was masked"
            : "its result is unknown"
          : status === "pass"
            ? "passed"
            : "failed",
    };
  });
  if (ext === null && goal.required_tests.length > 0) {
    for (const p of per) reasons.push(`required test \`${p.t}\`: ${p.why}`);
    outcome = per.some((p) => p.status === "fail")
      ? "failure"
      : per.every((p) => p.status === "pass")
        ? "success"
        : "unknown";
  } else if (ext === null) {
    let lastEdit = -1;
    events.forEach((e, i) => {
      if (e.tool === "edit") lastEdit = i;
    });
    const after = events.filter((e, i) => i > lastEdit && isTestRun(e));
    const last = after[after.length - 1];
    if (last === undefined) {
      outcome = "unknown";
      reasons.push(
        lastEdit < 0 ? "no test ran" : "no test ran after the last edit: nothing shows it works",
      );
    } else {
      const s = statusOf(last);
      outcome = s === "pass" ? "success" : s === "fail" ? "failure" : "unknown";
      evidence.push({
        kind: "last_test",
        step: last.step,
        detail: `\`${last.cmd ?? "?"}\`: ${s}${countsOf(last)}`,
      });
      reasons.push(
        `the last test after the last edit (\`${last.cmd ?? "?"}\`) ${
          s === "pass"
            ? "passed"
            : s === "fail"
              ? "failed"
              : masked(last)
                ? "had its exit code masked"
                : "has no known result"
        }`,
      );
    }
  }
  // a later known failure undoes a success claimed by the required tests
  if (outcome === "success" && ext === null && goal.required_tests.length > 0) {
    const lastTest = tests[tests.length - 1];
    if (lastTest !== undefined && statusOf(lastTest) === "fail") {
      outcome = "failure";
      reasons.push(`the last test run (\`${lastTest.cmd ?? "?"}\`) failed`);
    }
  }
  const drift = caughtDrift(events, guards, input.final_files);
  for (const d of drift) {
    evidence.push({
      kind: "drift",
      step: d.step,
      detail: `${d.action} ${d.file ?? d.cmd ?? ""}: ${d.reason}`,
    });
    if (d.fixed_by !== null)
      evidence.push({
        kind: "fix",
        ...(d.fixed_by.step !== undefined ? { step: d.fixed_by.step } : {}),
        detail: d.fixed_by.detail,
      });
  }
  const left = drift.filter((d) => d.action === "rollback" && d.fixed_by === null);
  if (left.length > 0) {
    if (outcome !== "failure") outcome = "failure";
    reasons.push(
      `drift left in place: ${left.map((d) => `${d.file ?? `\`${d.cmd}\``} (rollback at step ${d.step}, no revert in the evidence)`).join(", ")}`,
    );
  }
  const fixed = drift.filter((d) => d.fixed_by !== null);
  const highValue = outcome === "success" && fixed.length > 0;
  if (highValue)
    reasons.push(
      `high-value: drift caught and fixed (${fixed.map((d) => `${d.file ?? `\`${d.cmd}\``}: ${d.fixed_by?.how}`).join(", ")})`,
    );
  return { outcome, high_value: highValue, reasons, evidence, required, drift };
}

function countsOf(e: MemoryEvent): string {
  const r = e.result;
  if (r === undefined) return "";
  const parts = [`${r.passed} passed`, `${r.failed} failed`];
  if (r.exit_code !== null) parts.push(`exit ${r.exit_code}`);
  return ` (${parts.join(", ")})`;
}

/** A card is distilled from a successful or a high-value run, or when forced. */
export function cardEligible(v: RunVerdict): boolean {
  return v.outcome === "success" || v.high_value;
}
