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
 * on the bus.
 */
export async function onSessionEnd(ctx: HookContext): Promise<HookOutcome> {
  const { endSession } = await import("../timemachine/index.ts");
  const record = endSession({
    root: ctx.root,
    sessionId: ctx.payload.session_id,
    clock: ctx.clock,
  });
  rmSync(join(hookPaths(ctx.root).pending, safeComponent(ctx.payload.session_id)), {
    recursive: true,
    force: true,
  });
  appendEvent(
    workspacePaths(ctx.root).events,
    "session.ended",
    { session_id: ctx.payload.session_id, reason: ctx.payload.reason ?? null },
    ctx.clock,
  );
  const known = record === null ? " (no session record: SessionStart did not run for it)" : "";
  return { kind: "ok", summary: `session ${ctx.payload.session_id} ended${known}` };
}
