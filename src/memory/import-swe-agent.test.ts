import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TimewarpError } from "../core/index.ts";
import { parseGoal } from "./goal.ts";
import {
  classifySweAction,
  miniSweAgentImporter,
  objectiveOf,
  readMiniObservation,
  SWE_TASK_BLACKLIST,
  splitToolArgs,
  sweAgentImporter,
} from "./import-swe-agent.ts";
import { labelsFromFacts } from "./run-labels.ts";
import { TrajectoryStepSchema } from "./trajectory.ts";
import { patchFiles } from "./verdict-file.ts";

const REAL = resolve(import.meta.dirname, "../../test/fixtures/memory/real");
const PYDICOM = join(REAL, "swe-agent/pydicom__pydicom-1458.traj");
const MARSHMALLOW = join(REAL, "swe-agent/marshmallow-code__marshmallow-1867.traj");
const ASTROPY_ID = "astropy__astropy-12907";
const ASTROPY = join(REAL, `mini-swe-agent/trajs/${ASTROPY_ID}/${ASTROPY_ID}.traj.json`);
const head = (p: string) => readFileSync(p, "utf8").slice(0, 65536);

const temps: string[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) rmSync(t, { recursive: true, force: true });
});
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), "tw-swe-"));
  temps.push(d);
  return d;
}

