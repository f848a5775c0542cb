import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock, isTimewarpError } from "../core/index.ts";
import { parsePatch } from "../diff/index.ts";
import { parseGoal } from "./goal.ts";
import { splitCursorTurns } from "./import-cursor.ts";
import { detectImporter, importTrajectory } from "./import-formats.ts";
import {
  type TrajectoryFormat,
  TrajectorySourceSchema,
  type TrajectoryStep,
  TrajectoryStepSchema,
} from "./trajectory.ts";

/** Real samples (test/fixtures/memory/import/<format>/SOURCE.md names each one's origin). */
const FIXTURES = resolve(import.meta.dirname, "../../test/fixtures/memory/import");
const SAMPLES: Record<Exclude<TrajectoryFormat, "swe-agent" | "mini-swe-agent">, string> = {
  "claude-code": "claude-code/5ff3b38c-abdc-44b3-a0f5-6d304cdcd155.jsonl",
  codex: "codex/rollout-2026-11-26T20-42-44-01a21998-a744-7621-8006-a65cb53a56f1.jsonl",
  "gemini-cli": "gemini-cli/session-2026-11-26T20-44-49cddda1.jsonl",
  opencode: "opencode/session-export.json",
  cursor: "cursor/s_2026-01-06-14-03-11_cursor.md",
  lab: "lab",
};
const clock = createFixedClock(new Date("2026-11-26T21:00:00Z"));

const temps: string[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) rmSync(t, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tw-import-"));
  temps.push(dir);
  return dir;
}

