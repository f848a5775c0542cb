import { rmSync } from "node:fs";
import { join } from "node:path";
import type { CleanupReport, StartSessionResult } from "../timemachine/index.ts";
import { agentProcessOf } from "./agent-process.ts";
import type { HookOutcome } from "./hook-outcome.ts";
import { hookPaths, safeComponent } from "./hook-paths.ts";
import { offerContext } from "./memory-offer.ts";
import type { HookContext } from "./run-hook.ts";

/**
 * SessionStart: `on_session_start` (seed §9) — the session snapshot, cleanup, and the session
 * remembered with its transcript path so `issue_report` exports the right chat later. Served by
 * the hook server, the cleanup is left for after the answer (`ctx.later`): it answers once the
 * snapshot is recorded. A `compact` start (Claude Code compacting the same conversation) only
 * refreshes the record: the workspace did not start anew. Neither does a session id already
 * recorded with its snapshot (`--continue`/`--resume`): `startSession` keeps that snapshot and
 * records the resume (issue 17). The session's process is the agent's
 * (`agentProcessOf` the hook's caller), so a session whose agent was killed before SessionEnd
 * ends with it: the cleanup drops its record, its snapshot and its hook scratch.
 */
export async function onSessionStart(ctx: HookContext): Promise<HookOutcome> {
  const { beginSession, rememberSession, startSession } = await import("../timemachine/index.ts");
  const transcript = ctx.payload.transcript_path ?? undefined;
  const pid = agentProcessOf(ctx.callerPid);
  const session = {
    root: ctx.root,
    sessionId: ctx.payload.session_id,
    ...(transcript !== undefined ? { transcriptPath: transcript } : {}),
    pid,
    agent: ctx.agent,
    clock: ctx.clock,
  };
  if (ctx.payload.source === "compact") {
    rememberSession(session);
    // the compacted conversation may have lost what was offered: offer the goal's cards again
    const context = await offerContext(ctx, null, { fresh: true });
    return {
      kind: "ok",
      summary: `session ${ctx.payload.session_id} refreshed (compact)`,
      context,
    };
  }
  const options = { ...session, random: ctx.random };
  let result: Omit<StartSessionResult, "cleanup">;
  if (ctx.answersFirst) {
    const begun = await beginSession(options);
    ctx.later(() => {
      removeScratchOf(ctx.root, begun.cleanUp());
    });
    result = begun.result;
  } else {
    // the agent waits for this process either way: one lock for the snapshot and the cleanup
    const started = await startSession(options);
    removeScratchOf(ctx.root, started.cleanup);
    result = started;
  }
  // The goal and the cards for its objective (issue 18); a resumed session was offered them.
  const context = await offerContext(ctx, null);
  const offered = context === undefined ? {} : { context };
  if (result.resumed) {
    return {
      kind: "ok",
      summary: `session ${result.session_id} resumed: snapshot ${result.snapshot_id} (its own, no new snapshot)`,
      ...offered,
    };
  }
  const partial = result.partial ? `, partial: ${result.skipped.length} path(s) skipped` : "";
  return {
    kind: "ok",
    summary: `session ${result.session_id}: snapshot ${result.snapshot_id} (${result.files} files${partial})`,
    ...offered,
  };
}

/** The hook scratch (pending pre-images, the memory offered) of the sessions the cleanup found over. */
function removeScratchOf(root: string, report: CleanupReport): void {
  const paths = hookPaths(root);
  for (const id of report.expired_sessions) {
    rmSync(join(paths.pending, safeComponent(id)), { recursive: true, force: true });
    rmSync(join(paths.offered, `${safeComponent(id)}.json`), { force: true });
  }
}