describe("SWE-agent .traj (real excerpts)", () => {
  it("tells SWE-agent from mini-swe-agent by the file's start", () => {
    expect(sweAgentImporter.detect(PYDICOM, head(PYDICOM))).toBe(true);
    expect(miniSweAgentImporter.detect(PYDICOM, head(PYDICOM))).toBe(false);
    expect(miniSweAgentImporter.detect(ASTROPY, head(ASTROPY))).toBe(true);
    expect(sweAgentImporter.detect(ASTROPY, head(ASTROPY))).toBe(false);
  });

  it("reads 0.x windowed commands: create/edit → edit, open/find_file → read, a rejected edit is an error", () => {
    const { runs, warnings } = sweAgentImporter.read(PYDICOM);
    expect(warnings).toEqual([]);
    const run = runs[0];
    expect(run?.id).toBe("pydicom__pydicom-1458");
    expect(run?.source).toMatchObject({ format: "swe-agent", exit_status: "submitted" });
    for (const s of run?.steps ?? []) TrajectoryStepSchema.parse(s);
    const tools = (run?.steps ?? []).filter((s) => s.kind === "tool");
    const view = tools.map((s) => [s.tool, s.call, s.paths?.join(",") ?? s.command, s.is_error]);
    expect(view).toEqual([
      ["create", "edit", "reproduce_bug.py", undefined],
      ["edit", "edit", "reproduce_bug.py", undefined],
      ["bash", "shell", "python reproduce_bug.py", undefined],
      ["find_file", "read", undefined, undefined],
      ["open", "read", "pydicom/pixel_data_handlers/numpy_handler.py", undefined],
      // the open file comes from the `open` before it, not from the state recorded with the step
      ["edit", "edit", "pydicom/pixel_data_handlers/numpy_handler.py", true],
      ["edit", "edit", "pydicom/pixel_data_handlers/numpy_handler.py", true],
      ["edit", "edit", "pydicom/pixel_data_handlers/numpy_handler.py", true],
      ["edit", "edit", "pydicom/pixel_data_handlers/numpy_handler.py", undefined],
      ["bash", "shell", "python reproduce_bug.py", undefined],
      ["bash", "shell", "rm reproduce_bug.py", undefined],
      ["submit", "other", undefined, undefined],
    ]);
    expect(tools[8]?.diff).toContain("+    if 'PixelData' in ds:");
    expect(
      run?.patch?.startsWith("diff --git a/pydicom/pixel_data_handlers/numpy_handler.py"),
    ).toBe(true);
    expect(run?.report).toBeUndefined();
    expect(run?.goal).toMatchObject({
      objective: "Pixel Representation attribute should be optional for pixel data handler",
      instance_id: "pydicom__pydicom-1458",
      blacklist: [...SWE_TASK_BLACKLIST],
    });
    expect(parseGoal(run?.goal).ok).toBe(true);
    expect(run?.steps[0]).toMatchObject({ kind: "user" });
    expect(run?.steps[0]?.text).toContain("Pixel Representation attribute should be optional");
  });

  it("reads 1.x search/replace edits with the old and new text as the diff", () => {
    const run = sweAgentImporter.read(MARSHMALLOW).runs[0];
    const tools = (run?.steps ?? []).filter((s) => s.kind === "tool");
    const find = tools.find((s) => s.tool === "find_file");
    expect(find).toMatchObject({ call: "read", paths: ["src"] });
    const edits = tools.filter((s) => s.tool === "edit");
    expect(edits.map((s) => [s.paths, s.is_error])).toEqual([
      [["src/marshmallow/fields.py"], undefined],
    ]);
    expect(edits[0]?.diff).toBe(
      [
        "-return int(value.total_seconds() / base_unit.total_seconds())",
        "+# round to nearest int",
        "+        return int(round(value.total_seconds() / base_unit.total_seconds()))",
      ].join("\n"),
    );
    expect(tools.find((s) => s.tool === "insert")).toMatchObject({
      call: "edit",
      paths: ["reproduce.py"],
    });
    // \r\n of the recorded patch become \n
    expect(run?.patch).not.toContain("\r");
    expect(patchFiles(run?.patch ?? "")).toEqual(["src/marshmallow/fields.py"]);
  });

  it("classifies str_replace_editor by its subcommand, paths relative to the work tree", () => {
    const state = { working_dir: "/testbed" };
    expect(
      classifySweAction(
        "str_replace_editor str_replace /testbed/pkg/a.py --old_str 'x = 1\ny = 2' --new_str 'x = 3'",
        state,
        undefined,
      ),
    ).toEqual({
      tool: "str_replace_editor",
      call: "edit",
      paths: ["pkg/a.py"],
      diff: "-x = 1\n-y = 2\n+x = 3",
    });
    expect(classifySweAction("str_replace_editor view /testbed/pkg", state, undefined)).toEqual({
      tool: "str_replace_editor",
      call: "read",
      paths: ["pkg"],
    });
    expect(
      classifySweAction(
        "str_replace_editor create /tmp/x.py --file_text 'print(1)'",
        state,
        undefined,
      ),
    ).toMatchObject({ call: "edit", paths: ["/tmp/x.py"], diff: "+print(1)" });
    // the function call's JSON arguments, when kept, win over the rendered action's quoting
    expect(
      classifySweAction(
        "str_replace_editor str_replace /testbed/b.py --old_str 'it'\\''s' --new_str x",
        state,
        undefined,
        { command: "str_replace", path: "/testbed/b.py", old_str: "it's", new_str: "it is" },
      ),
    ).toEqual({ tool: "str_replace_editor", call: "edit", paths: ["b.py"], diff: "-it's\n+it is" });
    expect(classifySweAction("submit", state, undefined)).toEqual({
      tool: "submit",
      call: "other",
    });
    // anything else is the shell's: the extractor decides what the command did
    expect(classifySweAction("sed -i 's/a/b/' pkg/a.py", state, undefined)).toEqual({
      tool: "bash",
      call: "shell",
      command: "sed -i 's/a/b/' pkg/a.py",
    });
  });

  it("splits tool arguments as the shell quotes them", () => {
    expect(splitToolArgs(`a 'b c' "d \\"e\\"" f\\ g 'multi\nline'`)).toEqual([
      "a",
      "b c",
      'd "e"',
      "f g",
      "multi\nline",
    ]);
  });

  it("gives a non-SWE-bench task no blacklist, and a flag submission no patch", () => {
    const dir = temp();
    const file = join(dir, "BabyEncryption.traj");
    writeFileSync(
      file,
      JSON.stringify({
        history: [{ role: "user", content: "ISSUE:\nFind the flag.\nINSTRUCTIONS:\n…" }],
        trajectory: [{ action: "submit 'flag{x}'", observation: "", thought: "done", state: "{}" }],
        info: { exit_status: "submitted", submission: "flag{x}" },
      }),
    );
    const run = sweAgentImporter.read(file).runs[0];
    expect(run?.goal).toEqual({ schema_version: 1, objective: "Find the flag." });
    expect(run?.patch).toBeUndefined();
  });

  it("rejects a file that is not JSON with INVALID_INPUT", () => {
    const dir = temp();
    const file = join(dir, "x.traj");
    writeFileSync(file, "{ not json");
    expect(() => sweAgentImporter.read(file)).toThrow(TimewarpError);
    try {
      sweAgentImporter.read(file);
    } catch (error) {
      expect((error as TimewarpError).code).toBe("INVALID_INPUT");
    }
  });
});

