import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ErrorCode, TimewarpError } from "../src/core/index.ts";
import {
  closeStaleJobs,
  defaultProtocolIo,
  listJobs,
  ManifestSchema,
  type ProtocolIo,
  processGroupAlive,
  type RunSkillOptions,
  runSkill,
  runsRootFor,
  showJob,
} from "../src/runs/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import {
  assertJobInvariants,
  copyDesign,
  FAST,
  listTree,
  settings,
  writeFakeInnovus,
  writeSkill,
} from "./runs-helpers.ts";

let tmp: { dir: string; cleanup: () => void };
let cwd: string;
beforeEach(() => {
  tmp = makeTempDir("tw-runs-job-");
  cwd = join(tmp.dir, "design");
  copyDesign(cwd);
});
afterEach(() => tmp.cleanup());

/** Run a job and check every invariant, including that nothing outside its run dir changed. */
async function run(options: Partial<RunSkillOptions> & { skill: string }) {
  const before = listTree(tmp.dir, [join(cwd, ".skillpilot")]);
  const result = await runSkill({
    cwd,
    design: "AAA",
    settings: settings(),
    timings: FAST,
    ...options,
  });
  const after = listTree(tmp.dir, [result.runDir]);
  // the runs root itself may appear; anything else is a write outside the run dir
  expect(
    [...after.entries()].filter(
      ([k, v]) =>
        before.get(k) !== v && !k.startsWith(".skillpilot") && !k.startsWith("design/.skillpilot"),
    ),
  ).toEqual([]);
  const { manifest, summary } = assertJobInvariants(result.runDir);
  return { ...result, manifest, summary };
}

