import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { inject } from "vitest";
import {
  ManifestSchema,
  type RunSkillOptions,
  runSkill,
  runsRootFor,
  TimelineEventSchema,
} from "../../src/runs/index.ts";
import { cliCommand } from "../helpers/cli.ts";
import { assertJobInvariants, FAST, settings, writeFastSkillConfig } from "../runs-helpers.ts";
import { slurmCmd } from "./cluster.ts";

/** The cluster global-setup.ts started, or why there is none (then every test is skipped). */
export const cluster = inject("slurm");
export const slurmEnv: NodeJS.ProcessEnv = { ...process.env, SLURM_CONF: cluster.conf ?? "" };

/** Slurm settings for tests: tclsh as the step, a quick poll. */
export function slurmSettings(slurm: Partial<ReturnType<typeof settings>["slurm"]> = {}) {
  const base = settings();
  return settings({ slurm: { ...base.slurm, tool: "tclsh", poll_ms: 200, ...slurm } });
}

/** A job through `--adapter slurm`, with every invariant of a job checked. */
export async function runSlurmJob(
  options: Partial<RunSkillOptions> & { cwd: string; skill: string },
) {
  const result = await runSkill({
    design: "AAA",
    adapter: "slurm",
    settings: slurmSettings(),
    timings: { ...FAST, readyTimeoutMs: 20_000 },
    env: { SLURM_CONF: cluster.conf ?? "" },
    ...options,
  });
  const { manifest, summary } = assertJobInvariants(result.runDir);
  return { ...result, manifest, summary, events: timeline(result.runDir) };
}

export function timeline(runDir: string) {
  return readFileSync(join(runDir, "job_timeline.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => TimelineEventSchema.parse(JSON.parse(l)));
}

/** Jobs Slurm still holds (pending, running, completing): what must be empty after a job. */
export function heldJobs(): string {
  return slurmCmd(slurmEnv, ["squeue", "-h", "-o", "%i %j %T"]).trim();
}

export function squeueState(jobId: string): string {
  return slurmCmd(slurmEnv, ["squeue", "--states=all", "-h", "-j", jobId, "-o", "%T"]).trim();
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Wait until `check` returns a value; throws after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined,
  timeoutMs = 60_000,
): Promise<T> {
  const end = performance.now() + timeoutMs;
  while (performance.now() < end) {
    const v = check();
    if (v !== undefined) return v;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The Slurm job id of the one run under `cwd` once its script wrote reports/started. */
export function runningJobId(cwd: string): string | undefined {
  const root = runsRootFor(cwd);
  if (!existsSync(root)) return undefined;
  for (const id of readdirSync(root)) {
    const runDir = join(root, id);
    if (!existsSync(join(runDir, "reports", "started"))) continue;
    try {
      const m = ManifestSchema.parse(
        JSON.parse(readFileSync(join(runDir, "job_manifest.json"), "utf8")),
      );
      if (m.runtime.scheduler?.job_id) return m.runtime.scheduler.job_id;
    } catch {
      // mid-write: look again
    }
  }
  return undefined;
}

/** `.timewarp/config.json` for CLI runs: fast timings, tclsh as the Slurm step. */
export function writeSlurmConfig(cwd: string): void {
  writeFastSkillConfig(cwd, {
    request_timeout_ms: 60_000,
    slurm: { tool: "tclsh", poll_ms: 200 },
  });
}

/** A CLI `skill run --adapter slurm` in its own process (writeSlurmConfig first) (for kill -9 / resume tests). */
export function startJobInChild(o: { cwd: string; skill: string; args?: string[] }): ChildProcess {
  const { command, args } = cliCommand();
  return spawn(
    command,
    [
      ...args,
      "skill",
      "run",
      o.skill,
      "--design",
      "AAA",
      "--adapter",
      "slurm",
      "--json",
      ...(o.args ?? []),
    ],
    { cwd: o.cwd, env: { ...slurmEnv, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] },
  );
}
