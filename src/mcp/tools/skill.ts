import { z } from "zod";
import { defineTool, type ToolDefinition } from "../define-tool.ts";

const SummaryOut = z
  .object({
    schema_version: z.string(),
    job_id: z.string(),
    status: z.enum(["PASS", "FAIL"]),
    error_type: z.string(),
    detail_code: z.string().optional(),
    message: z.string().optional(),
    design: z.object({ enc_path: z.string(), enc_dat_path: z.string() }),
    skill: z.object({ name: z.string(), version: z.string() }),
    metrics: z.record(z.string(), z.unknown()),
    evidence: z.object({
      run_dir: z.string(),
      summary_md: z.string(),
      reports_dir: z.string(),
      debug_bundle_dir: z.string().optional(),
    }),
  })
  .passthrough();

/** SkillPilot tools: run a skill, resume a job, list subskills, show a job, compare two jobs. */
export function defineSkillTools(): ToolDefinition[] {
  return [
    defineTool({
      name: "skill_run",
      title: "Run a SkillPilot skill",
      description:
        "Run a subskill (e.g. summary_health) on a chip design in a Tcl tool session (tclsh by default, Innovus, or a farm launcher) " +
        "and return its summary.json: status PASS/FAIL, error_type from the fixed taxonomy (LOCATOR_FAIL, CMD_FAIL, OUTPUT_MISSING, …), " +
        "metrics and evidence paths (run_dir, reports, debug_bundle on FAIL). design is a name to search for (AAA → AAA.enc + AAA.enc.dat/) " +
        "or an explicit ./AAA.enc; when several designs match, the FAIL lists candidates in the manifest and you pass select (1-based). " +
        "A FAIL is a normal result, not a tool error: read error_type and message, then the debug bundle.",
      inputSchema: z.object({
        skill: z.string().min(1).describe("subskill name or folder path"),
        design: z.string().min(1).describe("AAA or ./AAA.enc"),
        adapter: z.enum(["tclsh", "innovus", "dsub-i", "slurm"]).optional(),
        select: z.number().int().positive().optional(),
        slurm: z
          .object({
            partition: z.string().min(1).optional(),
            time: z.string().min(1).optional(),
            args: z.array(z.string()).optional(),
          })
          .optional()
          .describe("adapter slurm: partition, time limit (srun --time) and extra srun args"),
      }),
      outputSchema: SummaryOut,
      handler: async (input, ctx) => {
        const { runSkill } = await import("../../runs/index.ts");
        const { summary, manifest } = await runSkill({
          cwd: ctx.root,
          skill: input.skill,
          design: input.design,
          ...(input.adapter ? { adapter: input.adapter } : {}),
          ...(input.select !== undefined ? { select: input.select } : {}),
          ...(input.slurm ? { slurm: input.slurm } : {}),
          clock: ctx.clock,
          random: ctx.random,
        });
        // an agent answers LOCATOR_FAIL with `select`: hand it the candidates right away
        const candidates =
          summary.error_type === "LOCATOR_FAIL" ? manifest.design.locator.candidates : undefined;
        return candidates && candidates.length > 0 ? { ...summary, candidates } : summary;
      },
    }),
    defineTool({
      name: "skill_resume",
      title: "Resume a SkillPilot job",
      description:
        "Finish a RUNNING job whose runner was killed (skill_show says resumable), on its still-running tool session: no second " +
        "launch or design restore. Acks already on disk count, a request in flight is waited for, the rest are run, then outputs " +
        "are validated and summary.json written. Returns the summary with outcome 'resumed', or 'closed' (FAIL INTERNAL_ERROR / " +
        "RUNNER_GONE) when the session was gone. JOB_NOT_RESUMABLE when the job is not RUNNING or another runner owns it.",
      inputSchema: z.object({ job_id: z.string().min(1) }),
      outputSchema: SummaryOut.extend({ outcome: z.enum(["resumed", "closed"]) }),
      handler: async (input, ctx) => {
        const { resumeJob } = await import("../../runs/index.ts");
        const { outcome, summary } = await resumeJob({
          cwd: ctx.root,
          jobId: input.job_id,
          clock: ctx.clock,
        });
        return { ...summary, outcome };
      },
    }),
    defineTool({
      name: "skill_list",
      title: "List SkillPilot subskills",
      description:
        "Subskills available to skill_run (workspace subskills/ first, then the package examples), with version and contract validity.",
      inputSchema: z.object({}),
      outputSchema: z.object({
        skills: z.array(
          z.object({
            name: z.string(),
            dir: z.string(),
            source: z.string(),
            version: z.string().nullable(),
            valid: z.boolean(),
            issues: z.array(z.string()),
            description: z.string().nullable(),
          }),
        ),
      }),
      annotations: { readOnlyHint: true },
      handler: async (_input, ctx) => {
        const { listSkills } = await import("../../runs/index.ts");
        return { skills: listSkills(ctx.root) };
      },
    }),
    defineTool({
      name: "skill_compare",
      title: "Compare two SkillPilot jobs",
      description:
        "The metric differences of two jobs of one skill (job ids from skill_run): every metric of their summary.json, flattened with dotted keys, " +
        "with both values, the delta and relative change for numbers, changed/same for others, added/removed; and each job's status and error_type. " +
        "SKILL_MISMATCH for jobs of different skills (force: true compares them anyway), JOB_NOT_FOUND for an unknown id.",
      inputSchema: z.object({
        job_a: z.string().min(1).describe("the first job id (the baseline)"),
        job_b: z.string().min(1).describe("the second job id"),
        force: z.boolean().optional().describe("compare jobs of different skills"),
      }),
      outputSchema: z.object({
        skill: z.string(),
        forced: z.boolean(),
        jobs: z.array(
          z.object({
            job_id: z.string(),
            status: z.string(),
            error_type: z.string().nullable(),
            detail_code: z.string().nullable(),
            skill: z.string(),
            version: z.string(),
            run_dir: z.string(),
            has_summary: z.boolean(),
          }),
        ),
        metrics: z.array(
          z.object({
            key: z.string(),
            a: z.unknown(),
            b: z.unknown(),
            change: z.enum(["same", "changed", "added", "removed"]),
            delta: z.number().optional(),
            relative: z.number().nullable().optional(),
          }),
        ),
        counts: z.object({
          same: z.number(),
          changed: z.number(),
          added: z.number(),
          removed: z.number(),
        }),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) => {
        const { compareJobs } = await import("../../runs/index.ts");
        return compareJobs({
          cwd: ctx.root,
          jobA: input.job_a,
          jobB: input.job_b,
          force: input.force === true,
          clock: ctx.clock,
        });
      },
    }),
    defineTool({
      name: "skill_show",
      title: "Show a SkillPilot job",
      description:
        "A job's manifest and summary by job_id (from skill_run). JOB_NOT_FOUND for an unknown id. " +
        "resumable is set when the job is RUNNING, its runner gone and its session waiting for skill_resume (until when).",
      inputSchema: z.object({ job_id: z.string().min(1) }),
      outputSchema: z.object({
        job_id: z.string(),
        run_dir: z.string(),
        manifest: z.record(z.string(), z.unknown()),
        summary: z.record(z.string(), z.unknown()).nullable(),
        resumable: z.object({ until: z.string().nullable() }).nullable(),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) => {
        const { showJob } = await import("../../runs/index.ts");
        return showJob({ cwd: ctx.root, jobId: input.job_id, clock: ctx.clock });
      },
    }),
  ];
}
