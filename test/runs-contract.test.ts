import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  DebugIndexSchema,
  RequestSchema,
  type RunSkillOptions,
  runSkill,
} from "../src/runs/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import {
  assertJobInvariants,
  copyDesign,
  FAST,
  requestIds,
  settings,
  writeSkill,
} from "./runs-helpers.ts";

let tmp: { dir: string; cleanup: () => void };
let cwd: string;
beforeEach(() => {
  tmp = makeTempDir("tw-runs-contract-");
  cwd = join(tmp.dir, "design");
  copyDesign(cwd);
});
afterEach(() => tmp.cleanup());

async function run(options: Partial<RunSkillOptions> & { skill: string }) {
  const result = await runSkill({
    cwd,
    design: "AAA",
    settings: settings(),
    timings: FAST,
    ...options,
  });
  return { ...result, ...assertJobInvariants(result.runDir) };
}

function timeline(
  runDir: string,
): { event: string; state?: string; data?: Record<string, unknown> }[] {
  return readFileSync(join(runDir, "job_timeline.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

function contract(name: string, scripts: string[]): string {
  return [
    'schema_version: "1.0"',
    `name: ${name}`,
    "version: 0.0.1",
    "tool: innovus",
    "scripts:",
    ...scripts,
    "outputs:",
    "  required:",
    "    - path: reports/out.rpt",
    "debug_hints: [first hint, second hint]",
    "",
  ].join("\n");
}

/** A CONTRACT_INVALID at LOAD_CONTRACT: no session ever started, no design restored. */
async function expectRefusedBeforeAnySession(skill: string, field: RegExp) {
  const { summary, manifest, runDir } = await run({ skill });
  expect(summary).toMatchObject({ status: "FAIL", error_type: "CONTRACT_INVALID" });
  expect(summary.message).toMatch(field);
  expect(manifest.runtime.session).toBeUndefined();
  expect(existsSync(join(runDir, "session", "ready.json"))).toBe(false);
  expect(existsSync(join(runDir, "session", "boot.tcl"))).toBe(false);
  expect(readdirSync(join(runDir, "queue"))).toEqual([]);
  expect(readdirSync(join(runDir, "scripts"))).toEqual([]);
  const events = timeline(runDir);
  const actions = events.filter((e) => e.event === "ACTION").map((e) => e.data?.action);
  for (const a of ["start_session", "restore_design", "submit_request", "locate_db"])
    expect(actions).not.toContain(a);
  expect(events.filter((e) => e.event === "STATE_ENTER").map((e) => e.state)).toEqual([
    "INIT",
    "LOAD_CONTRACT",
    "SUMMARIZE",
  ]);
  expect(events.find((e) => e.event === "ERROR")?.state).toBe("LOAD_CONTRACT");
  return { summary, runDir };
}

describe("LOAD_CONTRACT checks the files before any session starts", () => {
  it("a missing entry file is CONTRACT_INVALID naming the field", async () => {
    writeSkill(cwd, "gone", {
      script: "set x 1\n",
      contract: contract("gone", [
        "  - name: run",
        "    entry: templates/run.tcl",
        "  - name: second",
        "    entry: templates/missing.tcl",
      ]),
    });
    await expectRefusedBeforeAnySession(
      "gone",
      /scripts\.1\.entry: templates\/missing\.tcl does not exist/,
    );
  });

  it("a symlinked entry resolving outside the subskill is refused, never copied or run", async () => {
    const outside = join(tmp.dir, "outside.tcl");
    writeFileSync(outside, "set f [open reports/out.rpt w]; puts $f pwned; close $f\n");
    const dir = writeSkill(cwd, "escape", {
      script: "set x 1\n",
      contract: contract("escape", ["  - name: run", "    entry: templates/evil.tcl"]),
    });
    symlinkSync(outside, join(dir, "templates", "evil.tcl"));
    const { runDir } = await expectRefusedBeforeAnySession(
      "escape",
      /scripts\.0\.entry: templates\/evil\.tcl resolves to .*outside\.tcl, outside the subskill/,
    );
    expect(existsSync(join(runDir, "reports", "out.rpt"))).toBe(false);
  });

  it("duplicate script names are refused (they would overwrite each other in scripts/)", async () => {
    writeSkill(cwd, "twice", {
      script: "set x 1\n",
      contract: contract("twice", [
        "  - name: run",
        "    entry: templates/run.tcl",
        "  - name: run",
        "    entry: templates/run.tcl",
      ]),
    });
    await expectRefusedBeforeAnySession("twice", /scripts\.1\.name: duplicate script name "run"/);
  });

  it("a valid contract stages its scripts at LOAD_CONTRACT, recorded in the timeline", async () => {
    const dir = writeSkill(cwd, "staged", {
      script: "set f [open reports/out.rpt w]; puts $f ok; close $f\n",
    });
    symlinkSync("run.tcl", join(dir, "templates", "alias.tcl"));
    writeFileSync(
      join(dir, "contract.yaml"),
      contract("staged", ["  - name: run", "    entry: templates/alias.tcl"]),
    );
    const { summary, runDir } = await run({ skill: "staged" });
    expect(summary.status).toBe("PASS");
    const staged = timeline(runDir).find((e) => e.data?.action === "stage_script");
    expect(staged).toMatchObject({
      state: "LOAD_CONTRACT",
      data: {
        name: "run",
        entry: "templates/alias.tcl",
        real_entry: "templates/run.tcl",
        script: "scripts/staged__run.tcl",
      },
    });
    expect(readFileSync(join(runDir, "scripts", "staged__run.tcl"), "utf8")).toContain(
      "puts $f ok",
    );
  });
});

describe("what runs is the copy staged at LOAD_CONTRACT", () => {
  it("a subskill file rewritten (or swapped for a symlink leading out) mid-job does not change what runs", async () => {
    const outside = join(tmp.dir, "outside.tcl");
    writeFileSync(outside, "error {the outside file ran}\n");
    const dir = writeSkill(cwd, "frozen", {
      script: "",
      contract: contract("frozen", [
        "  - name: first",
        "    entry: templates/first.tcl",
        "  - name: second",
        "    entry: templates/second.tcl",
      ]),
    });
    const tpl = join(dir, "templates");
    // first swaps second.tcl for a symlink to a file outside the subskill, while the job runs
    writeFileSync(
      join(tpl, "first.tcl"),
      `file delete ${join(tpl, "second.tcl")}\nfile link -symbolic ${join(tpl, "second.tcl")} ${outside}\n`,
    );
    writeFileSync(
      join(tpl, "second.tcl"),
      "set f [open reports/out.rpt w]; puts $f original; close $f\n",
    );
    const { summary, runDir } = await run({ skill: "frozen" });
    expect(summary).toMatchObject({ status: "PASS", error_type: "OK" });
    // the swap did happen: the subskill now leads out, yet the job ran the checked file
    expect(lstatSync(join(tpl, "second.tcl")).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(runDir, "reports", "out.rpt"), "utf8")).toBe("original\n");
    expect(readFileSync(join(runDir, "scripts", "frozen__second.tcl"), "utf8")).toContain(
      "original",
    );
  });
});

describe("timewarp skill check looks at the files too", () => {
  it("prints each issue with its field, exits 1 with CONTRACT_INVALID; --json lists them", () => {
    const outside = join(tmp.dir, "outside.tcl");
    writeFileSync(outside, "puts hi\n");
    const dir = writeSkill(cwd, "several", {
      script: "set x 1\n",
      contract: contract("several", [
        "  - name: run",
        "    entry: templates/run.tcl",
        "  - name: evil",
        "    entry: templates/evil.tcl",
        "  - name: run",
        "    entry: templates/gone.tcl",
      ]),
    });
    symlinkSync(outside, join(dir, "templates", "evil.tcl"));
    const human = runCli(["skill", "check", dir], { cwd });
    expect(human.status).toBe(1);
    const lines = human.stderr.trim().split("\n");
    expect(lines[0]).toMatch(/^error CONTRACT_INVALID: .*contract\.yaml: 3 issue\(s\)$/);
    expect(lines.slice(1).map((l) => l.trim().split(":")[0])).toEqual([
      "scripts.1.entry",
      "scripts.2.entry",
      "scripts.2.name",
    ]);
    const json = runCli(["skill", "check", dir, "--json"], { cwd });
    expect(json.status).toBe(1);
    const body = json.json() as {
      error: { code: string; data: { field: string; issues: string[] } };
    };
    expect(body.error.code).toBe("CONTRACT_INVALID");
    expect(body.error.data.field).toBe("scripts.1.entry");
    expect(body.error.data.issues).toHaveLength(3);
    expect(body.error.data.issues[0]).toContain("outside the subskill");
  });
});

describe("per-script timeout_s", () => {
  it("a script with timeout_s: 1 that sleeps longer is QUEUE_TIMEOUT naming it; the others keep the default", async () => {
    writeSkill(cwd, "timed", {
      script: "",
      contract: contract("timed", [
        "  - name: warm",
        "    entry: templates/warm.tcl",
        "  - name: slow",
        "    entry: templates/slow.tcl",
        "    timeout_s: 1",
      ]),
    });
    const tpl = join(cwd, "subskills", "timed", "templates");
    // longer than the slow script's 1 s, well inside the default 5 s: only the default lets it pass
    writeFileSync(
      join(tpl, "warm.tcl"),
      "after 1500\nset f [open reports/out.rpt w]; puts $f warm; close $f\n",
    );
    writeFileSync(join(tpl, "slow.tcl"), "after 20000\n");
    const { summary, manifest, runDir } = await run({ skill: "timed" });
    expect(summary).toMatchObject({
      status: "FAIL",
      error_type: "QUEUE_TIMEOUT",
      detail_code: "NO_ACK_BEFORE_DEADLINE",
    });
    expect(summary.message).toContain("scripts/timed__slow.tcl");
    expect(summary.message).toContain("script slow: the contract's timeout_s is 1 s");
    expect(manifest.requests?.map((r) => [r.script, r.status])).toEqual([
      ["scripts/restore_wrapper.tcl", "PASS"],
      ["scripts/timed__warm.tcl", "PASS"],
      ["scripts/timed__slow.tcl", "FAIL"],
    ]);
    // the request files say the same: 1 s for slow, request_timeout_ms for the others
    const timeouts = requestIds(runDir).map((id) => {
      const name = readdirSync(join(runDir, "queue")).find((n) => n.startsWith(`${id}.json`));
      const req = RequestSchema.parse(
        JSON.parse(readFileSync(join(runDir, "queue", name ?? ""), "utf8")),
      );
      return [req.script, req.timeout_s];
    });
    expect(timeouts).toEqual([
      ["scripts/restore_wrapper.tcl", FAST.requestTimeoutMs / 1000],
      ["scripts/timed__warm.tcl", FAST.requestTimeoutMs / 1000],
      ["scripts/timed__slow.tcl", 1],
    ]);
    const submitted = timeline(runDir).filter((e) => e.data?.action === "submit_request");
    expect(submitted.map((e) => e.data?.timeout_ms)).toEqual([undefined, undefined, 1000]);
  });
});

describe("the debug bundle carries the Tcl errorInfo", () => {
  it("an error three procs deep: the bundle has every frame, index.json and next_actions point at its copy", async () => {
    writeSkill(cwd, "nested", {
      script: [
        'proc inner_step {n} { error "deep failure at $n" }',
        "proc middle_step {n} { inner_step [expr {$n + 1}] }",
        "proc outer_step {} { middle_step 41 }",
        "outer_step",
        "",
      ].join("\n"),
    });
    const { summary, runDir } = await run({ skill: "nested" });
    expect(summary).toMatchObject({
      status: "FAIL",
      error_type: "CMD_FAIL",
      detail_code: "TCL_ERROR",
    });
    const bundle = join(runDir, "debug_bundle");
    const index = DebugIndexSchema.parse(
      JSON.parse(readFileSync(join(bundle, "index.json"), "utf8")),
    );
    const failedId = requestIds(runDir).at(-1) ?? "";
    expect(index.pointers.error_info).toBe(`session/errors/${failedId}.txt`);
    const info = readFileSync(join(bundle, index.pointers.error_info ?? ""), "utf8");
    expect(info).toBe(readFileSync(join(runDir, "session", "errors", `${failedId}.txt`), "utf8"));
    expect(info).toContain("deep failure at 42");
    for (const proc of ["inner_step", "middle_step", "outer_step"])
      expect(info).toContain(`(procedure "${proc}" line 1)`);
    expect(info).toContain('"middle_step 41 "');
    // every session/errors path next_actions names is in the bundle
    const named = index.next_actions.join("\n").match(/session\/errors\/[^\s]+\.txt/g) ?? [];
    expect(named).toEqual([`session/errors/${failedId}.txt`]);
    for (const p of named) expect(existsSync(join(bundle, p))).toBe(true);
    expect(index.next_actions.join("\n")).not.toContain("<request_id>");
  });

  it("a failure with no errorInfo has a null pointer and no dangling path", async () => {
    const { runDir } = await run({ skill: "missing_report" });
    const index = DebugIndexSchema.parse(
      JSON.parse(readFileSync(join(runDir, "debug_bundle", "index.json"), "utf8")),
    );
    expect(index.pointers.error_info).toBeNull();
    expect(index.next_actions.join("\n")).not.toContain("session/errors");
  });
});
