import type { HookOutcome } from "./hook-outcome.ts";
import { offerContext } from "./memory-offer.ts";
import type { HookContext } from "./run-hook.ts";

/**
 * A user prompt (Claude Code and Codex `UserPromptSubmit`, Gemini CLI `BeforeAgent`, OpenCode's
 * `chat.message`): the turn checkpoint `timewarp rewind` goes back to — the workspace as the
 * prompt found it, stored only when something changed since the previous one — and the memory
 * offer for the prompt (issue 18): the cards that fit it, and the goal line, that this session
 * was not offered yet, as added context. It never blocks the prompt; nothing else goes to stdout
 * (Claude Code and Codex hand a prompt hook's stdout to the model).
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
  const context = await offerContext(ctx, ctx.payload.prompt ?? null);
  const offered = context === undefined ? {} : { context };
  if (r.turn === null)
    return { kind: "ok", summary: `no turn checkpoint: ${r.skipped}`, ...offered };
  const t = r.turn;
  return {
    kind: "ok",
    summary: `turn ${t.turn} of ${t.session_id}: ${t.stored ? `checkpoint ${t.snapshot_id}` : `unchanged since ${t.snapshot_id}, nothing stored`}`,
    ...offered,
  };
}