describe("mini-swe-agent .traj.json (real excerpt)", () => {
  it("reads each bash block as a shell call with its return code and output", () => {
    const { runs, warnings } = miniSweAgentImporter.read(ASTROPY);
    expect(warnings).toEqual([]);
    const run = runs[0];
    expect(run?.id).toBe(ASTROPY_ID);
    expect(run?.source).toMatchObject({ format: "mini-swe-agent", exit_status: "Submitted" });
    for (const s of run?.steps ?? []) TrajectoryStepSchema.parse(s);
    const tools = (run?.steps ?? []).filter((s) => s.kind === "tool");
    expect(tools.every((s) => s.tool === "bash" && s.call === "shell")).toBe(true);
    expect(tools[0]).toMatchObject({ command: "ls -R", exit_code: 0 });
    const pytest = tools.find((s) => s.command?.startsWith("pytest astropy/modeling/tests"));
    expect(pytest?.exit_code).toBe(0);
    expect(pytest?.output).toContain("passed");
    expect(pytest?.output).not.toContain("<returncode>");
    // the agent appended a test through a heredoc: a shell call, classified later by the extractor
    expect(
      tools.some((s) =>
        s.command?.startsWith("cat <<'EOF' >> astropy/modeling/tests/test_separable.py"),
      ),
    ).toBe(true);
    // the submission command's answer is the final diff
    expect(tools.at(-1)?.command).toContain("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT");
    expect(run?.steps[0]?.text?.startsWith("Modeling's `separability_matrix`")).toBe(true);
    expect(run?.steps.find((s) => s.kind === "assistant")?.text?.startsWith("THOUGHT")).toBe(false);
  });

  it("finds the SWE-bench verdict in the experiments layout and labels the run from facts", () => {
    const run = miniSweAgentImporter.read(ASTROPY).runs[0];
    expect(run?.report).toMatchObject({ [ASTROPY_ID]: { resolved: true } });
    const goal = parseGoal(run?.goal);
    if (!goal.ok) throw new Error(goal.issues.join("; "));
    const labels = labelsFromFacts({
      goal: goal.value.goal,
      patch: run?.patch ?? "",
      report: run?.report,
      instanceId: ASTROPY_ID,
    });
    // the agent added a regression test: a resolved run whose patch breaks the task's rule
    expect(labels).toMatchObject({
      drift_files: ["astropy/modeling/tests/test_separable.py"],
      outcome: "resolved",
      patch_files: ["astropy/modeling/separable.py", "astropy/modeling/tests/test_separable.py"],
    });
  });

  it("reads an observation's head, elided middle and tail, and a timeout", () => {
    const o = readMiniObservation(
      "<returncode>1</returncode>\n<warning>\ntoo long\n</warning><output_head>\nfirst\n</output_head>\n<elided_chars>\n1234 characters elided\n</elided_chars>\n<output_tail>\nlast\n</output_tail>",
    );
    expect(o.exit_code).toBe(1);
    expect(o.output).toContain("first");
    expect(o.output).toContain("[1234 characters elided]");
    expect(o.output).toContain("last");
    expect(o.output).not.toContain("too long");
    const t = readMiniObservation(
      "The last command <command>sleep 99</command> timed out and has been killed.",
    );
    expect(t).toMatchObject({ exit_code: null, timed_out: true });
  });

  it("reads the first, bare-array format and tool-call answers", () => {
    const dir = temp();
    const bare = join(dir, "old.traj.json");
    writeFileSync(
      bare,
      JSON.stringify([
        { role: "system", content: "sys" },
        {
          role: "user",
          content:
            "<pr_description>\nConsider the following PR description:\nFix it.\n</pr_description>",
        },
        { role: "assistant", content: "THOUGHT: look\n\n```mswea_bash_command\nls\n```" },
        { role: "user", content: "<returncode>2</returncode>\n<output>\nnope\n</output>" },
      ]),
    );
    expect(miniSweAgentImporter.detect(bare, head(bare))).toBe(true);
    const a = miniSweAgentImporter.read(bare).runs[0];
    expect(a?.id).toBe("old");
    expect(a?.goal).toEqual({ schema_version: 1, objective: "Fix it." });
    expect(a?.steps.map((s) => [s.kind, s.command ?? s.text, s.exit_code])).toEqual([
      ["user", "Fix it.", undefined],
      ["assistant", "look", undefined],
      ["tool", "ls", 2],
    ]);
    const calls = join(dir, "calls.traj.json");
    writeFileSync(
      calls,
      JSON.stringify({
        info: { exit_status: "Submitted", submission: "" },
        messages: [
          { role: "user", content: "Task" },
          {
            role: "assistant",
            content: "",
            tool_calls: [
              { id: "c1", function: { name: "bash", arguments: '{"command":"pytest -q"}' } },
            ],
          },
          {
            role: "tool",
            tool_call_id: "c1",
            content: "<returncode>0</returncode>\n<output>\n3 passed\n</output>",
          },
        ],
      }),
    );
    const b = miniSweAgentImporter.read(calls).runs[0];
    expect(b?.steps.at(-1)).toMatchObject({
      command: "pytest -q",
      exit_code: 0,
      output: "3 passed\n",
    });
    expect(b?.patch).toBeUndefined();
  });

  it("clips a long first line to its first sentence", () => {
    const long = `${"Word ".repeat(10)}ends here. ${"more ".repeat(60)}`;
    expect(objectiveOf(long)).toBe(`${"Word ".repeat(10)}ends here.`);
    expect(objectiveOf("x".repeat(500)).length).toBe(200);
  });
});
