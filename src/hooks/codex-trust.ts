import { createHash } from "node:crypto";
import { isTimewarpHandler } from "./agent-wiring.ts";

/**
 * How Codex judges a project hook before running it: a hook is trusted when the user's
 * `$CODEX_HOME/config.toml` holds, under `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"]`,
 * a `trusted_hash` equal to the hash of the hook as it now stands. That is what `/hooks` writes
 * ("trust") in the TUI; `codex exec --trust` trusts the folder, not its hooks. A new hook
 * (no entry) or one changed since it was trusted (another hash: a new command path after
 * timewarp moved, another timeout) is skipped without a word, and so is one turned off there
 * (`enabled = false`). Measured against Codex 0.171.0's own `hooks/list` (issue 17).
 */
export type CodexHookTrust = "trusted" | "untrusted" | "modified" | "disabled";

export interface CodexHookReview {
  /** Codex's event name (`PreToolUse`). */
  event: string;
  /** The `hooks.state` key Codex files the hook under. */
  key: string;
  /** The hash Codex would trust it by now. */
  hash: string;
  status: CodexHookTrust;
}

/** `{"hooks": {Event: [{matcher?, hooks: [handler]}]}}`, loosely (the user's file). */
type HooksFile = { hooks?: Record<string, unknown> };
type StateEntry = { trusted_hash?: unknown; enabled?: unknown };

/** `PreToolUse` → `pre_tool_use`: Codex's label for an event in keys and hashes. */
function eventLabel(event: string): string {
  return event.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
}

/** JSON with every object's keys sorted, no spaces: the form Codex hashes. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null)
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value);
}

/**
 * The hash Codex trusts a command hook by (pure): sha256 over the hook's normalized identity —
 * its event label, its group's matcher, and the handler alone with its timeout filled in
 * (600 s when unset, at least 1) and `async` (false when unset).
 */
export function codexHookHash(
  event: string,
  matcher: string | undefined,
  handler: { command: string; timeout?: number; async?: boolean },
): string {
  const identity = {
    event_name: eventLabel(event),
    ...(matcher !== undefined ? { matcher } : {}),
    hooks: [
      {
        type: "command",
        command: handler.command,
        timeout: Math.max(1, handler.timeout ?? 600),
        async: handler.async ?? false,
      },
    ],
  };
  return `sha256:${createHash("sha256").update(canonicalJson(identity)).digest("hex")}`;
}

const asObject = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;

/**
 * Each of timewarp's handlers in a project's `.codex/hooks.json`, with its key and how Codex
 * would judge it against `state` (the `hooks.state` table of `$CODEX_HOME/config.toml`). Codex
 * names the file by the path it found it at: `hooksFiles` are the paths it may use (the
 * project's, and its real path), the first with an entry wins. Pure.
 */
export function reviewCodexHooks(options: {
  hooksFiles: string[];
  hooksJson: unknown;
  state: Record<string, unknown>;
}): CodexHookReview[] {
  const out: CodexHookReview[] = [];
  const events = asObject((options.hooksJson as HooksFile | null)?.hooks) ?? {};
  for (const [event, groups] of Object.entries(events)) {
    if (!Array.isArray(groups)) continue;
    groups.forEach((group: unknown, g) => {
      const matcher = asObject(group)?.matcher;
      const handlers = asObject(group)?.hooks;
      if (!Array.isArray(handlers)) return;
      handlers.forEach((handler: unknown, h) => {
        const fields = asObject(handler);
        if (fields === undefined || !isTimewarpHandler(handler)) return;
        const hash = codexHookHash(event, typeof matcher === "string" ? matcher : undefined, {
          command: fields.command as string,
          ...(typeof fields.timeout === "number" ? { timeout: fields.timeout } : {}),
          ...(typeof fields.async === "boolean" ? { async: fields.async } : {}),
        });
        const keys = options.hooksFiles.map((f) => `${f}:${eventLabel(event)}:${g}:${h}`);
        const key = keys.find((k) => options.state[k] !== undefined) ?? keys[0] ?? "";
        const entry = asObject(options.state[key]) as StateEntry | undefined;
        const status: CodexHookTrust =
          entry?.enabled === false
            ? "disabled"
            : entry?.trusted_hash === undefined
              ? "untrusted"
              : entry.trusted_hash === hash
                ? "trusted"
                : "modified";
        out.push({ event, key, hash, status });
      });
    });
  }
  return out;
}
