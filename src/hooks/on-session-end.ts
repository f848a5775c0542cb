import { rmSync } from "node:fs";
import { join } from "node:path";
import { appendEvent, workspacePaths } from "../core/index.ts";
import type { HookOutcome } from "./hook-outcome.ts";
import { hookPaths, safeComponent } from "./hook-paths.ts";
import type { HookContext } from "./run-hook.ts";

/**
 * SessionEnd: the session is over — its hook scratch (pre-images of calls that never got a
 * PostToolUse) goes, and `session.ended` goes on the bus so cleanup no longer counts it as live.
 * (The time machine exports no `endSession` yet; the bus event is the mark it can read.)
 */
export async function onSessionEnd(ctx: HookContext): Promise<HookOutcome> {
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
  return { kind: "ok", summary: `session ${ctx.payload.session_id} ended` };
}
