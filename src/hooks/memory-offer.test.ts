import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { readEvents, systemClock, systemRandom, workspacePaths } from "../core/index.ts";
import { OFFER_BUDGET_BYTES } from "../memory/index.ts";
import { HOOK_AGENTS, type HookAgent } from "./hook-events.ts";
import { runHook } from "./run-hook.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function workspace(): string {
  const t = makeTempDir("tw-offer-");
  cleanups.push(t.cleanup);
  writeFileSync(join(t.dir, "a.txt"), "a\n");
  return t.dir;
}

const patternsDir = (root: string) => join(workspacePaths(root).data, "memory", "patterns");

function card(id: string, title: string, triggers: string[], steps: string[], extra = "") {
  return {
    version: "1",
    pattern_id: id,
    title,
    triggers,
    steps,
    invariants: extra === "" ? [] : [extra],
    anti_patterns: ["edit package.json without consent"],
    eval_examples: [],
    views: { terse: title, guided: title },
    provenance: { source_runs: ["r1"], created_by: "test", created_at: "2026-01-01T00:00:00Z" },
    uses: 0,
  };
}

function seedCards(root: string, cards: ReturnType<typeof card>[]): void {
  const dir = patternsDir(root);
  mkdirSync(dir, { recursive: true });
  for (const c of cards) writeFileSync(join(dir, `${c.pattern_id}.json`), JSON.stringify(c));
}

const TIMEZONE = card(
  "pc_timezone_parser",
  "Fix the timezone offset in the date parser",
  ["timezone offset", "date parser"],
  ["edit src/date.ts to keep the offset", "run npm test -- date"],
);
const RELEASE = card(
  "pc_release_notes",
  "Write the release notes for a version",
  ["release notes", "changelog"],
  ["edit CHANGELOG.md"],
);

function seedGoal(root: string, objective: string, blacklist = ["package.json"]): void {
  mkdirSync(join(workspacePaths(root).data, "memory"), { recursive: true });
  writeFileSync(
    workspacePaths(root).goal,
    JSON.stringify({ objective, whitelist: ["src/"], blacklist }),
  );
}

const hook = (
  root: string,
  event: "session-start" | "user-prompt-submit",
  agent: HookAgent,
  session: string,
  prompt?: string,
) =>
  runHook({
    event,
    input: JSON.stringify({
      session_id: session,
      cwd: root,
      transcript_path: null,
      hook_event_name: event === "session-start" ? "SessionStart" : "UserPromptSubmit",
      ...(event === "session-start" ? { source: "startup" } : { prompt: prompt ?? "" }),
    }),
    agent,
    json: agent === "opencode",
    clock: systemClock,
    random: systemRandom,
  });

/** The added context the agent reads from the hook's stdout ("" when none). */
function contextOf(agent: HookAgent, stdout: string): string {
  if (stdout === "") return "";
  const doc = JSON.parse(stdout) as {
    context?: string;
    hookSpecificOutput?: { hookEventName: string; additionalContext: string };
  };
  if (agent === "opencode") return doc.context ?? "";
  return doc.hookSpecificOutput?.additionalContext ?? "";
}

const eventName: Record<HookAgent, { start: string; prompt: string }> = {
  "claude-code": { start: "SessionStart", prompt: "UserPromptSubmit" },
  codex: { start: "SessionStart", prompt: "UserPromptSubmit" },
  gemini: { start: "SessionStart", prompt: "BeforeAgent" },
  opencode: { start: "session.created", prompt: "chat.message" },
};

describe.each(HOOK_AGENTS)("memory offer for %s", (agent) => {
  it("a session start offers the goal and the card for its objective, in the agent's form", async () => {
    const root = workspace();
    seedCards(root, [TIMEZONE, RELEASE]);
    seedGoal(root, "fix the timezone offset bug in the date parser");
    const run = await hook(root, "session-start", agent, "s1");
    expect(run.exitCode).toBe(0);
    const context = contextOf(agent, run.stdout);
    expect(context).toContain("goal: fix the timezone offset bug in the date parser");
    expect(context).toContain("never edit: package.json");
    expect(context).toContain("[pc_timezone_parser] Fix the timezone offset in the date parser");
    expect(context).toContain("edit src/date.ts to keep the offset");
    expect(context).not.toContain("pc_release_notes");
    if (agent !== "opencode") {
      const doc = JSON.parse(run.stdout) as { hookSpecificOutput: { hookEventName: string } };
      expect(doc.hookSpecificOutput.hookEventName).toBe(eventName[agent].start);
    }
  });

  it("a prompt gets the cards that fit it, each once per session; nothing when none fits", async () => {
    const root = workspace();
    seedCards(root, [TIMEZONE, RELEASE]);
    expect(contextOf(agent, (await hook(root, "session-start", agent, "s1")).stdout)).toBe("");
    const first = await hook(
      root,
      "user-prompt-submit",
      agent,
      "s1",
      "the date parser drops the timezone offset",
    );
    const context = contextOf(agent, first.stdout);
    expect(context).toContain("[pc_timezone_parser]");
    expect(context).not.toContain("goal:");
    if (agent !== "opencode") {
      const doc = JSON.parse(first.stdout) as { hookSpecificOutput: { hookEventName: string } };
      expect(doc.hookSpecificOutput.hookEventName).toBe(eventName[agent].prompt);
    }
    const again = await hook(
      root,
      "user-prompt-submit",
      agent,
      "s1",
      "timezone offset in the date parser again",
    );
    expect(contextOf(agent, again.stdout)).toBe("");
    const unrelated = await hook(root, "user-prompt-submit", agent, "s1", "rename the logger");
    expect(contextOf(agent, unrelated.stdout)).toBe("");
    // another session is offered the card anew
    const other = await hook(
      root,
      "user-prompt-submit",
      agent,
      "s2",
      "the date parser drops the timezone offset",
    );
    expect(contextOf(agent, other.stdout)).toContain("[pc_timezone_parser]");
  });
});

