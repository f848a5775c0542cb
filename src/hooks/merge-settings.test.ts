import { describe, expect, it } from "vitest";
import { hooksFor } from "./agent-wiring.ts";
import { mergeEntry, mergeHooks, removeEntry, removeHooks } from "./merge-settings.ts";

const ours = hooksFor("claude-code", "timewarp");

describe("mergeHooks / removeHooks", () => {
  it("adds our groups beside the user's, is a no-op the second time, and removes only ours", () => {
    const user = {
      model: "opus",
      hooks: {
        PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "./guard.sh" }] }],
      },
    };
    const once = mergeHooks(user, ours);
    expect(once.changes).toEqual([
      "+hooks.SessionStart",
      "+hooks.PreToolUse",
      "+hooks.PostToolUse",
      "+hooks.PostToolUseFailure",
      "+hooks.SessionEnd",
      "+hooks.UserPromptSubmit",
    ]);
    expect((once.value.hooks as Record<string, unknown[]>).PreToolUse).toHaveLength(2);
    const twice = mergeHooks(once.value, ours);
    expect(twice.changes).toEqual([]);
    expect(twice.value).toBe(once.value);
    const removed = removeHooks(once.value);
    expect(removed.value).toEqual(user);
  });

  it("replaces an older group of ours (another matcher or command prefix) in place", () => {
    const old = mergeHooks({}, hooksFor("claude-code", "npx timewarp")).value;
    const updated = mergeHooks(old, ours);
    expect(updated.changes).toEqual([
      "~hooks.SessionStart",
      "~hooks.PreToolUse",
      "~hooks.PostToolUse",
      "~hooks.PostToolUseFailure",
      "~hooks.SessionEnd",
      "~hooks.UserPromptSubmit",
    ]);
    expect(updated.value.hooks).toEqual(ours);
  });

  it("an install from before the shell client (`timewarp hook …`) is moved to `timewarp-hook` in place", () => {
    const before = { shellClient: false } as const;
    // That install had no PostToolUseFailure (nor UserPromptSubmit) either.
    const {
      PostToolUseFailure: _,
      UserPromptSubmit: _prompt,
      ...earlier
    } = hooksFor("claude-code", "timewarp", before);
    const old = mergeHooks({}, earlier).value;
    const command = (v: Record<string, unknown>) =>
      (v.hooks as Record<string, { hooks: { command: string }[] }[]>).PreToolUse?.[0]?.hooks[0]
        ?.command;
    expect(command(old)).toBe("timewarp hook pre-tool-use --agent claude-code");
    const updated = mergeHooks(old, ours);
    // The four events it had move over in place; PostToolUseFailure is new beside them.
    expect(updated.changes).toEqual([
      "~hooks.SessionStart",
      "~hooks.PreToolUse",
      "~hooks.PostToolUse",
      "+hooks.PostToolUseFailure",
      "~hooks.SessionEnd",
      "+hooks.UserPromptSubmit",
    ]);
    expect(command(updated.value)).toBe("timewarp-hook pre-tool-use --agent claude-code");
    // a path to timewarp gets the sibling; any other launcher keeps `hook`
    expect(command(mergeHooks({}, hooksFor("claude-code", "/opt/tw/bin/timewarp")).value)).toBe(
      "/opt/tw/bin/timewarp-hook pre-tool-use --agent claude-code",
    );
    expect(removeHooks(updated.value).value).toEqual({});
  });

  it("keeps a user's handler that shares a group with ours", () => {
    const shared = {
      hooks: {
        SessionEnd: [
          {
            hooks: [
              { type: "command", command: "./notify.sh" },
              { type: "command", command: "timewarp hook session-end --agent claude-code" },
            ],
          },
        ],
      },
    };
    expect(removeHooks(shared).value).toEqual({
      hooks: { SessionEnd: [{ hooks: [{ type: "command", command: "./notify.sh" }] }] },
    });
  });
});

describe("mergeEntry / removeEntry", () => {
  it("sets a nested entry once and removes it only while it is still ours", () => {
    const server = { command: "timewarp", args: ["mcp"] };
    const a = mergeEntry({ mcpServers: { other: {} } }, ["mcpServers", "timewarp"], server);
    expect(a.changes).toEqual(["+mcpServers.timewarp"]);
    expect(mergeEntry(a.value, ["mcpServers", "timewarp"], server).changes).toEqual([]);
    expect(removeEntry(a.value, ["mcpServers", "timewarp"], server).value).toEqual({
      mcpServers: { other: {} },
    });
    const theirs = { mcpServers: { timewarp: { command: "tw" } } };
    expect(removeEntry(theirs, ["mcpServers", "timewarp"], server).changes).toEqual([]);
    expect(
      removeEntry({ mcpServers: { timewarp: server } }, ["mcpServers", "timewarp"], server).value,
    ).toEqual({});
  });
});
