import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  mapLabGoal,
  renderLegacyChat,
  renderLegacyTerm,
  writeCursorRunDir,
  writeRunDir,
} from "../bench/real-runs.ts";
import { RunLabelsSchema } from "../src/memory/eval.ts";
import { extractRunEvents } from "../src/memory/extract-events.ts";
import { readGoal } from "../src/memory/goal.ts";
import { miniSweAgentImporter, sweAgentImporter } from "../src/memory/index.ts";
import { TrajectorySourceSchema, TrajectoryStepSchema } from "../src/memory/trajectory.ts";

/**
 * The real-run bench's conversion step on real excerpts (test/fixtures/memory/real): the run
 * directory it writes in each layout, read back by the goal schema and main's extractor.
 */
const REAL = resolve(import.meta.dirname, "fixtures/memory/real");
const ID = "astropy__astropy-12907";
const ASTROPY = join(REAL, `mini-swe-agent/trajs/${ID}/${ID}.traj.json`);
const PYDICOM = join(REAL, "swe-agent/pydicom__pydicom-1458.traj");
const now = new Date("2026-01-01T00:00:00Z");

const temps: string[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) rmSync(t, { recursive: true, force: true });
});
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), "tw-real-"));
  temps.push(d);
  return d;
}

describe("real runs → run directories", () => {
  it("trajectory layout: steps, source, patch, verdict, goal and labels", () => {
    const run = miniSweAgentImporter.read(ASTROPY).runs[0];
    if (run === undefined) throw new Error("no run");
    const dir = join(temp(), ID);
    const { labels } = writeRunDir(dir, run, {
      layout: "trajectory",
      file: ASTROPY,
      now,
      origin: "https://example.invalid/x",
      license: "MIT",
    });
    const lines = readFileSync(join(dir, "raw/trajectory.jsonl"), "utf8").trim().split("\n");
    expect(lines.length).toBe(run.steps.length);
    for (const l of lines) TrajectoryStepSchema.parse(JSON.parse(l));
    const source = TrajectorySourceSchema.parse(
      JSON.parse(readFileSync(join(dir, "raw/source.json"), "utf8")),
    );
    expect(source).toMatchObject({
      format: "mini-swe-agent",
      session_id: ID,
      exit_status: "Submitted",
      license: "MIT",
      imported_at: now.toISOString(),
    });
    expect(source.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(join(dir, "raw/patch.diff"), "utf8")).toBe(run.patch);
    expect(JSON.parse(readFileSync(join(dir, "raw/report.json"), "utf8"))[ID].resolved).toBe(true);
    expect(readGoal(join(dir, "goal.json")).goal).toMatchObject({ instance_id: ID });
    expect(existsSync(join(dir, "raw/cursor.md"))).toBe(false);
    const onDisk = RunLabelsSchema.parse(
      JSON.parse(readFileSync(join(dir, "labels.json"), "utf8")),
    );
    expect(onDisk).toEqual(labels);
    expect(onDisk.outcome).toBe("resolved");
    expect(onDisk.drift_files).toEqual(["astropy/modeling/tests/test_separable.py"]);
  });

  it("legacy layout: the reporter's cursor.md + patch.diff + term.log, which main's extractor reads", async () => {
    const run = miniSweAgentImporter.read(ASTROPY).runs[0];
    if (run === undefined) throw new Error("no run");
    const dir = join(temp(), ID);
    writeRunDir(dir, run, { layout: "legacy", file: ASTROPY, now });
    expect(existsSync(join(dir, "raw/trajectory.jsonl"))).toBe(false);
    const chat = readFileSync(join(dir, "raw/cursor.md"), "utf8");
    expect(chat.startsWith("# Modeling's `separability_matrix`")).toBe(true);
    expect(chat).toContain("\n**User**\n");
    expect(chat).toContain("\n**Cursor**\n");
    expect(chat).toContain("```bash\npytest astropy/modeling/tests/test_separable.py\n```");
    expect(chat).toContain("<returncode>0</returncode>");
    const term = readFileSync(join(dir, "raw/term.log"), "utf8");
    expect(term.startsWith("$ ls -R\n")).toBe(true);
    expect(term).toContain("\n$ pytest astropy/modeling/tests/test_separable.py\n");
    // a heredoc's body follows its prompt line as continuation lines
    expect(term).toMatch(/\n\$ cat <<'EOF' > reproduce_issue\.py\n> from astropy/);
    const { events, sources } = await extractRunEvents(dir, { write: false });
    expect(sources.length).toBeGreaterThan(0);
    // the patch's two files are among the edits whatever the extractor makes of the chat
    const edited = events.filter((e) => e.tool === "edit").map((e) => e.where ?? "");
    expect(edited.some((w) => w.startsWith("astropy/modeling/separable.py"))).toBe(true);
  });

  it("renders SWE-agent tool actions in the chat and only shell commands in the term log", () => {
    const run = sweAgentImporter.read(PYDICOM).runs[0];
    if (run === undefined) throw new Error("no run");
    const chat = renderLegacyChat(run);
    expect(chat).toContain("```\nopen pydicom/pixel_data_handlers/numpy_handler.py 293\n```");
    const term = renderLegacyTerm(run.steps);
    expect(term.split("\n").filter((l) => l.startsWith("$ "))).toEqual([
      "$ python reproduce_bug.py",
      "$ python reproduce_bug.py",
      "$ rm reproduce_bug.py",
    ]);
  });

  it("maps the original lab's goal field names by hand, as the reporter did, and labels without a patch as unknown", () => {
    const lab = {
      objective: "Summarize the repository",
      allowed_paths: ["README.md", "docs/**"],
      forbidden_paths: ["requirements.txt"],
      required_tests: [],
      run_id: "s_x_q01",
      checkpoints: ["reproduce", "modify", "test", "regress"],
      task_type: "doc",
    };
    expect(mapLabGoal(lab)).toEqual({
      objective: "Summarize the repository",
      whitelist: ["README.md", "docs/**"],
      blacklist: ["requirements.txt"],
      required_tests: [],
      run_id: "s_x_q01",
      checkpoints: ["reproduce", "modify", "test", "regress"],
    });
    const dir = join(temp(), "cursor__s_x__q01");
    const { labels } = writeCursorRunDir(dir, {
      chat: "# Query 1\n\n**User**\nwhat does this repo do?\n\n---\n\n**Assistant**\nIt is a lab.\n",
      goal: lab,
    });
    expect(readGoal(join(dir, "goal.json")).goal.blacklist).toEqual(["requirements.txt"]);
    expect(labels).toMatchObject({ drift_files: [], outcome: "unknown", patch_files: [] });
    expect(readFileSync(join(dir, "raw/cursor.md"), "utf8")).toContain("what does this repo do?");
  });
});
