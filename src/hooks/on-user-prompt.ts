import type { HookOutcome } from "./hook-outcome.ts";
import type { HookContext } from "./run-hook.ts";

/**
 * A user prompt (Claude Code and Codex `UserPromptSubmit`, Gemini CLI `BeforeAgent`, OpenCode's
 * `chat.message`): the turn checkpoint `timewarp rewind` goes back to — the workspace as the
 * prompt found it, stored only when something changed since the previous one. It never blocks
 * the prompt and never answers on stdout (Claude Code and Codex would hand that text to the
 * model as context).
 */
export async function onUserPrompt(ctx: HookContext): Promise<HookOutcome> {
  const { checkpointTurn } = await import("../timemachine/index.ts");
  const r = await checkpointTurn({
    root: ctx.root,
    sessionId: ctx.payload.session_id,
    prompt: ctx.payload.prompt ?? null,
    agent: ctx.agent,
    // Served by the hook server, the agent gets its answer once the scan is done; the record
    // is written after (the next hook waits for it in the worker's queue).
    later: (task) => ctx.later(task),
    clock: ctx.clock,
    random: ctx.random,
  });
  if (r.turn === null) return { kind: "ok", summary: `no turn checkpoint: ${r.skipped}` };
  const t = r.turn;
  return {
    kind: "ok",
    summary: `turn ${t.turn} of ${t.session_id}: ${t.stored ? `checkpoint ${t.snapshot_id}` : `unchanged since ${t.snapshot_id}, nothing stored`}`,
  };
}
