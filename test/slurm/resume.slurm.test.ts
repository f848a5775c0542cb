import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManifestSchema, runsRootFor, TimelineEventSchema } from "../../src/runs/index.ts";
import { cliCommand, makeTempDir } from "../helpers/cli.ts";
import { assertJobInvariants, copyDesign, writeFastSkillConfig } from "../runs-helpers.ts";
import { cluster, heldJobs, slurmEnv, squeueState, waitFor } from "./jobs.ts";

/**
 * Issue 20, on the real scheduler: `kill -9` of the runner while its Slurm step is mid-request,
 * then `skill resume` takes the live step over and finishes the job on the same tool process,
 * and the allocation is released at the end.
 */

let tmp: { dir: string; cleanup: () => void };
let cwd: string;
const children: ChildProcess[] = [];
beforeEach(() => {
  tmp = makeTempDir("tw-slurm-resume-");
  cwd = join(tmp.dir, "design");
  copyDesign(cwd);
});
afterEach(() => {
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null || !c.pid) continue;
    try {
      process.kill(-c.pid, "SIGKILL");
    } catch {
      // gone
    }
  }
  tmp.cleanup();
});

/** A subskill whose second script waits in the event loop (so the tool keeps beating) for `gate`. */
function gatedSkill(gate: string): void {
  const dir = join(cwd, "subskills", "gated");
  mkdirSync(dir, { recursive: true });
  const report = (n: string) => `set f [open reports/${n}.rpt w]; puts $f "${n} [pid]"; close $f\n`;
  writeFileSync(join(dir, "one.tcl"), report("one"));
  writeFileSync(
    join(dir, "wait.tcl"),
    `set gate ${JSON.stringify(gate)}\n` +
      "while {![file exists $gate]} { after 20 {set ::gate_tick 1}; vwait ::gate_tick }\n" +
      report("two"),
  );
  writeFileSync(
    join(dir, "contract.yaml"),
    [
      'schema_version: "1.0"',
      "name: gated",
      "version: 1.0.0",
      "tool: innovus",
      "scripts:",
      "  - { name: one, entry: one.tcl }",
      "  - { name: wait, entry: wait.tcl }",
      "outputs:",
      "  required:",
      "    - { path: reports/one.rpt }",
      "    - { path: reports/two.rpt }",
      "debug_hints:",
      "  - session/processor.log says what the tool did without a runner",
      "  - runtime.scheduler in the manifest names the Slurm job",
      "",
    ].join("\n"),
  );
  writeFastSkillConfig(cwd, {
    request_timeout_ms: 120_000,
    orphan_grace_ms: 120_000,
    slurm: { tool: "tclsh", poll_ms: 200 },
  });
}

/** The CLI in its own process group, so that a kill -9 of the group ends the runner whole. */
function cli(args: string[]): {
  child: ChildProcess;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
} {
  const { command, args: base } = cliCommand();
  const child = spawn(command, [...base, ...args], {
    cwd,
    detached: true,
    env: { ...slurmEnv, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d) => {
    stdout += d;
  });
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((r) =>
    child.on("close", (code) => r({ code, stdout, stderr })),
  );
  return { child, done };
}

const manifestOf = (runDir: string) =>
  ManifestSchema.parse(JSON.parse(readFileSync(join(runDir, "job_manifest.json"), "utf8")));
/** The Slurm job id the run's manifest holds ("" while there is none, or no manifest yet). */
const recordedJobId = (runDir: string) =>
  existsSync(join(runDir, "job_manifest.json"))
    ? (manifestOf(runDir).runtime.scheduler?.job_id ?? "")
    : "";
const eventsOf = (runDir: string) =>
  readFileSync(join(runDir, "job_timeline.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => TimelineEventSchema.parse(JSON.parse(l)));

describe.skipIf(cluster.skip !== undefined)(
  "kill -9 of the runner on Slurm, then skill resume",
  () => {
    it("takes the live Slurm step over, finishes PASS on the same tool, and releases the allocation", async () => {
      const gate = join(cwd, "gate");
      gatedSkill(gate);
      const run = cli(["skill", "run", "gated", "--design", "AAA", "--adapter", "slurm", "--json"]);
      const runs = runsRootFor(cwd);
      // Both facts: the scheduler's job id reaches the manifest from srun's own report, which
      // can come a moment after the tool claimed its first request (seen once under load).
      const runDir = await waitFor("the wait request claimed and the Slurm job id recorded", () => {
        for (const id of existsSync(runs) ? readdirSync(runs) : []) {
          const queue = join(runs, id, "queue");
          if (
            existsSync(queue) &&
            readdirSync(queue).some((n) => n.endsWith("_wait.json.claimed")) &&
            /^\d+$/.test(recordedJobId(join(runs, id)))
          )
            return join(runs, id);
        }
        return undefined;
      });
      const before = manifestOf(runDir);
      const slurmJob = before.runtime.scheduler?.job_id ?? "";
      const toolPid = before.runtime.session?.tool_pid;
      expect(slurmJob).toMatch(/^\d+$/);
      // the runner dies without a word; srun (its own group) and the step on the node live on
      if (run.child.pid) process.kill(-run.child.pid, "SIGKILL");
      try {
        // under tsx the runner is a grandchild of the group leader, still in its group
        process.kill(before.runtime.pid ?? 0, "SIGKILL");
      } catch {
        // gone with its group
      }
      await run.done;
      expect(squeueState(slurmJob)).toBe("RUNNING");

      const jobId = runDir.split("/").at(-1) ?? "";
      const resume = cli(["skill", "resume", jobId, "--json"]);
      await waitFor("the resumer to wait for the request in flight", () =>
        eventsOf(runDir).some((e) => e.data?.action === "await_request") ? true : undefined,
      );
      writeFileSync(gate, "go\n");
      const out = await resume.done;
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout)).toMatchObject({ outcome: "resumed", status: "PASS" });

      const { manifest } = assertJobInvariants(runDir);
      expect(manifest.status).toBe("PASS");
      for (const n of ["one", "two"]) {
        // both scripts ran in the one tool process of the one Slurm step
        expect(readFileSync(join(runDir, "reports", `${n}.rpt`), "utf8").trim()).toBe(
          `${n} ${toolPid}`,
        );
      }
      expect(manifest.runtime.scheduler).toMatchObject({
        job_id: slurmJob,
        cancelled_by: "runtime",
      });
      const kinds = eventsOf(runDir).map((e) => e.event);
      expect(kinds.filter((k) => k === "RESUME")).toHaveLength(1);
      expect(kinds.indexOf("RESUME")).toBeLessThan(kinds.lastIndexOf("SCHEDULER_END"));
      // the resumer cancelled the dead runner's job at the end: nothing is held
      expect(heldJobs()).toBe("");
    }, 180_000);
  },
);
