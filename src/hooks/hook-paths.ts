import { createHash } from "node:crypto";
import { join } from "node:path";
import { workspacePaths } from "../core/index.ts";
import type { HookPayload } from "./payload.ts";

/** Where the hooks keep their scratch state, inside `.timewarp/hooks/`. */
export interface HookPaths {
  /**
   * Also the kept view of the workspace a shell command's changes are diffed against
   * (`stat-cache.bin`, `overlay.json`: see `scanKept` in src/store/workspace-scan.ts).
   */
  dir: string;
  /** Pre-images captured by PreToolUse, one folder per session. */
  pending: string;
  /** What each session was offered from memory (`<session>.json`), kept until the session expires. */
  offered: string;
}

export function hookPaths(root: string): HookPaths {
  const dir = join(workspacePaths(root).data, "hooks");
  return { dir, pending: join(dir, "pending"), offered: join(dir, "offered") };
}

/** A name safe as one path component (agents' ids are uuids, but the payload is untrusted). */
export function safeComponent(value: string): string {
  const cleaned = value.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_");
  return cleaned.length > 0 && cleaned.length <= 80
    ? cleaned
    : createHash("sha1").update(value).digest("hex");
}

/**
 * The key pairing a PreToolUse with its PostToolUse: the agent's `tool_use_id` when it sends one
 * (Claude Code, Codex), else a hash of the tool name and input, which both events repeat
 * verbatim (Gemini CLI). Pure.
 */
export function captureKey(payload: HookPayload): string {
  if (payload.tool_use_id !== undefined) return safeComponent(payload.tool_use_id);
  const input = JSON.stringify(payload.tool_input ?? null);
  return `h_${createHash("sha1")
    .update(`${payload.tool_name ?? ""}\0${input}`)
    .digest("hex")}`;
}

/** The pending-capture file of one tool call. */
export function pendingFile(root: string, payload: HookPayload): string {
  return join(
    hookPaths(root).pending,
    safeComponent(payload.session_id),
    `${captureKey(payload)}.json`,
  );
}
