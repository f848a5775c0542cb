import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ManifestSchema,
  processGroupAlive,
  runsRootFor,
  TimelineEventSchema,
} from "../src/runs/index.ts";
import { cliCommand, makeTempDir, runCli } from "./helpers/cli.ts";
import { assertJobInvariants, copyDesign, writeFastSkillConfig } from "./runs-helpers.ts";

/**
 * Issue 20: after `kill -9` of the runner, the job is resumable on its live tool session
 * (`skill resume`) or closed (RUNNER_GONE). Real processes throughout: the CLI as a child, a real
 * tclsh session, a real SIGKILL. The subskill `gated` has three scripts; the second waits (in
 * the Tcl event loop, so the session keeps beating) for a file the test creates, so the kill
 * lands while a request is in flight.
 */

let tmp: { dir: string; cleanup: () => void };
const started: ChildProcess[] = [];

beforeAll(() => {
  tmp = makeTempDir("tw-runs-resume-");
});
afterAll(() => {
  for (const c of started) if (c.exitCode === null) c.kill("SIGKILL");
  tmp.cleanup();
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function waitFor<T>(what: string, probe: () => T | undefined | false, ms = 30_000) {
  const until = performance.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (performance.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** A CWD with the design, fast timings, the given grace, and the `gated` subskill. */
function workspace(name: string, orphanGraceMs: number): { cwd: string; gate: string } {
  const cwd = join(tmp.dir, name);
  copyDesign(cwd);
  const gate = join(cwd, "gate");
  const skill = join(cwd, "subskills", "gated");
  mkdirSync(join(skill, "tcl"), { recursive: true });
  writeFastSkillConfig(cwd, { request_timeout_ms: 60_000, orphan_grace_ms: orphanGraceMs });
  const report = (n: string) => `set f [open reports/${n}.rpt w]; puts $f "${n} [pid]"; close $f\n`;
  writeFileSync(join(skill, "tcl", "one.tcl"), report("one"));
  writeFileSync(
    join(skill, "tcl", "wait.tcl"),
    `set gate ${JSON.stringify(gate)}\n` +
      // waits in the event loop (vwait): heartbeats and the orphan check go on meanwhile
      "while {![file exists $gate]} { after 20 {set ::gate_tick 1}; vwait ::gate_tick }\n" +
      report("two"),
  );
  writeFileSync(join(skill, "tcl", "three.tcl"), report("three"));
  writeFileSync(
    join(skill, "contract.yaml"),
    [
      'schema_version: "1.0"',
      "name: gated",
      "version: 1.0.0",
      "tool: innovus",
      "scripts:",
      "  - name: one",
      "    entry: tcl/one.tcl",
      "  - name: wait",
      "    entry: tcl/wait.tcl",
      "  - name: three",
      "    entry: tcl/three.tcl",
      "outputs:",
      "  required:",
      ...["one", "two", "three"].flatMap((n) => [
        `    - path: reports/${n}.rpt`,
        "      non_empty: true",
      ]),
      "debug_hints:",
      "  - session/processor.log says what the tool did while it had no runner",
      "  - session/orphan.json says until when an orphaned session waits",
      "",
    ].join("\n"),
  );
  return { cwd, gate };
}

/** A CLI child (`timewarp …`), in its own group so the test can kill it whole. */
function startCli(cwd: string, args: string[]): { child: ChildProcess; done: Promise<CliDone> } {
  const { command, args: base } = cliCommand();
  const child = spawn(command, [...base, ...args], {
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1" },
  });
  started.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d) => {
    stdout += d;
  });
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  const done = new Promise<CliDone>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

interface CliDone {
  code: number | null;
  stdout: string;
  stderr: string;
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, "utf8"));
const manifestOf = (runDir: string) =>
  ManifestSchema.parse(readJson(join(runDir, "job_manifest.json")));
const timelineOf = (runDir: string) =>
  readFileSync(join(runDir, "job_timeline.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => TimelineEventSchema.parse(JSON.parse(l)));

/** A resumer has taken the session over and waits for the request in flight. */
const awaiting = (runDir: string) =>
  timelineOf(runDir).some((e) => e.data?.action === "await_request");

/** The pid that owns the job now: session/runner.json (a resume rewrites it), else the manifest. */
function runnerPidOf(runDir: string): number {
  const file = join(runDir, "session", "runner.json");
  if (existsSync(file)) return (readJson(file) as { pid: number }).pid;
  return manifestOf(runDir).runtime.pid ?? 0;
}

function killHard(pid: number, group?: ChildProcess): void {
  process.kill(pid, "SIGKILL");
  // under tsx the CLI is a grandchild: end its launcher too, never the tool's own group
  if (group?.pid !== undefined && group.exitCode === null) {
    try {
      process.kill(-group.pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

/**
 * `skill run gated` in a child, killed -9 once the `wait` request is claimed (in flight): the
 * job's run dir and the tool's pid.
 */
async function runAndKill(cwd: string): Promise<{ runDir: string; toolPid: number }> {
  const { child } = startCli(cwd, ["skill", "run", "gated", "--design", "AAA", "--json"]);
  const runs = runsRootFor(cwd);
  const runDir = await waitFor("the wait request to be claimed", () => {
    for (const id of existsSync(runs) ? readdirSync(runs) : []) {
      const queue = join(runs, id, "queue");
      if (
        existsSync(queue) &&
        readdirSync(queue).some((n) => n.endsWith("_0003_wait.json.claimed"))
      )
        return join(runs, id);
    }
    return undefined;
  });
  const toolPid = (readJson(join(runDir, "session", "ready.json")) as { pid: number }).pid;
  killHard(runnerPidOf(runDir), child);
  await waitFor(
    "the runner to be gone",
    () => child.exitCode !== null || child.signalCode !== null,
  );
  return { runDir, toolPid };
}

const resumeArgs = (runDir: string) => [
  "skill",
  "resume",
  runDir.split("/").at(-1) ?? "",
  "--json",
];

describe("kill -9 of the runner, then skill resume", () => {
  it("resumes on the same session: PASS with every output, one ack per request, RESUME in the timeline, no second launch", async () => {
    const { cwd, gate } = workspace("a", 60_000);
    const { runDir, toolPid } = await runAndKill(cwd);
    // the orphaned tool says how long it waits; listings show the job RUNNING and resumable
    await waitFor("session/orphan.json", () => existsSync(join(runDir, "session", "orphan.json")));
    const jobId = runDir.split("/").at(-1) ?? "";
    const runs = runCli(["skill", "runs", "--json"], { cwd });
    const listed = (runs.json() as { jobs: Record<string, unknown>[] }).jobs.find(
      (j) => j.job_id === jobId,
    );
    expect(listed).toMatchObject({ status: "RUNNING", resumable: true });
    expect(String(listed?.resumable_until)).toMatch(/^\d{4}-\d\d-\d\dT/);
    const text = runCli(["skill", "runs"], { cwd }).stdout;
    expect(text).toContain(`runner: gone, resumable until ${listed?.resumable_until}`);
    expect(text).toContain(`timewarp skill resume ${jobId}`);
    expect(runCli(["skill", "show", jobId, "--json"], { cwd }).json()).toMatchObject({
      manifest: { status: "RUNNING", runtime: { orphan_grace_ms: 60_000 } },
      resumable: { until: listed?.resumable_until },
    });

    const resume = startCli(cwd, resumeArgs(runDir));
    // the resumer waits for the request in flight; only then does the script go on
    await waitFor("the resumer to wait for the request", () => awaiting(runDir));
    writeFileSync(gate, "go\n");
    const out = await resume.done;
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ outcome: "resumed", status: "PASS" });

    const { manifest } = assertJobInvariants(runDir);
    expect(manifest.status).toBe("PASS");
    for (const n of ["one", "two", "three"]) {
      // every script ran in the one tool process the first runner started
      expect(readFileSync(join(runDir, "reports", `${n}.rpt`), "utf8").trim()).toBe(
        `${n} ${toolPid}`,
      );
    }
    expect(manifest.runtime.session?.tool_pid).toBe(toolPid);
    const processorLog = readFileSync(join(runDir, "session", "processor.log"), "utf8");
    expect(processorLog.match(/queue processor ready/g)).toHaveLength(1);
    expect(processorLog).toContain("took the session over");
    expect(
      readdirSync(join(runDir, "ack")).filter((n) => n.endsWith("_restore.json")),
    ).toHaveLength(1);
    const events = timelineOf(runDir);
    const resumeEvent = events.find((e) => e.event === "RESUME");
    expect(resumeEvent?.data).toMatchObject({
      from: "RUN_SCRIPTS",
      tool_pid: toolPid,
      orphaned: true,
    });
    const acks = events.filter((e) => e.data?.action === "receive_ack");
    expect(
      acks.map((e) => [String(e.data?.request_id).split("_").slice(-1)[0], e.data?.adopted]),
    ).toEqual([
      ["restore", undefined],
      ["one", undefined],
      ["wait", "in_flight"],
      ["three", undefined],
    ]);
    expect(events.filter((e) => e.event === "STATE_ENTER" && e.state === "RESTORE")).toHaveLength(
      1,
    );
    // what the tool did is in the timeline once, whichever runner copied it there
    const audits = events.filter((e) => e.event === "AUDIT");
    const auditKeys = audits.map((e) => JSON.stringify(e.data));
    expect(audits.some((e) => String(e.data?.request_id).endsWith("_restore"))).toBe(true);
    expect(new Set(auditKeys).size).toBe(auditKeys.length);
    expect(manifest.runtime.resumes).toEqual([
      expect.objectContaining({ pid: runnerPidOf(runDir) }),
    ]);
  }, 120_000);

  it("with a small grace the tool ends itself; the next skill run closes the job RUNNER_GONE", async () => {
    const { cwd } = workspace("b", 300);
    const { runDir, toolPid } = await runAndKill(cwd);
    await waitFor("the tool to end itself", () => {
      try {
        process.kill(toolPid, 0);
        return false;
      } catch {
        return true;
      }
    });
    expect(manifestOf(runDir).status).toBe("RUNNING");
    const next = runCli(["skill", "run", "summary_health", "--design", "AAA", "--json"], { cwd });
    expect(next.status, next.stderr).toBe(0);
    const { manifest } = assertJobInvariants(runDir);
    expect(manifest).toMatchObject({
      status: "FAIL",
      error_type: "INTERNAL_ERROR",
      detail_code: "RUNNER_GONE",
    });
    expect(manifest.closed_reason).toContain(`the tool session (pid ${toolPid}) ended`);
    expect(readFileSync(join(runDir, "session", "processor.log"), "utf8")).toContain(
      "no resume came within 300 ms",
    );
    // and a resume now says the job is over
    const again = runCli(resumeArgs(runDir), { cwd });
    expect(again.status).toBe(1);
    expect(again.json()).toMatchObject({ error: { code: "JOB_NOT_RESUMABLE" } });
  }, 120_000);

  it("refuses to resume a PASS job (JOB_NOT_RESUMABLE, with its status) and an unknown one", () => {
    const cwd = join(tmp.dir, "c");
    copyDesign(cwd);
    const run = runCli(["skill", "run", "summary_health", "--design", "AAA", "--json"], { cwd });
    expect(run.status, run.stderr).toBe(0);
    const jobId = String((run.json() as { job_id: string }).job_id);
    const r = runCli(["skill", "resume", jobId, "--json"], { cwd });
    expect(r.status).toBe(1);
    expect(r.json()).toMatchObject({
      error: { code: "JOB_NOT_RESUMABLE", data: { reason: "not_running" } },
    });
    expect(String((r.json() as { error: { message: string } }).error.message)).toContain(
      "status is PASS",
    );
    const missing = runCli(["skill", "resume", "20990101_000000_1_abcd", "--json"], { cwd });
    expect(missing.json()).toMatchObject({ error: { code: "JOB_NOT_FOUND" } });
  }, 60_000);

  it("refuses to resume a job whose runner is alive: another runner owns it", async () => {
    const { cwd, gate } = workspace("f", 60_000);
    const run = startCli(cwd, ["skill", "run", "gated", "--design", "AAA", "--json"]);
    const runs = runsRootFor(cwd);
    const runDir = await waitFor("the wait request to be claimed", () => {
      const id = existsSync(runs) ? readdirSync(runs)[0] : undefined;
      const queue = id ? join(runs, id, "queue") : "";
      return id &&
        existsSync(queue) &&
        readdirSync(queue).some((n) => n.endsWith("_wait.json.claimed"))
        ? join(runs, id)
        : undefined;
    });
    const r = runCli(resumeArgs(runDir), { cwd });
    expect(r.json()).toMatchObject({
      error: { code: "JOB_NOT_RESUMABLE", data: { reason: "runner_alive" } },
    });
    expect(timelineOf(runDir).some((e) => e.event === "RESUME")).toBe(false);
    writeFileSync(gate, "go\n");
    const out = await run.done;
    expect(out.code, out.stderr).toBe(0);
    expect(assertJobInvariants(runDir).manifest.status).toBe("PASS");
  }, 120_000);

  it("two resumes at once: exactly one takes the job over", async () => {
    const { cwd, gate } = workspace("d", 60_000);
    const { runDir } = await runAndKill(cwd);
    writeFileSync(gate, "go\n");
    const [a, b] = await Promise.all([
      startCli(cwd, resumeArgs(runDir)).done,
      startCli(cwd, resumeArgs(runDir)).done,
    ]);
    const outs = [a, b].map((o) => ({
      code: o.code,
      body: JSON.parse(o.stdout) as Record<string, unknown>,
    }));
    const won = outs.filter((o) => o.body.outcome === "resumed");
    const lost = outs.filter((o) => o.body.outcome !== "resumed");
    expect(won).toHaveLength(1);
    expect(won[0]?.code).toBe(0);
    expect(lost[0]?.body).toMatchObject({ error: { code: "JOB_NOT_RESUMABLE" } });
    expect(timelineOf(runDir).filter((e) => e.event === "RESUME")).toHaveLength(1);
    expect(assertJobInvariants(runDir).manifest.status).toBe("PASS");
  }, 120_000);

  it("a kill -9 during the resume leaves the job resumable again; the next resume finishes it", async () => {
    const { cwd, gate } = workspace("e", 60_000);
    const { runDir, toolPid } = await runAndKill(cwd);
    const original = runnerPidOf(runDir);
    const first = startCli(cwd, resumeArgs(runDir));
    await waitFor("the resumer to wait for the request", () => awaiting(runDir));
    const resumer = runnerPidOf(runDir);
    expect(resumer).not.toBe(original);
    killHard(resumer, first.child);
    await first.done;
    // the tool notices its new runner is gone too, and waits again
    await waitFor("the tool to find its runner gone again", () => {
      const orphan = join(runDir, "session", "orphan.json");
      return (
        existsSync(orphan) && (readJson(orphan) as { runner_pid: number }).runner_pid === resumer
      );
    });
    expect(manifestOf(runDir).status).toBe("RUNNING");
    const listed = (
      runCli(["skill", "runs", "--json"], { cwd }).json() as { jobs: Record<string, unknown>[] }
    ).jobs;
    expect(listed.find((j) => runDir.endsWith(String(j.job_id)))).toMatchObject({
      resumable: true,
    });

    writeFileSync(gate, "go\n");
    const second = runCli(resumeArgs(runDir), { cwd });
    expect(second.status, second.stderr).toBe(0);
    const { manifest } = assertJobInvariants(runDir);
    expect(manifest.status).toBe("PASS");
    expect(manifest.runtime.session?.tool_pid).toBe(toolPid);
    expect(timelineOf(runDir).filter((e) => e.event === "RESUME")).toHaveLength(2);
    expect(processGroupAlive(manifest.runtime.session?.pgid ?? 0)).toBe(false);
  }, 120_000);
});
