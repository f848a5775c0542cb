import { ErrorCode, parseJsonText, TimewarpError } from "../core/index.ts";
import { hooksFor, mcpServerFor } from "./agent-wiring.ts";
import type { InstallAgent } from "./hook-events.ts";
import {
  isJsonObject,
  type JsonObject,
  mergeEntry,
  mergeHooks,
  removeEntry,
  removeHooks,
} from "./merge-settings.ts";
import { installTomlEntry, type TomlEntry, uninstallTomlEntry } from "./merge-toml.ts";

/** Files shipped in the package that an install copies (read by the caller, passed in). */
export interface InstallAssets {
  /** `plugins/claude-code/skills/timewarp-optimize/SKILL.md`. */
  skill: string;
  /** `plugins/opencode/timewarp.js`. */
  opencodePlugin: string;
}

/** How one project file is installed into and uninstalled from (pure both ways). */
export interface FileSpec {
  /** Project-relative, forward slashes. */
  path: string;
  /** The new text (identical to `current` when nothing changes) and what changed. */
  install: (current: string | null) => { text: string; changes: string[] };
  /** The text with timewarp's part removed, null to delete the file, and what changed. */
  uninstall: (current: string) => { text: string | null; changes: string[] };
}

const formatJson = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

function parseJsonSettings(path: string, text: string | null): JsonObject {
  if (text === null || text.trim() === "") return {};
  const value = parseJsonText(
    text,
    (reason) =>
      new TimewarpError(
        ErrorCode.INVALID_INPUT,
        `${path} is not valid JSON (${reason}); fix or move it, then run the install again — nothing was changed`,
        { data: { file: path } },
      ),
  );
  if (!isJsonObject(value))
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `${path}: expected a JSON object at the top, got ${Array.isArray(value) ? "an array" : typeof value}; nothing was changed`,
      {
        data: { file: path },
      },
    );
  return value;
}

type JsonStep = (value: JsonObject) => { value: JsonObject; changes: string[] };

/** A JSON settings file merged key by key; `created` extras go only into a file we create. */
function jsonFile(options: {
  path: string;
  install: JsonStep[];
  uninstall: JsonStep[];
  createdExtras?: JsonObject;
}): FileSpec {
  return {
    path: options.path,
    install(current) {
      let value =
        current === null ? { ...options.createdExtras } : parseJsonSettings(options.path, current);
      const changes: string[] = [];
      for (const step of options.install) {
        const r = step(value);
        value = r.value;
        changes.push(...r.changes);
      }
      if (changes.length === 0 && current !== null) return { text: current, changes };
      return {
        text: formatJson(value),
        changes: current === null ? ["created", ...changes] : changes,
      };
    },
    uninstall(current) {
      let value = parseJsonSettings(options.path, current);
      const changes: string[] = [];
      for (const step of options.uninstall) {
        const r = step(value);
        value = r.value;
        changes.push(...r.changes);
      }
      if (changes.length === 0) return { text: current, changes };
      const rest = Object.keys(value).filter(
        (k) => !(options.createdExtras && k in options.createdExtras),
      );
      return rest.length === 0
        ? { text: null, changes: [...changes, "deleted (empty)"] }
        : { text: formatJson(value), changes };
    },
  };
}

/** A file that is wholly timewarp's (a skill, a plugin module). */
function wholeFile(path: string, content: string): FileSpec {
  return {
    path,
    install: (current) =>
      current === content
        ? { text: current, changes: [] }
        : { text: content, changes: [current === null ? "created" : "replaced"] },
    uninstall: (current) =>
      current === content
        ? { text: null, changes: ["deleted"] }
        : { text: current, changes: [] /* the user changed it: theirs now */ },
  };
}

/** Codex's TOML config: one entry merged by `merge-toml.ts`, which keeps the user's formatting. */
function tomlEntryFile(path: string, entry: TomlEntry): FileSpec {
  return {
    path,
    install: (current) => installTomlEntry(path, current, entry),
    uninstall: (current) => uninstallTomlEntry(path, current, entry),
  };
}

/** The OpenCode module with the command it shells out to filled in (the file says where). */
export function opencodePluginSource(template: string, command: string): string {
  const argv = JSON.stringify(command.split(" ").filter((s) => s !== ""));
  return template.replace(
    /const TIMEWARP_COMMAND = \[[^\]]*\];/,
    `const TIMEWARP_COMMAND = ${argv};`,
  );
}

/**
 * What `timewarp install <agent>` writes into a project, file by file (pure; the caller reads and
 * writes). `command` is how the agent starts timewarp (`timewarp` on PATH by default).
 *
 * - claude-code: `.claude/settings.json` hooks, `.mcp.json`, the timewarp-optimize skill
 * - gemini: `.gemini/settings.json` hooks and `mcpServers`
 * - codex: `.codex/hooks.json`, and the MCP server in `.codex/config.toml`
 * - opencode: `.opencode/plugins/timewarp.js` and the MCP server in `opencode.json`
 */
export function installSpecs(
  agent: InstallAgent,
  command: string,
  assets: InstallAssets,
): FileSpec[] {
  const server = mcpServerFor(command);
  switch (agent) {
    case "claude-code": {
      const table = hooksFor("claude-code", command);
      return [
        jsonFile({
          path: ".claude/settings.json",
          install: [(v) => mergeHooks(v, table)],
          uninstall: [removeHooks],
        }),
        jsonFile({
          path: ".mcp.json",
          install: [(v) => mergeEntry(v, ["mcpServers", "timewarp"], server)],
          uninstall: [(v) => removeEntry(v, ["mcpServers", "timewarp"], server)],
        }),
        wholeFile(".claude/skills/timewarp-optimize/SKILL.md", assets.skill),
      ];
    }
    case "gemini": {
      const table = hooksFor("gemini", command);
      return [
        jsonFile({
          path: ".gemini/settings.json",
          install: [
            (v) => mergeHooks(v, table),
            (v) => mergeEntry(v, ["mcpServers", "timewarp"], server),
          ],
          uninstall: [removeHooks, (v) => removeEntry(v, ["mcpServers", "timewarp"], server)],
        }),
      ];
    }
    case "codex": {
      const table = hooksFor("codex", command);
      return [
        jsonFile({
          path: ".codex/hooks.json",
          install: [(v) => mergeHooks(v, table)],
          uninstall: [removeHooks],
        }),
        tomlEntryFile(".codex/config.toml", {
          table: "mcp_servers",
          key: "timewarp",
          value: { command: server.command, args: server.args },
        }),
      ];
    }
    case "opencode": {
      const entry = { type: "local", command: [server.command, ...server.args], enabled: true };
      return [
        wholeFile(
          ".opencode/plugins/timewarp.js",
          opencodePluginSource(assets.opencodePlugin, command),
        ),
        jsonFile({
          path: "opencode.json",
          install: [(v) => mergeEntry(v, ["mcp", "timewarp"], entry)],
          uninstall: [(v) => removeEntry(v, ["mcp", "timewarp"], entry)],
          createdExtras: { $schema: "https://opencode.ai/config.json" },
        }),
      ];
    }
  }
}
