import type { Command } from "commander";
import { assertInputDirectory, ErrorCode, TimewarpError } from "../../core/index.ts";
import type { RunSkillResult } from "../../runs/index.ts";
import { helpExamples } from "../help-examples.ts";
import { style } from "../output.ts";
import { action } from "../run.ts";

interface RunFlags {
  design: string;
  adapter?: string;
  select?: string;
  partition?: string;
  time?: string;
  slurmArg?: string[];
}

function parseSelect(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `--select expects a positive integer, got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/** A finished job as `skill run` and `skill resume` print it; a FAIL exits 1 with JOB_FAILED. */
function formatJobResult(
  summary: RunSkillResult["summary"],
  manifest: RunSkillResult["manifest"],
  extra: { json?: Record<string, unknown>; lines?: string[] } = {},
) {
  const pass = summary.status === "PASS";
  const lines = [
    `${pass ? style.green("PASS") : style.red("FAIL")} ${summary.error_type}${summary.detail_code ? ` (${summary.detail_code})` : ""}  ${summary.skill.name} ${summary.skill.version}  job ${summary.job_id}`,
    ...(extra.lines ?? []),
  ];
  if (!pass && summary.message) lines.push(`  ${summary.message}`);
  const candidates =
    summary.error_type === "LOCATOR_FAIL" ? (manifest.design.locator.candidates ?? []) : [];
  candidates.forEach((c, i) => {
    lines.push(`  --select ${i + 1}: ${c.path}  (${c.mtime}, ${c.size} bytes)`);
  });
  for (const [k, v] of Object.entries(summary.metrics)) lines.push(`  ${k}: ${JSON.stringify(v)}`);
  lines.push(`  run_dir: ${summary.evidence.run_dir}`);
  if (summary.evidence.debug_bundle_dir)
    lines.push(`  debug_bundle: ${summary.evidence.debug_bundle_dir}`);
  const error = pass
    ? undefined
    : new TimewarpError(
        ErrorCode.JOB_FAILED,
        `job ${summary.job_id} failed: ${summary.error_type}: ${summary.message ?? ""}`,
        {
          data: {
            job_id: summary.job_id,
            error_type: summary.error_type,
            ...(summary.detail_code ? { detail_code: summary.detail_code } : {}),
            run_dir: summary.evidence.run_dir,
            ...(candidates.length > 0 ? { candidates } : {}),
          },
        },
      ).toJSON();
  const json = { ...summary, ...extra.json };
  return {
    json: error ? { ...json, error } : json,
    human: lines.join("\n"),
    exitCode: pass ? 0 : 1,
  };
}

function resumableNote(jobId: string, until: string | null): string {
  const when = until ? `until ${until}` : "(the tool is busy; its grace starts when it is idle)";
  return `runner: gone, resumable ${when} — timewarp skill resume ${jobId}`;
}

/** SIGINT/SIGTERM end the job as FAIL (never left RUNNING): the job stops its session and summarizes. */
async function withInterrupt<T>(run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => controller.abort(signal);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    return await run(controller.signal);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** `--partition`, `--time`, `--slurm-arg` as runSkill's overrides of `skillpilot.slurm`. */
function slurmOverrides(flags: RunFlags) {
  const slurm = {
    ...(flags.partition !== undefined ? { partition: flags.partition } : {}),
    ...(flags.time !== undefined ? { time: flags.time } : {}),
    ...(flags.slurmArg ? { args: flags.slurmArg } : {}),
  };
  return Object.keys(slurm).length > 0 ? { slurm } : {};
}

/** `timewarp skill run | resume | check | list | runs | compare | show` (SkillPilot). */
export function registerSkillCommands(program: Command): void {
  const skill = program
    .command("skill")
    .addHelpText(
      "after",
      helpExamples([
        "run the summary_health subskill on the design AAA",
        "timewarp skill run summary_health --design AAA",
      ]),
    )
    .description("SkillPilot: evidence-first Tcl tool jobs (Innovus; tclsh by default)");

  skill
    .command("run <skill>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "run a subskill on the design AAA found under this directory",
          "timewarp skill run summary_health --design AAA",
        ],
        [
          "with Innovus instead of tclsh, choosing the second design found",
          "timewarp skill run missing_report --design AAA --adapter innovus --select 2",
        ],
      ),
    )
    .description("run a subskill on a design; the run directory is CWD/.skillpilot/runs/<job_id>/")
    .requiredOption(
      "--design <query>",
      "AAA (scan CWD for AAA.enc + AAA.enc.dat/) or an explicit ./AAA.enc",
    )
    .option(
      "--adapter <name>",
      "tclsh | innovus | dsub-i | slurm (default: config skillpilot.adapter)",
    )
    .option("--select <n>", "choose candidate N (1-based) when the scan finds several")
    .option(
      "--partition <name>",
      "slurm: the partition (default: config skillpilot.slurm.partition)",
    )
    .option("--time <limit>", "slurm: the job's time limit, srun --time syntax (e.g. 2:00:00)")
    .option(
      "--slurm-arg <arg>",
      "slurm: one more srun argument (repeatable, e.g. --slurm-arg=--mem=8G)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .action(
      action(async (ctx, name: string, flags: RunFlags) => {
        const { ADAPTERS, runSkill } = await import("../../runs/index.ts");
        const adapter = ADAPTERS.find((a) => a === flags.adapter);
        if (flags.adapter !== undefined && adapter === undefined) {
          throw new TimewarpError(
            ErrorCode.INVALID_INPUT,
            `--adapter must be one of ${ADAPTERS.join(", ")}, got ${JSON.stringify(flags.adapter)}`,
          );
        }
        const select = parseSelect(flags.select);
        // SIGINT/SIGTERM end the job as FAIL (never left RUNNING): the job stops its session and summarizes.
        const controller = new AbortController();
        const onSignal = (signal: NodeJS.Signals) => controller.abort(signal);
        process.on("SIGINT", onSignal);
        process.on("SIGTERM", onSignal);
        try {
          const { summary, manifest } = await runSkill({
            cwd: ctx.cwd,
            skill: name,
            design: flags.design,
            ...(adapter ? { adapter } : {}),
            ...(select !== undefined ? { select } : {}),
            ...slurmOverrides(flags),
            clock: ctx.clock,
            random: ctx.random,
            signal: controller.signal,
            onProgress: ctx.progress,
          });
          ctx.progress("");
          return formatJobResult(summary, manifest);
        } finally {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
        }
      }),
    );

  skill
    .command("resume <job_id>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "take over a job whose runner was killed, on its still-running tool session",
          "timewarp skill resume 20261127_001500_4242_ab12",
        ],
        ["the same, as JSON", "timewarp skill resume 20261127_001500_4242_ab12 --json"],
      ),
    )
    .description(
      "finish a RUNNING job whose runner is gone, on its live tool session (no second restore); close it when the session is gone",
    )
    .action(
      action(async (ctx, jobId: string) => {
        const { resumeJob } = await import("../../runs/index.ts");
        const result = await withInterrupt((signal) =>
          resumeJob({ cwd: ctx.cwd, jobId, clock: ctx.clock, signal, onProgress: ctx.progress }),
        );
        ctx.progress("");
        const note =
          result.outcome === "resumed"
            ? `  resumed: pid ${process.pid} took the session over (tool pid ${result.manifest.runtime.session?.tool_pid ?? "?"})`
            : "  not resumed: the session was gone, so the job was closed";
        return formatJobResult(result.summary, result.manifest, {
          json: { outcome: result.outcome },
          lines: [note],
        });
      }),
    );

  skill
    .command("check <dir>")
    .addHelpText(
      "after",
      helpExamples([
        "validate a subskill's contract",
        "timewarp skill check subskills/summary_health",
      ]),
    )
    .description(
      "validate a subskill's contract.yaml (seed §7) and its files: each entry exists, is a regular file and stays in the subskill; script names are unique (exit 1, CONTRACT_INVALID, one issue a line)",
    )
    .action(
      action(async (ctx, dir: string) => {
        const { checkContract } = await import("../../runs/index.ts");
        const path = assertInputDirectory(dir, { what: "subskill directory", cwd: ctx.cwd });
        const result = checkContract(path);
        if (!result.ok) {
          throw new TimewarpError(
            ErrorCode.CONTRACT_INVALID,
            `${path}/contract.yaml: ${result.issues.length} issue(s)\n${result.issues.map((i) => `  ${i}`).join("\n")}`,
            {
              data: {
                dir: path,
                issues: result.issues,
                field: result.issues[0]?.split(":")[0] ?? null,
              },
            },
          );
        }
        const c = result.value.contract;
        return {
          json: {
            ok: true,
            dir: path,
            name: c.name,
            version: c.version,
            scripts: c.scripts,
            // what a job would stage: the real file behind each entry, and its scripts/ name
            resolved: result.value.scripts.map((s) => ({
              name: s.name,
              real_path: s.realPath,
              staged_as: `scripts/${s.file}`,
            })),
            outputs: c.outputs,
            debug_hints: c.debug_hints,
          },
          human: `${style.green("ok")} ${c.name} ${c.version}: ${c.scripts.length} script(s), ${c.outputs.required.length} required output(s)`,
        };
      }),
    );

  skill
    .command("list")
    .addHelpText(
      "after",
      helpExamples(["the subskills this directory can run", "timewarp skill list"]),
    )
    .description("subskills found in subskills/, .skillpilot/subskills/ and the package examples")
    .action(
      action(async (ctx) => {
        const { listSkills } = await import("../../runs/index.ts");
        const skills = listSkills(ctx.cwd);
        const human =
          skills.length === 0
            ? "no subskills found"
            : skills
                .map(
                  (s) =>
                    `${s.name.padEnd(20)} ${(s.version ?? "-").padEnd(8)} ${s.valid ? "" : style.red("INVALID ")}${s.source.padEnd(9)} ${s.description ?? s.issues.join("; ")}`,
                )
                .join("\n");
        return { json: { skills }, human };
      }),
    );

  skill
    .command("runs")
    .addHelpText(
      "after",
      helpExamples(["the jobs run here, as JSON", "timewarp skill runs --json"]),
    )
    .description(
      "jobs in CWD/.skillpilot/runs (stale RUNNING jobs are closed first, unless resumable)",
    )
    .action(
      action(async (ctx) => {
        const { listJobs } = await import("../../runs/index.ts");
        const jobs = await listJobs({ cwd: ctx.cwd, clock: ctx.clock });
        const human =
          jobs.length === 0
            ? "no jobs"
            : jobs
                .map(
                  (j) =>
                    `${j.job_id}  ${(j.status === "PASS" ? style.green : j.status === "FAIL" ? style.red : style.yellow)(j.status.padEnd(7))} ${(j.error_type ?? "-").padEnd(18)} ${j.skill ?? "-"}  ${j.design ?? ""}` +
                    (j.resumable ? `\n  ${resumableNote(j.job_id, j.resumable_until)}` : ""),
                )
                .join("\n");
        return { json: { jobs }, human };
      }),
    );

  skill
    .command("compare <job1> <job2>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "how the metrics moved between two jobs of one skill",
          "timewarp skill compare 20250101_100000_4242_a1b2 20250102_090000_4343_c3d4",
        ],
        [
          "the same as one JSON document, even across two skills",
          "timewarp skill compare 20250101_100000_4242_a1b2 20250102_090000_4343_c3d4 --force --json",
        ],
      ),
    )
    .description(
      "metric differences of two jobs of one skill (summary.json metrics, dotted keys): values, delta, relative change, added/removed",
    )
    .option("--force", "compare jobs of different skills (otherwise SKILL_MISMATCH)")
    .action(
      action(async (ctx, jobA: string, jobB: string, flags: { force?: boolean }) => {
        const { compareJobs, formatCompare } = await import("../../runs/index.ts");
        const result = await compareJobs({
          cwd: ctx.cwd,
          jobA,
          jobB,
          force: flags.force === true,
          clock: ctx.clock,
        });
        return { json: result, human: formatCompare(result) };
      }),
    );

  skill
    .command("show <job_id>")
    .addHelpText(
      "after",
      helpExamples([
        "a job's manifest and summary",
        "timewarp skill show 20250101-100000-summary_health-1a2b",
      ]),
    )
    .description("a job's manifest and summary")
    .action(
      action(async (ctx, jobId: string) => {
        const { showJob } = await import("../../runs/index.ts");
        const job = await showJob({ cwd: ctx.cwd, jobId, clock: ctx.clock });
        const m = job.manifest;
        const lines = [
          `${style.bold(job.job_id)}  ${m.status} ${m.error_type ?? ""}${m.detail_code ? ` (${m.detail_code})` : ""}`,
          `skill    ${m.skill.name} ${m.skill.version}`,
          `design   ${m.design.enc_path || m.design.locator.query} (${m.design.locator.selection_reason ?? m.design.locator.mode})`,
          `adapter  ${m.runtime.adapter}`,
          `run_dir  ${job.run_dir}`,
        ];
        const sched = m.runtime.scheduler;
        if (sched)
          lines.push(
            `${sched.kind.padEnd(8)} job ${sched.job_id ?? "?"} ${sched.state ?? ""} on ${sched.node_list ?? "-"}${sched.ending ? ` (${sched.ending})` : ""}`,
          );
        if (m.message) lines.push(`message  ${m.message}`);
        if (job.resumable) lines.push(resumableNote(job.job_id, job.resumable.until));
        return { json: job, human: lines.join("\n") };
      }),
    );
}