describe("memory offer", () => {
  it("says nothing without a goal and without cards (the prompt hook prints nothing)", async () => {
    const root = workspace();
    const start = await hook(root, "session-start", "claude-code", "s1");
    expect(start.outcome.kind).toBe("ok");
    expect(start.stdout).toBe("");
    const prompt = await hook(root, "user-prompt-submit", "claude-code", "s1", "fix the parser");
    expect(prompt.stdout).toBe("");
  });

  it("a resumed session is not offered the card again; a compacted one is", async () => {
    const root = workspace();
    seedCards(root, [TIMEZONE]);
    seedGoal(root, "fix the timezone offset bug in the date parser");
    const first = await hook(root, "session-start", "claude-code", "s1");
    expect(contextOf("claude-code", first.stdout)).toContain("[pc_timezone_parser]");
    const resumed = await hook(root, "session-start", "claude-code", "s1");
    expect(resumed.outcome.summary).toContain("resumed");
    expect(resumed.stdout).toBe("");
    const compact = await runHook({
      event: "session-start",
      input: JSON.stringify({ session_id: "s1", cwd: root, source: "compact" }),
      agent: "claude-code",
      clock: systemClock,
      random: systemRandom,
    });
    const context = contextOf("claude-code", compact.stdout);
    expect(context).toContain("goal: fix the timezone offset bug in the date parser");
    expect(context).toContain("[pc_timezone_parser]");
  });

  it("a session start without a goal offers nothing, even with cards", async () => {
    const root = workspace();
    seedCards(root, [TIMEZONE]);
    expect((await hook(root, "session-start", "codex", "s1")).stdout).toBe("");
  });

  it("stays within 1.5 KB however many and however long the cards", async () => {
    const root = workspace();
    const long = "keep the timezone offset of every parsed date ".repeat(12);
    seedCards(
      root,
      Array.from({ length: 8 }, (_, i) =>
        card(
          `pc_timezone_${i}`,
          `Fix the timezone offset in the date parser, case ${i}`,
          ["timezone offset", "date parser"],
          [`edit src/date${i}.ts`, long],
          long,
        ),
      ),
    );
    seedGoal(
      root,
      "fix the timezone offset in the date parser",
      Array.from({ length: 80 }, (_, i) => `vendor/lib${i}/`),
    );
    const run = await hook(root, "session-start", "claude-code", "s1");
    const context = contextOf("claude-code", run.stdout);
    expect(context).toContain("[pc_timezone_");
    expect(Buffer.byteLength(context, "utf8")).toBeLessThanOrEqual(OFFER_BUDGET_BYTES);
    expect(context).toContain("goal: fix the timezone offset in the date parser");
    // whole card lines only: each one that is there ends as formatted, none is cut by the cap
    const lines = context.split("\n").filter((l) => l.startsWith("- [pc_"));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(8);
  });

  it("a broken card library or goal still lets the session start: no context, a hook.failed event", async () => {
    const root = workspace();
    // the library is a file, not a directory: listing it fails
    mkdirSync(join(workspacePaths(root).data, "memory"), { recursive: true });
    writeFileSync(patternsDir(root), "not a directory");
    seedGoal(root, "fix the timezone offset in the date parser");
    const run = await hook(root, "session-start", "claude-code", "s1");
    expect(run.outcome.kind).toBe("ok");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe("");
    const failed = readEvents(workspacePaths(root).events).events.filter(
      (e) => e.type === "hook.failed",
    );
    expect(failed).toHaveLength(1);
    expect(failed[0]?.data.message).toMatch(/^memory offer: /);

    const root2 = workspace();
    seedCards(root2, [TIMEZONE]);
    writeFileSync(join(patternsDir(root2), "pc_torn.json"), "{");
    writeFileSync(workspacePaths(root2).goal, '{"objective": 3}');
    const run2 = await hook(root2, "user-prompt-submit", "gemini", "s1", "timezone date parser");
    expect(run2.outcome.kind).toBe("ok");
    expect(run2.stdout).toBe("");
    const failed2 = readEvents(workspacePaths(root2).events).events.filter(
      (e) => e.type === "hook.failed",
    );
    expect(failed2.map((e) => e.data.message)).toEqual([
      expect.stringMatching(/^memory offer: .*goal\.json/),
    ]);
  });
});
