import { spawnSync } from "node:child_process";
import type { CardHints } from "./card.ts";
import type { GuardSummary } from "./guards.ts";
import { pathOfWhere } from "./guards.ts";
import type { Goal, GuardRecord, MemoryEvent } from "./schemas.ts";
import type { RunVerdict } from "./verdict.ts";

/** `artifacts/reflection.txt`: what the run did, where it drifted, what held — deterministic. */
export function formatReflection(args: {
  run_id: string;
  goal: Goal;
  events: readonly MemoryEvent[];
  guards: readonly GuardRecord[];
  summary: GuardSummary;
  /** The run's verdict (verdict.ts); without it the outcome is the summary's. */
  verdict?: RunVerdict;
}): string {
  const { run_id, goal, events, guards, summary, verdict } = args;
  const outcome =
    verdict !== undefined
      ? `${verdict.outcome}${verdict.high_value ? " (high-value)" : ""}`
      : summary.successful
        ? "success"
        : "not successful";
  const lines = [
    `run: ${run_id}`,
    `objective: ${goal.objective}`,
    `outcome: ${outcome} — ${summary.ok} ok, ${summary.warn} warn, ${summary.rollback} rollback, max drift ${summary.max_drift}`,
    `checkpoints reached: ${summary.checkpoints_reached.join(" → ") || "none"}${summary.missing_checkpoints.length > 0 ? ` (missing: ${summary.missing_checkpoints.join(", ")})` : ""}`,
    "",
    "what happened:",
  ];
  const byStep = new Map(guards.map((g) => [g.step, g]));
  for (const e of events) {
    const g = byStep.get(e.step);
    const tag = g && g.action !== "ok" ? ` [${g.action.toUpperCase()} ${g.drift_score}]` : "";
    if (e.tool === "edit")
      lines.push(`- ${e.step} ${e.phase}: edit ${pathOfWhere(e.where) ?? "?"}${tag}`);
    else if (e.tool === "shell") {
      const r = e.result ? ` → ${e.result.passed} passed, ${e.result.failed} failed` : "";
      lines.push(`- ${e.step} ${e.phase}: \`${e.cmd}\`${r}${tag}`);
    } else lines.push(`- ${e.step} plan: ${(e.why ?? "").slice(0, 120)}`);
  }
  const drift = guards.filter((g) => g.action !== "ok");
  lines.push("", "lessons:");
  if (drift.length === 0) lines.push("- stayed on goal: no guard fired");
  for (const g of drift)
    lines.push(
      `- step ${g.step} (${g.action}): ${g.reasons.filter((r) => !/in scope$|planned$|exact/.test(r)).join("; ")}`,
    );
  if (verdict !== undefined) {
    lines.push("", "verdict:");
    for (const r of verdict.reasons) lines.push(`- ${r}`);
  } else
    for (const t of summary.required_tests)
      lines.push(
        `- required \`${t.test}\`: ${t.ran ? (t.passed ? "passed" : "not passed (failed or unknown)") : "never ran"}`,
      );
  return `${lines.join("\n")}\n`;
}

/**
 * The optional reflect step: run `config.memory.reflect_command` with the reflection on stdin.
 * Its stdout is returned as text; when it is a JSON object with string arrays (`triggers`,
 * `steps`, `invariants`, `anti_patterns`) those become card hints. Never required: a missing,
 * failing or slow command is a warning and the deterministic card stands.
 */
export function runReflectCommand(
  command: readonly string[],
  reflection: string,
  timeoutMs = 60_000,
): { text: string; hints?: CardHints; warning?: string } {
  const [bin, ...args] = command;
  if (bin === undefined) return { text: "", warning: "reflect_command is empty" };
  const r = spawnSync(bin, args, {
    input: reflection,
    encoding: "utf8",
    timeout: timeoutMs,
    maxBuffer: 4 << 20,
  });
  if (r.error !== undefined || r.status !== 0) {
    const why =
      r.error !== undefined
        ? r.error.message
        : `exit ${r.status}: ${(r.stderr ?? "").trim().slice(0, 200)}`;
    return { text: "", warning: `reflect_command failed (${why}); the deterministic card stands` };
  }
  const text = r.stdout ?? "";
  try {
    const json: unknown = JSON.parse(text);
    if (typeof json === "object" && json !== null) {
      const pick = (k: string): string[] | undefined => {
        const v = (json as Record<string, unknown>)[k];
        return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : undefined;
      };
      const hints: CardHints = {};
      for (const k of ["triggers", "steps", "invariants", "anti_patterns"] as const) {
        const v = pick(k);
        if (v !== undefined) hints[k] = v;
      }
      return { text, hints };
    }
  } catch {
    // plain text is fine: it goes into reflection.txt only
  }
  return { text };
}