describe("a passing job (summary_health on the example design)", () => {
  it("leaves the full run directory of §2 with every MUST field", async () => {
    const { summary, manifest, runDir } = await run({ skill: "summary_health" });
    expect(summary).toMatchObject({
      status: "PASS",
      error_type: "OK",
      skill: { name: "summary_health", version: "1.0.0" },
    });
    expect(summary.metrics).toMatchObject({ wns_ns: -0.042, cells: 1842 });
    expect(runDir).toBe(join(cwd, ".skillpilot", "runs", manifest.job_id));
    expect(manifest.job_id).toMatch(/^\d{8}_\d{6}_\d+_[0-9a-z]{4}$/);
    for (const name of [
      "job_manifest.json",
      "job_timeline.jsonl",
      "scripts",
      "queue",
      "ack",
      "reports",
      "session",
      "summary.json",
      "summary.md",
    ]) {
      expect(existsSync(join(runDir, name))).toBe(true);
    }
    expect(existsSync(join(runDir, "debug_bundle"))).toBe(false);
    expect(manifest.runtime).toMatchObject({ cwd, run_dir: runDir, adapter: "tclsh" });
    expect(manifest.design).toMatchObject({
      enc_path: join(cwd, "AAA.enc"),
      enc_dat_path: join(cwd, "AAA.enc.dat"),
      locator: {
        mode: "cwd_scan",
        query: "AAA",
        selection_reason: "unique_scan_result",
        selected: { enc_path: join(cwd, "AAA.enc") },
      },
      restore: { wrapper: "scripts/restore_wrapper.tcl", status: "PASS" },
    });
    expect(manifest.skill.subskill_path).toContain(
      join("examples", "skills", "subskills", "summary_health"),
    );
    // restore_wrapper cds to the design and sources the .enc (§6.2); its request and ack are recorded
    const wrapper = readFileSync(join(runDir, "scripts", "restore_wrapper.tcl"), "utf8");
    expect(wrapper).toContain("cd [file dirname $enc_path]");
    expect(existsSync(join(runDir, manifest.design.restore?.ack ?? "x"))).toBe(true);
    const md = readFileSync(join(runDir, "summary.md"), "utf8");
    for (const heading of [
      "## Conclusion",
      "## Key findings",
      "## Risks and anomalies",
      "## Evidence",
    ])
      expect(md).toContain(heading);
    expect(md).toContain("**PASS**");
    const actions = readFileSync(join(runDir, "job_timeline.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { event: string; data?: { action?: string } })
      .filter((e) => e.event === "ACTION")
      .map((e) => e.data?.action);
    for (const a of [
      "locate_db",
      "start_session",
      "submit_request",
      "receive_ack",
      "validate_outputs",
      "summarize",
    ])
      expect(actions).toContain(a);
    const restoreAudit = readFileSync(join(runDir, "job_timeline.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { event: string; data?: Record<string, unknown> })
      .find((e) => e.data?.action === "restore_design");
    expect(restoreAudit?.data).toMatchObject({
      enc_path: join(cwd, "AAA.enc"),
      enc_dat_path: join(cwd, "AAA.enc.dat"),
      wrapper: "scripts/restore_wrapper.tcl",
    });
  });

  it("runs the same job through innovus (fake innovus on PATH) and dsub-i (an env wrapper)", async () => {
    const bin = join(tmp.dir, "bin");
    writeFakeInnovus(bin);
    const env = { PATH: `${bin}:${process.env.PATH}` };
    const viaInnovus = await run({ skill: "summary_health", adapter: "innovus", env });
    expect(viaInnovus.summary.status).toBe("PASS");
    expect(viaInnovus.manifest.runtime.session?.command?.slice(0, 2)).toEqual([
      "innovus",
      "-no_gui",
    ]);
    const viaFarm = await run({
      skill: "summary_health",
      adapter: "dsub-i",
      env,
      settings: settings({ dsub_template: "env SITE=farm {cmd}" }),
    });
    expect(viaFarm.summary.status).toBe("PASS");
    expect(viaFarm.manifest.runtime.adapter).toBe("dsub-i");
    expect(viaFarm.manifest.runtime.session?.command?.slice(0, 3)).toEqual([
      "env",
      "SITE=farm",
      "innovus",
    ]);
  });
});

describe("failures: one error_type everywhere and a debug bundle", () => {
  it("a subskill that misses its contract is OUTPUT_MISSING, with the missing list and the contract in the bundle", async () => {
    const { summary, runDir } = await run({ skill: "missing_report" });
    expect(summary).toMatchObject({ status: "FAIL", error_type: "OUTPUT_MISSING" });
    expect(summary.message).toContain("reports/congestion.rpt");
    const bundle = join(runDir, "debug_bundle");
    expect(readFileSync(join(bundle, "notes.txt"), "utf8")).toContain(
      "missing: reports/congestion.rpt",
    );
    expect(readFileSync(join(bundle, "contract.yaml"), "utf8")).toContain("congestion.rpt");
    const index = JSON.parse(readFileSync(join(bundle, "index.json"), "utf8"));
    expect(index.pointers.contract).toBe("contract.yaml");
    expect(index.next_actions.join("\n")).toContain("congestion.rpt is missing");
    const inventory = JSON.parse(readFileSync(join(bundle, "reports_inventory.json"), "utf8"));
    expect(inventory.files.map((f: { path: string }) => f.path)).toEqual(["reports/timing.rpt"]);
    expect(existsSync(join(bundle, "session", "supervisor.log.tail"))).toBe(true);
    const md = readFileSync(join(runDir, "summary.md"), "utf8");
    expect(md).toContain("**FAIL** — error_type `OUTPUT_MISSING`");
    expect(md).toContain(`debug_bundle: \`${bundle}\``);
  });

  it("an empty required output is OUTPUT_EMPTY", async () => {
    writeSkill(cwd, "empty_out", { script: "close [open reports/out.rpt w]\n" });
    const { summary } = await run({ skill: "empty_out" });
    expect(summary).toMatchObject({ status: "FAIL", error_type: "OUTPUT_EMPTY" });
  });

  it("a glob output passes when every match is non-empty", async () => {
    writeSkill(cwd, "globbed", {
      script:
        "file mkdir reports/sub\nforeach n {a b} { set f [open reports/sub/$n.rpt w]; puts $f x; close $f }\n",
      outputs: [{ path: "reports/sub/*.rpt" }],
    });
    expect((await run({ skill: "globbed" })).summary.status).toBe("PASS");
  });

  it("a contract whose required path leaves reports/ is CONTRACT_INVALID naming the field, and no session starts", async () => {
    writeSkill(cwd, "leaky", {
      script: "set x 1\n",
      outputs: [{ path: "reports/../../etc/passwd" }],
    });
    const { summary, manifest } = await run({ skill: "leaky" });
    expect(summary).toMatchObject({ status: "FAIL", error_type: "CONTRACT_INVALID" });
    expect(summary.message).toContain("outputs.required.0.path");
    expect(manifest.runtime.session).toBeUndefined();
  });

  it("a Tcl error in the subskill is CMD_FAIL; a broken .enc is RESTORE_FAIL", async () => {
    writeSkill(cwd, "tcl_error", { script: "no_such_command 42\n" });
    const cmd = await run({ skill: "tcl_error" });
    expect(cmd.summary).toMatchObject({
      status: "FAIL",
      error_type: "CMD_FAIL",
      detail_code: "TCL_ERROR",
    });
    expect(cmd.summary.message).toContain("no_such_command");
    const index = JSON.parse(readFileSync(join(cmd.runDir, "debug_bundle", "index.json"), "utf8"));
    expect(index.pointers.last_fail_ack).toMatch(/_0002_run\.json$/);

    writeFileSync(join(cwd, "AAA.enc"), "restoreDesign AAA.enc.dat.missing AAA\n");
    const restore = await run({ skill: "summary_health" });
    expect(restore.summary).toMatchObject({ status: "FAIL", error_type: "RESTORE_FAIL" });
    expect(restore.manifest.design.restore?.status).toBe("FAIL");
  });

  it("a script that never returns is QUEUE_TIMEOUT; the tool killed mid-request is INNOVUS_CRASH", async () => {
    writeSkill(cwd, "hang", { script: "while 1 {}\n" });
    const hang = await run({ skill: "hang", timings: { ...FAST, requestTimeoutMs: 500 } });
    expect(hang.summary).toMatchObject({ status: "FAIL", error_type: "QUEUE_TIMEOUT" });
    writeSkill(cwd, "crash", { script: "exec kill -9 [pid]\n" });
    const crash = await run({ skill: "crash" });
    expect(crash.summary).toMatchObject({ status: "FAIL", error_type: "INNOVUS_CRASH" });
    expect(
      readFileSync(join(crash.runDir, "debug_bundle", "session", "state.json"), "utf8"),
    ).toContain("last_heartbeat");
  });

  it("a script blocking longer than the heartbeat threshold PASSes", async () => {
    writeSkill(cwd, "slow", {
      script: "after 1500\nset f [open reports/out.rpt w]; puts $f done; close $f\n",
    });
    // the loop is blocked 1.5 s, past the 1 s threshold; a loaded machine may delay a beat by a
    // few hundred ms, never by a second
    const { summary } = await run({
      skill: "slow",
      timings: { ...FAST, heartbeatStaleMs: 1_000, heartbeatIntervalMs: 100 },
    });
    expect(summary).toMatchObject({ status: "PASS", error_type: "OK" });
  });

  it("an unknown skill throws SKILL_NOT_FOUND before any run dir exists", async () => {
    await expect(
      runSkill({ cwd, design: "AAA", skill: "nope", settings: settings() }),
    ).rejects.toMatchObject({ code: "SKILL_NOT_FOUND" });
    expect(existsSync(runsRootFor(cwd))).toBe(false);
  });

  it("a session that cannot start is SESSION_START_FAIL", async () => {
    const { summary } = await run({
      skill: "summary_health",
      settings: settings({ tclsh: join(tmp.dir, "no-tclsh") }),
    });
    expect(summary).toMatchObject({ status: "FAIL", error_type: "SESSION_START_FAIL" });
  });

  it("an abort (SIGINT/SIGTERM) ends the job FAIL / INTERRUPTED, never RUNNING, with the session ended", async () => {
    writeSkill(cwd, "hang", { script: "while 1 {}\n" });
    const controller = new AbortController();
    // abort once the never-ending script is running
    const onProgress = (m: string) => {
      if (m.startsWith("run scripts")) setTimeout(() => controller.abort("SIGTERM"), 150);
    };
    const { summary, manifest } = await run({
      skill: "hang",
      signal: controller.signal,
      onProgress,
    });
    expect(readdirSync(join(manifest.runtime.run_dir, "ack"))).toHaveLength(2);
    expect(summary).toMatchObject({
      status: "FAIL",
      error_type: "INTERNAL_ERROR",
      detail_code: "INTERRUPTED",
    });
    expect(manifest.runtime.session?.pgid).toBeDefined();
  });

  it("an abort while a farm launcher is still queueing ends the job promptly (INTERRUPTED)", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort("SIGINT"), 300);
    const marker = `tw-queueing-${process.pid}-${Date.now()}`;
    // The launcher queues for ten minutes and the ready timeout is as long: a job that waited
    // for either would meet the test's timeout, so "promptly" needs no clock here.
    const { summary } = await run({
      skill: "summary_health",
      adapter: "dsub-i",
      settings: settings({ dsub_template: `sh -c 'sleep 600; : ${marker}' {cmd_q}` }),
      timings: { ...FAST, readyTimeoutMs: 600_000 },
      signal: controller.signal,
    });
    expect(summary).toMatchObject({
      status: "FAIL",
      error_type: "INTERNAL_ERROR",
      detail_code: "INTERRUPTED",
    });
    // and the queueing launcher did not outlive the job
    if (existsSync("/proc/self/cmdline")) {
      const alive = readdirSync("/proc")
        .filter((n) => /^\d+$/.test(n))
        .filter((n) => {
          try {
            return readFileSync(`/proc/${n}/cmdline`, "latin1").includes(marker);
          } catch {
            return false; // gone meanwhile
          }
        });
      expect(alive).toEqual([]);
    }
  });

  it.each([
    ["the subskill's request", /_0002_run\.json\.tw-tmp-/, 1],
    ["the manifest, after the session started", /job_manifest\.json$/, 4],
  ])(
    "ENOSPC while writing %s ends the job FAIL (INTERNAL_ERROR / DISK_FULL), session ended, nothing half-written",
    async (_what, target, nth) => {
      let seen = 0;
      let failed = 0;
      const io: ProtocolIo = {
        ...defaultProtocolIo,
        writeFile(path, data) {
          if (target.test(path) && ++seen === nth) {
            failed += 1;
            throw new TimewarpError(ErrorCode.DISK_FULL, `writing ${path}: disk full (ENOSPC)`);
          }
          defaultProtocolIo.writeFile(path, data);
        },
      };
      const result = await runSkill({
        cwd,
        design: "AAA",
        skill: "summary_health",
        settings: settings(),
        timings: FAST,
        io,
      });
      expect(failed).toBe(1);
      const { summary } = assertJobInvariants(result.runDir);
      expect(summary).toMatchObject({
        status: "FAIL",
        error_type: "INTERNAL_ERROR",
        detail_code: "DISK_FULL",
      });
      const leftovers = listTree(result.runDir).keys();
      expect([...leftovers].filter((p) => p.includes(".tw-tmp-"))).toEqual([]);
    },
  );
});

describe("the locator (§3.4)", () => {
  beforeEach(() => {
    copyDesign(cwd, "old");
    utimesSync(join(cwd, "old", "AAA.enc"), new Date("2025-01-01"), new Date("2025-01-01"));
  });

  it("several candidates and no choice is LOCATOR_FAIL with the candidates (path, mtime, size) in the manifest", async () => {
    const { summary, manifest } = await run({ skill: "summary_health" });
    expect(summary).toMatchObject({
      status: "FAIL",
      error_type: "LOCATOR_FAIL",
      detail_code: "AMBIGUOUS",
    });
    const candidates = manifest.design.locator.candidates ?? [];
    expect(candidates.map((c) => c.path)).toEqual([
      join(cwd, "AAA.enc"),
      join(cwd, "old", "AAA.enc"),
    ]);
    expect(candidates[1]).toMatchObject({
      mtime: "2025-01-01T00:00:00.000Z",
      size: expect.any(Number),
    });
    expect(manifest.design.locator.selected).toBeUndefined();
  });

  it("--select N chooses (user_selected); an explicit path is a direct_match; nothing found is LOCATOR_FAIL", async () => {
    const chosen = await run({ skill: "summary_health", select: 2 });
    expect(chosen.summary.status).toBe("PASS");
    expect(chosen.manifest.design.locator).toMatchObject({
      selection_reason: "user_selected",
      selected: { enc_path: join(cwd, "old", "AAA.enc") },
    });
    const explicit = await run({ skill: "summary_health", design: "./old/AAA.enc" });
    expect(explicit.manifest.design.locator).toMatchObject({
      mode: "explicit_path",
      selection_reason: "direct_match",
    });
    const none = await run({ skill: "summary_health", design: "BBB" });
    expect(none.summary).toMatchObject({ error_type: "LOCATOR_FAIL", detail_code: "NO_CANDIDATE" });
    const range = await run({ skill: "summary_health", select: 9 });
    expect(range.summary).toMatchObject({
      error_type: "LOCATOR_FAIL",
      detail_code: "SELECT_OUT_OF_RANGE",
    });
  });
});

describe("jobs in one CWD", () => {
  it("two jobs at once get distinct run dirs and sessions, both complete", async () => {
    const [a, b] = await Promise.all([
      runSkill({
        cwd,
        design: "AAA",
        skill: "summary_health",
        settings: settings(),
        timings: FAST,
      }),
      runSkill({
        cwd,
        design: "AAA",
        skill: "missing_report",
        settings: settings(),
        timings: FAST,
      }),
    ]);
    expect(a?.runDir).not.toBe(b?.runDir);
    expect(assertJobInvariants(a?.runDir ?? "").summary.status).toBe("PASS");
    expect(assertJobInvariants(b?.runDir ?? "").summary.error_type).toBe("OUTPUT_MISSING");
    const jobs = await listJobs({ cwd });
    expect(jobs.map((j) => j.status).sort()).toEqual(["FAIL", "PASS"]);
    const shown = await showJob({ cwd, jobId: a?.manifest.job_id ?? "" });
    expect(shown.summary?.status).toBe("PASS");
    await expect(showJob({ cwd, jobId: "20990101_000000_1_abcd" })).rejects.toMatchObject({
      code: "JOB_NOT_FOUND",
    });
  });

  it("a stale RUNNING job (runner killed -9, orphan_grace_ms 0) is closed later with a reason, and its session group ended", async () => {
    // a runner process that starts a job and is killed -9 mid-request; with no grace its
    // session is not waited for (test/runs-resume.test.ts covers the grace and the resume)
    writeSkill(cwd, "hang", { script: "while 1 {}\n" });
    const script = join(tmp.dir, "runner.mts");
    const src = (dir: string) =>
      JSON.stringify(join(import.meta.dirname, "..", "src", dir, "index.ts"));
    writeFileSync(
      script,
      `import { runSkill } from ${src("runs")};\nimport { parseConfig } from ${src("core")};\n` +
        `const settings = { ...parseConfig({}, "test").skillpilot, orphan_grace_ms: 0 };\n` +
        `await runSkill({ cwd: ${JSON.stringify(cwd)}, design: "AAA", skill: "hang", settings, timings: { pollMs: 5, heartbeatIntervalMs: 40 } });\n`,
    );
    const tsx = join(import.meta.dirname, "..", "node_modules", ".bin", "tsx");
    const { spawn } = await import("node:child_process");
    const child = spawn(tsx, [script], { stdio: "ignore", detached: true });
    const runs = runsRootFor(cwd);
    let jobId: string | undefined;
    for (let i = 0; i < 300 && !jobId; i++) {
      await new Promise((r) => setTimeout(r, 50));
      for (const id of existsSync(runs) ? readdirSync(runs) : []) {
        const ack = join(runs, id, "ack");
        if (existsSync(ack) && readdirSync(ack).some((n) => n.endsWith("_0001_restore.json")))
          jobId = id;
      }
    }
    expect(jobId).toBeDefined();
    await new Promise((r) => setTimeout(r, 100));
    // tsx runs the script in a child node: kill the runner's whole group hard, but not the detached tool
    const runnerPid =
      ManifestSchema.parse(
        JSON.parse(readFileSync(join(runs, jobId ?? "", "job_manifest.json"), "utf8")),
      ).runtime.pid ?? 0;
    process.kill(runnerPid, "SIGKILL");
    process.kill(-(child.pid ?? 0), "SIGKILL");
    await new Promise((r) => setTimeout(r, 100));
    const before = ManifestSchema.parse(
      JSON.parse(readFileSync(join(runs, jobId ?? "", "job_manifest.json"), "utf8")),
    );
    expect(before.status).toBe("RUNNING");
    const closed = await closeStaleJobs({ cwd });
    expect(closed).toEqual([jobId]);
    const after = ManifestSchema.parse(
      JSON.parse(readFileSync(join(runs, jobId ?? "", "job_manifest.json"), "utf8")),
    );
    expect(after).toMatchObject({
      status: "FAIL",
      error_type: "INTERNAL_ERROR",
      detail_code: "RUNNER_GONE",
    });
    expect(after.closed_reason).toContain(`runner pid ${runnerPid} is gone (orphan_grace_ms is 0)`);
    expect(processGroupAlive(after.runtime.session?.pgid ?? 0)).toBe(false);
    expect(existsSync(join(runs, jobId ?? "", "debug_bundle", "index.json"))).toBe(true);
    expect(spawnSync("true").status).toBe(0);
  });
});

it("keeps the run dir's parent free of anything but runs/", () => {
  mkdirSync(join(cwd, ".skillpilot"), { recursive: true });
  expect(readdirSync(join(cwd, ".skillpilot")).every((n) => n === "runs")).toBe(true);
});
