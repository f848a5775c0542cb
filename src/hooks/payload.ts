import { z } from "zod";
import type { Result } from "../core/index.ts";
import type { HookAgent, HookEvent } from "./hook-events.ts";

/**
 * A hook payload as Claude Code, Gemini CLI and Codex send it on stdin. Loose on purpose: the
 * agents add fields release after release (`permission_mode`, `model`, `timestamp`, `turn_id`…),
 * and a hook that rejected an unknown field would break the agent it is meant to protect.
 */
export const HookPayloadSchema = z
  .object({
    session_id: z.string().min(1),
    transcript_path: z.string().nullish(),
    cwd: z.string().min(1).optional(),
    hook_event_name: z.string().optional(),
    /** SessionStart: startup | resume | clear | compact. */
    source: z.string().optional(),
    /** SessionEnd: why (Claude Code `reason`, Gemini `reason`). */
    reason: z.string().optional(),
    tool_name: z.string().min(1).optional(),
    /** Usually an object; Codex's freeform apply_patch may hand over the patch text itself. */
    tool_input: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
    tool_response: z.unknown().optional(),
    tool_use_id: z.string().min(1).optional(),
    /** UserPromptSubmit (Claude Code, Codex), BeforeAgent (Gemini CLI): what the user typed. */
    prompt: z.string().optional(),
  })
  .passthrough();

export type HookPayload = z.infer<typeof HookPayloadSchema>;

/** Validate stdin text for `event`: JSON, the common fields, and a tool name on tool events. Pure. */
export function parseHookPayload(text: string, event: HookEvent): Result<HookPayload> {
  if (text.trim() === "")
    return { ok: false, issues: ["stdin: empty (expected a JSON hook payload)"] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      issues: [`stdin: not valid JSON (${error instanceof Error ? error.message : String(error)})`],
    };
  }
  const parsed = HookPayloadSchema.safeParse(json);
  if (!parsed.success) {
    return {
      ok: false,
      issues: parsed.error.issues.map(
        (i) => `${i.path.length > 0 ? i.path.join(".") : "(root)"}: ${i.message}`,
      ),
    };
  }
  if (
    (event === "pre-tool-use" || event === "post-tool-use") &&
    parsed.data.tool_name === undefined
  )
    return { ok: false, issues: [`tool_name: required for ${event}`] };
  return { ok: true, value: parsed.data };
}

/** Gemini CLI names its events BeforeTool/AfterTool; the payload tells us who is calling. */
export function detectAgent(payload: HookPayload): HookAgent {
  const name = payload.hook_event_name;
  if (name === "BeforeTool" || name === "AfterTool" || name === "BeforeAgent") return "gemini";
  if (payload.tool_name === "apply_patch" || payload.turn_id !== undefined) return "codex";
  return "claude-code";
}
