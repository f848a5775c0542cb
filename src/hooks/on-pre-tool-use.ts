import { assertNoTransition, isTimewarpError, readState, workspacePaths } from "../core/index.ts";
import type { HookOutcome } from "./hook-outcome.ts";
import { pendingFile } from "./hook-paths.ts";
import { captureFile, removePendingCapture, writePendingCapture } from "./pending-capture.ts";
import type { HookContext } from "./run-hook.ts";
import { editTargets, isAgentStatePath, toolKind } from "./tool-kinds.ts";

/**
 * PreToolUse. Before an edit tool: the drift guards (when a goal is set), then the pre-image of
 * every file the tool names, kept for PostToolUse. Before a shell tool: a stat-cache scan, the
 * baseline that PostToolUse diffs against. Other tools pass untouched.
 */
export async function onPreToolUse(ctx: HookContext): Promise<HookOutcome> {
  const kind = toolKind(ctx.payload.tool_name);
  const tool = ctx.payload.tool_name ?? "";
  if (kind === "other") return { kind: "ok", summary: `${tool}: not an edit or shell tool` };
  const file = pendingFile(ctx.root, ctx.payload);
  if (kind === "shell") {
    const { scanBaseline } = await import("./shell-scan.ts");
    const scan = scanBaseline(ctx.root);
    writePendingCapture({
      file,
      capture: {
        session_id: ctx.payload.session_id,
        tool_name: tool,
        tool_use_id: ctx.payload.tool_use_id ?? null,
        files: [],
        baseline_manifest: scan.id,
      },
      clock: ctx.clock,
    });
    return {
      kind: "ok",
      summary: `${tool}: baseline of ${scan.files} files (${scan.rehashed} re-read)`,
    };
  }

  const interrupted = interruptedTransition(ctx.root);
  if (interrupted !== null) {
    // `recover` would rewrite the workspace under the edit (issue 16, class 4). Shell tools pass:
    // the agent needs one to run `timewarp recover`.
    return {
      kind: "block",
      summary: `${tool}: blocked, a transition awaits recover`,
      reason: `timewarp blocked this ${tool}: TRANSITION_INTERRUPTED: ${interrupted}`,
    };
  }
  const targets = editTargets(ctx.payload, ctx.root);
  // The pre-image first: if the guard then fails (an invalid goal.json), the hook reports that
  // without blocking, and the edit is still recorded by PostToolUse.
  const capture = {
    session_id: ctx.payload.session_id,
    tool_name: tool,
    tool_use_id: ctx.payload.tool_use_id ?? null,
    files: targets.paths.map((p) => captureFile(ctx.root, p)),
    baseline_manifest: null,
  };
  writePendingCapture({ file, capture, clock: ctx.clock });
  // Outside the workspace: scored as outside it (nothing there is recorded or revertable), unless
  // it is the agent's own state (a plan file, a memory), which no goal is about.
  const guarded = [...targets.paths, ...targets.outside.filter((p) => !isAgentStatePath(p))];
  if (guarded.length === 0 && targets.outside.length > 0) {
    return { kind: "ok", summary: `${tool}: the agent's own files, outside the workspace` };
  }
  const { checkGoal } = await import("./goal-guard.ts");
  const verdict = await checkGoal(ctx, guarded);
  const where = guarded.length > 0 ? guarded.join(", ") : "(no file named)";
  if (verdict.action === "rollback") {
    removePendingCapture(file);
    return {
      kind: "block",
      summary: `${tool}: blocked by the drift guards`,
      reason: `timewarp blocked this ${tool} on ${where}: ${verdict.reasons.join("; ")}`,
    };
  }
  const captured = `${tool}: pre-image of ${targets.paths.length} file(s)`;
  if (verdict.action === "warn") {
    const reason = `timewarp drift warning for ${where}: ${verdict.reasons.join("; ")}`;
    // Gemini CLI shows BeforeTool's systemMessage to the user only (issue 17): the model gets
    // the warning from the matching AfterTool, which reads it from this call's capture.
    if (ctx.agent === "gemini")
      writePendingCapture({ file, capture: { ...capture, warning: reason }, clock: ctx.clock });
    return { kind: "warn", summary: `${captured}; drift warning`, reason };
  }
  return { kind: "ok", summary: captured };
}

/** The TRANSITION_INTERRUPTED message, or null (a state.json that cannot be read blocks nothing). */
function interruptedTransition(root: string): string | null {
  const paths = workspacePaths(root);
  try {
    assertNoTransition(readState(paths), paths);
    return null;
  } catch (error) {
    return isTimewarpError(error, "TRANSITION_INTERRUPTED") ? error.message : null;
  }
}
