import { rmSync } from "node:fs";
import { join } from "node:path";
import { appendEvent, workspacePaths } from "../core/index.ts";
import type { HookOutcome } from "./hook-outcome.ts";
import { hookPaths, safeComponent } from "./hook-paths.ts";
import type { HookContext } from "./run-hook.ts";

/**
 * SessionEnd: the session is over — its record is marked ended (so the next session start's
 * cleanup no longer counts it as live and may drop its snapshot unless an issue needs it), its
 * hook scratch (pre-images of calls that never got a PostToolUse) goes, and `session.ended` goes
 * on the bus. A session never recorded (Claude Code's `claude mcp list` ends sessions that never
 * started, in whatever directory it runs) is left alone: nothing is written, not even a store.
 */
export async function onSessionEnd(ctx: HookContext): Promise<HookOutcome> {
  const { endSession } = await import("../timemachine/index.ts");
  const record = endSession({
    root: ctx.root,
    sessionId: ctx.payload.session_id,
    clock: ctx.clock,
  });
  // its own scratch only (a session whose start was never seen may have left some)
  rmSync(join(hookPaths(ctx.root).pending, safeComponent(ctx.payload.session_id)), {
    recursive: true,
    force: true,
  });
  if (record === null) {
    return {
      kind: "ok",
      summary: `session ${ctx.payload.session_id}: no record (SessionStart did not run for it), nothing to end`,
    };
  }
  appendEvent(
    workspacePaths(ctx.root).events,
    "session.ended",
    { session_id: ctx.payload.session_id, reason: ctx.payload.reason ?? null },
    ctx.clock,
  );
  return { kind: "ok", summary: `session ${ctx.payload.session_id} ended` };
}