/** Import a sample into a fresh directory; the steps of each run as written, schema-checked. */
function importSample(path: string, options: { format?: TrajectoryFormat } = {}) {
  const out = tempDir();
  const result = importTrajectory(path, { root: out, out, clock, ...options });
  const runs = result.runs.map((r) => ({
    ...r,
    trajectory: readFileSync(join(r.run_dir, "raw/trajectory.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => TrajectoryStepSchema.parse(JSON.parse(l))),
    source: TrajectorySourceSchema.parse(
      JSON.parse(readFileSync(join(r.run_dir, "raw/source.json"), "utf8")),
    ),
  }));
  return { out, result, runs };
}

const tools = (steps: TrajectoryStep[], call: string) =>
  steps.filter((s) => s.kind === "tool" && s.call === call);

describe("memory import: each agent's own format, from a real sample", () => {
  it("Claude Code: tool_use paired with tool_result; Edit → edit with -old/+new; Bash with output and exit code; a hook's refusal is_error", () => {
    const { runs, result } = importSample(join(FIXTURES, SAMPLES["claude-code"]));
    expect(result.warnings).toEqual([]);
    const [run] = runs;
    expect(run?.source).toMatchObject({
      format: "claude-code",
      session_id: "5ff3b38c-abdc-44b3-a0f5-6d304cdcd155",
      imported_at: "2026-11-26T21:00:00.000Z",
    });
    const steps = run?.trajectory ?? [];
    expect(steps[0]).toMatchObject({ kind: "user", text: "fix the greeting in src/greet.ts" });
    expect(steps.at(-1)).toMatchObject({ kind: "assistant", text: "Done: the greeting is fixed." });
    // absolute paths under the session's cwd become workspace-relative
    expect(tools(steps, "read").map((s) => s.paths)).toEqual([
      ["src/greet.ts"],
      ["package.json"],
      ["README.md"],
    ]);
    const edits = tools(steps, "edit");
    expect(edits.map((s) => [s.tool, s.paths, s.is_error])).toEqual([
      ["Edit", ["src/greet.ts"], false],
      ["Edit", ["package.json"], true],
      ["Edit", ["README.md"], false],
    ]);
    // an applied edit: the hunks Claude Code applied (git format); a refused one: -old/+new
    expect(edits[0]?.diff).toBe(
      '--- a/src/greet.ts\n+++ b/src/greet.ts\n@@ -1,3 +1,3 @@\n export function greet(name: string): string {\n-  return "Hello " + name;\n+  return "Hello, " + name + "!";\n }\n',
    );
    expect(edits[1]?.diff).toBe('-"version": "1.0.0"\n+"version": "2.0.0"');
    expect(edits[1]?.output).toContain("timewarp blocked this Edit on package.json");
    const shell = tools(steps, "shell");
    expect(shell.map((s) => [s.command, s.exit_code, s.is_error])).toEqual([
      [
        "sed -i 's/VERSION = 1/VERSION = 2/' src/util.ts && printf 'export const NEW = 1;\\n' > src/new.ts",
        0,
        false,
      ],
      ["echo 'export const EXTRA = 3;' >> src/util.ts; exit 3", 3, true],
      ["sed -i 's/1.0.0/1.0.1/' package.json", 0, false],
    ]);
    // an MCP tool is `other`: its kind comes from its name, not from what it did
    expect(steps.find((s) => s.tool === "mcp__timewarp__ApplyEditBlock")).toMatchObject({
      call: "other",
      is_error: true,
    });
  });

  it("Claude Code: a test run failing then passing, a tool the client refuses, an applied Edit", () => {
    const { runs, result } = importSample(
      join(FIXTURES, "claude-code/5ffc3d96-440c-4458-89a3-1e13f801b225.jsonl"),
    );
    expect(result.warnings).toEqual([]);
    const steps = runs[0]?.trajectory ?? [];
    expect(tools(steps, "plan")).toEqual([
      expect.objectContaining({
        tool: "TodoWrite",
        is_error: true,
        output: expect.stringContaining("No such tool available: TodoWrite"),
      }),
    ]);
    const tests = tools(steps, "shell");
    expect(tests.map((s) => [s.command, s.exit_code, s.is_error])).toEqual([
      ["node --test test/greet.test.mjs", 1, true],
      ["node --test test/greet.test.mjs", 0, false],
    ]);
    expect(tests[0]?.output).toContain("not ok 1 - greets with a comma");
    expect(tests[1]?.output).toContain("# pass 1");
    expect(tools(steps, "edit")).toEqual([
      expect.objectContaining({
        tool: "Edit",
        paths: ["src/greet.ts"],
        is_error: false,
        diff: expect.stringMatching(/^--- a\/src\/greet\.ts\n\+\+\+ b\/src\/greet\.ts\n@@ /),
      }),
    ]);
  });

  it("Codex: apply_patch → edit with the envelope's files; exec_command with its exit code; a blocked patch is_error", () => {
    const { runs, result } = importSample(join(FIXTURES, SAMPLES.codex));
    expect(result.warnings).toEqual([]);
    const steps = runs[0]?.trajectory ?? [];
    expect(runs[0]?.source.session_id).toBe("01a21998-a744-7621-8006-a65cb53a56f1");
    // Codex's own context messages (environment, instructions) are not the user's prompt
    expect(steps.filter((s) => s.kind === "user").map((s) => s.text)).toEqual([
      "Fix the greeting in src/greet.ts.",
    ]);
    const edits = tools(steps, "edit");
    expect(edits.map((s) => [s.tool, s.paths, s.is_error])).toEqual([
      ["apply_patch", ["src/greet.ts"], false],
      ["apply_patch", ["package.json"], true],
      ["apply_patch", ["README.md"], false],
    ]);
    // an applied patch: the diff the harness applied (git format); a refused one: the agent's envelope
    expect(edits[0]?.diff).toMatch(
      /^--- a\/src\/greet\.ts\n\+\+\+ b\/src\/greet\.ts\n@@ -1,3 \+1,3 @@\n/,
    );
    expect(parsePatch(edits[0]?.diff ?? "").map((p) => p.newPath)).toEqual(["src/greet.ts"]);
    expect(edits[1]?.diff).toMatch(/^\*\*\* Begin Patch\n\*\*\* Update File: package\.json\n/);
    expect(edits[0]?.output).toContain("Success. Updated the following files:");
    expect(tools(steps, "shell").map((s) => [s.tool, s.command, s.exit_code, s.is_error])).toEqual([
      ["exec_command", "sed -i 's/VERSION = 1/VERSION = 2/' src/util.ts", 0, false],
      ["exec_command", "echo 'export const EXTRA = 3;' >> src/util.ts; exit 3", 3, true],
    ]);
    expect(steps.at(-1)).toMatchObject({ kind: "assistant", text: "Done: the greeting is fixed." });
  });

  it("Gemini CLI: the last version of each message; replace/write_file → edit, run_shell_command with Exit Code; status error is_error", () => {
    const { runs, result } = importSample(join(FIXTURES, SAMPLES["gemini-cli"]));
    expect(result.warnings).toEqual([]);
    const steps = runs[0]?.trajectory ?? [];
    expect(runs[0]?.source.session_id).toBe("49cddda1-67ba-4898-a24c-20615175fff7");
    // the <session_context> setup message is not a prompt
    expect(steps.filter((s) => s.kind === "user").map((s) => s.text)).toEqual([
      "Fix the greeting in src/greet.ts.",
    ]);
    expect(tools(steps, "edit").map((s) => [s.tool, s.paths, s.is_error])).toEqual([
      ["replace", ["src/greet.ts"], false],
      ["replace", ["package.json"], true],
      ["replace", ["README.md"], false],
      ["write_file", ["Dockerfile"], true],
    ]);
    expect(tools(steps, "edit")[3]?.diff).toBe("+FROM scratch");
    expect(tools(steps, "shell").map((s) => [s.command, s.exit_code])).toEqual([
      ["sed -i 's/VERSION = 1/VERSION = 2/' src/util.ts", 0],
      ["echo 'export const EXTRA = 3;' >> src/util.ts; exit 3", 3],
    ]);
    expect(tools(steps, "shell")[1]?.output).toContain("Exit Code: 3");
  });

  it("Gemini CLI's older one-document recording (session-*.json) reads the same way", () => {
    const file = join(FIXTURES, "gemini-cli/session-01.json");
    expect(detectImporter(file).format).toBe("gemini-cli");
    const { runs } = importSample(file);
    expect(runs[0]?.source.session_id).toBe("dcbe78d3-ea75-4786-929e-d6cff0fc00ed");
    expect(runs[0]?.trajectory.map((s) => [s.kind, s.text])).toEqual([
      ["user", "[REDACTED_PROMPT]"],
      ["assistant", "[REDACTED_ASSISTANT_TEXT]"],
    ]);
  });

  it("OpenCode export: tool parts with state; edit → its unified diff; bash exit from metadata; status error is_error", () => {
    const { runs, result } = importSample(join(FIXTURES, SAMPLES.opencode));
    expect(result.warnings).toEqual([]);
    const steps = runs[0]?.trajectory ?? [];
    expect(runs[0]).toMatchObject({ run_id: "ses_de665b098ffej1dl978kjZsyw9", edits: 3, shell: 2 });
    const edits = tools(steps, "edit");
    expect(edits.map((s) => [s.paths, s.is_error])).toEqual([
      [["src/greet.ts"], false],
      [["package.json"], true],
      [["README.md"], false],
    ]);
    expect(edits[0]?.diff).toMatch(/^-\s+return "Hello " \+ name;$/m);
    expect(edits[1]?.output).toContain("timewarp blocked this Edit on package.json");
    expect(tools(steps, "shell").map((s) => [s.command, s.exit_code])).toEqual([
      ["sed -i 's/VERSION = 1/VERSION = 2/' src/util.ts", 0],
      ["echo 'export const EXTRA = 3;' >> src/util.ts; exit 3", 3],
    ]);
    expect(steps.at(-1)).toMatchObject({ kind: "assistant", text: "The greeting is fixed." });
  });

  it("Cursor export: the markdown kept as raw/cursor.md, one step per turn", () => {
    const file = join(FIXTURES, SAMPLES.cursor);
    const { runs } = importSample(file);
    const run = runs[0];
    expect(readFileSync(join(run?.run_dir ?? "", "raw/cursor.md"), "utf8")).toBe(
      readFileSync(file, "utf8"),
    );
    expect(run?.trajectory.map((s) => s.kind)).toEqual(["user", "assistant"]);
    expect(run?.trajectory[0]?.text).toMatch(/^fix this\. do you know the problem\?/);
  });

  it("the original lab: one run per question, the conversation cut at each question, with its goal (lab field names accepted)", () => {
    const { runs, result } = importSample(join(FIXTURES, "lab"));
    expect(result.warnings).toEqual([]);
    const session = "s_2026-01-05-09-12-40_cursor";
    expect(runs.map((r) => [r.run_id, r.source.question, r.source.session_id])).toEqual([
      [`${session}_q01`, "q01", session],
      [`${session}_q02`, "q02", session],
      [`${session}_q03`, "q03", session],
    ]);
    expect(runs.map((r) => r.trajectory.find((s) => s.kind === "user")?.text)).toEqual([
      "what does this repo do?",
      "what would be next steps?",
      "can you give me a p0/p1/p2 list of those? don't touch the code yet",
    ]);
    // each run's chat holds its question only, under the export's header
    const chat2 = readFileSync(join(runs[1]?.run_dir ?? "", "raw/cursor.md"), "utf8");
    expect(chat2).toMatch(/^# What does this repository do\?\n_Exported on/);
    expect(chat2).toContain("what would be next steps?");
    expect(chat2).not.toContain("what does this repo do?");
    expect(chat2).not.toContain("p0/p1/p2");
    // the goal as the lab wrote it, and timewarp reads it
    const goal = JSON.parse(readFileSync(join(runs[2]?.run_dir ?? "", "goal.json"), "utf8"));
    expect(goal).toMatchObject({
      run_id: `${session}_q03`,
      allowed_paths: expect.arrayContaining(["tests/test_core.py"]),
    });
    const parsed = parseGoal(goal);
    expect(parsed.ok && parsed.value.goal.whitelist).toContain("tests/test_core.py");
    // the source names the session's conversation and its hash
    const conversation = join(FIXTURES, "lab/data/1_sessions", session, "raw/full_conversation.md");
    expect(runs[0]?.source.file).toBe(conversation);
    // one session directory alone gives the same runs
    const one = importSample(join(FIXTURES, "lab/data/1_sessions", session));
    expect(one.runs.map((r) => r.run_id)).toEqual(runs.map((r) => r.run_id));
    // without the lab's own pairs/qNN/chat.md, the questions are the export's user turns
    const bare = tempDir();
    cpSync(join(FIXTURES, "lab"), bare, { recursive: true });
    for (const q of ["q01", "q02", "q03"])
      rmSync(join(bare, "data/1_sessions", session, "pairs", q, "chat.md"));
    const cut = importSample(bare);
    expect(cut.runs.map((r) => r.trajectory[0]?.text)).toEqual(
      runs.map((r) => r.trajectory[0]?.text),
    );
  });

  it("a conversation pasted into a prompt is the user's text, not turns: Cursor's own turns follow a --- rule", () => {
    const md = [
      "# t",
      "_Exported on 1/1/2025 at 10:00:00 PDT from Cursor (1.7.53)_",
      "",
      "---",
      "",
      "**User**",
      "",
      "look at this chat:",
      "**User**  ",
      "translate the README",
      "**Cursor**",
      "done",
      "",
      "---",
      "",
      "**Cursor**",
      "",
      "I read it.",
      "",
    ].join("\n");
    const { turns } = splitCursorTurns(md);
    expect(turns.map((t) => [t.role, t.text.split("\n")[0]])).toEqual([
      ["user", "look at this chat:"],
      ["assistant", "I read it."],
    ]);
  });
});

describe("memory import: detection, bad records, whole run directories", () => {
  it("tells each format from its content, not its name", () => {
    const dir = tempDir();
    for (const [format, sample] of Object.entries(SAMPLES)) {
      if (format === "lab") {
        expect(detectImporter(join(FIXTURES, sample)).format).toBe("lab");
        continue;
      }
      // the same bytes under a name that says nothing
      const renamed = join(dir, `sample-${format}.txt`);
      copyFileSync(join(FIXTURES, sample), renamed);
      expect(detectImporter(renamed).format).toBe(format);
    }
  });

  it("an unknown file is IMPORT_FORMAT_UNKNOWN naming the formats it knows; nothing is written", () => {
    const dir = tempDir();
    const file = join(dir, "notes.jsonl");
    writeFileSync(file, '{"hello": "world"}\n{"a": 1}\n');
    const out = join(dir, "runs");
    let caught: unknown;
    try {
      importTrajectory(file, { root: dir, out });
    } catch (error) {
      caught = error;
    }
    expect(isTimewarpError(caught, "IMPORT_FORMAT_UNKNOWN")).toBe(true);
    expect((caught as { data: { formats: string[] } }).data.formats).toEqual(
      expect.arrayContaining(["claude-code", "codex", "gemini-cli", "opencode", "cursor", "lab"]),
    );
    expect(existsSync(out)).toBe(false);
  });

  it("a torn JSONL line is a warning naming the line; the rest is imported", () => {
    const dir = tempDir();
    const lines = readFileSync(join(FIXTURES, SAMPLES.codex), "utf8").trimEnd().split("\n");
    const torn = 8; // the first apply_patch call
    lines[torn - 1] = (lines[torn - 1] ?? "").slice(0, 40);
    const file = join(dir, "rollout-torn.jsonl");
    writeFileSync(file, `${lines.join("\n")}\n`);
    const { result, runs } = importSample(file);
    expect(result.warnings).toHaveLength(2);
    expect(result.warnings[0]).toMatch(
      new RegExp(`^rollout-torn\\.jsonl:${torn}: not a JSON record`),
    );
    // its output, read later, has no call to belong to: said, not guessed
    expect(result.warnings[1]).toMatch(
      /^rollout-torn\.jsonl:10: output for no known call \(call_1\)/,
    );
    // the other calls are all there
    expect(tools(runs[0]?.trajectory ?? [], "shell")).toHaveLength(2);
    expect(tools(runs[0]?.trajectory ?? [], "edit")).toHaveLength(2);
  });

  it("re-import refuses RUN_EXISTS and leaves the run as it was; --force replaces it whole", () => {
    const out = tempDir();
    const lab = join(out, "lab");
    cpSync(join(FIXTURES, "lab"), lab, { recursive: true });
    const first = importTrajectory(lab, { root: out, out, clock });
    const q01 = first.runs[0]?.run_dir ?? "";
    writeFileSync(join(q01, "events.jsonl"), "mine\n");
    // one of three runs exists: none is written
    rmSync(first.runs[2]?.run_dir ?? "", { recursive: true });
    let caught: unknown;
    try {
      importTrajectory(lab, { root: out, out, clock });
    } catch (error) {
      caught = error;
    }
    expect(isTimewarpError(caught, "RUN_EXISTS")).toBe(true);
    expect(readFileSync(join(q01, "events.jsonl"), "utf8")).toBe("mine\n");
    expect(existsSync(first.runs[2]?.run_dir ?? "")).toBe(false);
    const again = importTrajectory(lab, { root: out, out, clock, force: true });
    expect(again.runs).toHaveLength(3);
    expect(existsSync(join(q01, "events.jsonl"))).toBe(false);
    // no temp directory is left beside the runs
    expect(readdirSync(out).filter((n) => n.startsWith("."))).toEqual([]);
  });

  it("a goal that names one field twice (lab alias and timewarp name) is refused naming both", () => {
    const r = parseGoal({ objective: "x", allowed_paths: ["a"], whitelist: ["b"] });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.issues.join("\n")).toMatch(/allowed_paths.*whitelist/);
    const b = parseGoal({ objective: "x", forbidden_paths: ["a"], blacklist: ["b"] });
    expect(!b.ok && b.issues.join("\n")).toMatch(/forbidden_paths.*blacklist/);
    const ok = parseGoal({
      objective: "x",
      allowed_paths: ["docs/**"],
      forbidden_paths: ["src/**"],
    });
    expect(ok.ok && [ok.value.goal.whitelist, ok.value.goal.blacklist]).toEqual([
      ["docs/**"],
      ["src/**"],
    ]);
  });
});
