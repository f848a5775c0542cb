import { z } from "zod";
import { SchedulerFactsSchema } from "./scheduler.ts";

/** The protocol version every SkillPilot file carries (seed §12). */
export const SCHEMA_VERSION = "1.0";

/** The seed's failure taxonomy (§10): one fixed enumeration, `OK` only on PASS. */
export const ERROR_TYPES = [
  "OK",
  "LOCATOR_FAIL",
  "SESSION_START_FAIL",
  "INNOVUS_CRASH",
  "HEARTBEAT_LOST",
  "QUEUE_TIMEOUT",
  "RESTORE_FAIL",
  "CMD_FAIL",
  "CONTRACT_INVALID",
  "OUTPUT_MISSING",
  "OUTPUT_EMPTY",
  "INTERNAL_ERROR",
] as const;

export const ErrorTypeSchema = z.enum(ERROR_TYPES);
export type ErrorType = z.infer<typeof ErrorTypeSchema>;

export const ADAPTERS = ["tclsh", "innovus", "dsub-i", "slurm"] as const;
export type AdapterName = (typeof ADAPTERS)[number];

/** The timeline's states (§4.3: each gets STATE_ENTER and STATE_EXIT). */
export const JOB_STATES = [
  "INIT",
  "LOAD_CONTRACT",
  "LOCATE_DB",
  "START_SESSION",
  "RESTORE",
  "RUN_SCRIPTS",
  "VALIDATE_OUTPUTS",
  "SUMMARIZE",
] as const;
export type JobState = (typeof JOB_STATES)[number];

/**
 * A request's optional `policy` (an extra field, which §5.1 does not forbid): what the queue
 * processor refuses while the script runs. `allowed_dirs` (the design's directory) is added by
 * the runtime; the rest comes from the contract's `policy`.
 */
export const RequestPolicySchema = z.object({
  confine_paths: z.boolean(),
  allow_exec: z.array(z.string()).optional(),
  allowed_dirs: z.array(z.string()),
});
export type RequestPolicy = z.infer<typeof RequestPolicySchema>;

/** queue/<request_id>.json (§5.1). */
export const RequestSchema = z.object({
  schema_version: z.string(),
  request_id: z.string().regex(/^[A-Za-z0-9_.-]+$/),
  job_id: z.string(),
  action: z.literal("SOURCE_TCL"),
  script: z.string().startsWith("scripts/"),
  timeout_s: z.number().positive().optional(),
  created_at: z.string(),
  policy: RequestPolicySchema.optional(),
});

/** ack/<request_id>.json (§5.2), plus `detail_code` and `by` (who published it). */
export const AckSchema = z
  .object({
    schema_version: z.string(),
    request_id: z.string(),
    job_id: z.string(),
    status: z.enum(["PASS", "FAIL"]),
    error_type: ErrorTypeSchema,
    detail_code: z.string().optional(),
    message: z.string(),
    script: z.string().optional(),
    started_at: z.string().optional(),
    finished_at: z.string().optional(),
    duration_ms: z.number().optional(),
    evidence_paths: z.array(z.string()).optional(),
    by: z.enum(["queue_processor", "supervisor"]).optional(),
  })
  .passthrough();
export type Ack = z.infer<typeof AckSchema>;

/** One line of job_timeline.jsonl (§4.2). */
export const TimelineEventSchema = z.object({
  schema_version: z.string(),
  ts: z.string(),
  job_id: z.string(),
  level: z.enum(["INFO", "WARN", "ERROR"]),
  event: z.string(),
  state: z.string().optional(),
  message: z.string().optional(),
  data: z.record(z.string(), z.unknown()).optional(),
});
export type TimelineEvent = z.infer<typeof TimelineEventSchema>;

export const CandidateSchema = z.object({
  path: z.string(),
  enc_dat_path: z.string(),
  mtime: z.string(),
  size: z.number(),
});
export type Candidate = z.infer<typeof CandidateSchema>;

export const LocatorRecordSchema = z.object({
  mode: z.enum(["explicit_path", "cwd_scan"]),
  query: z.string(),
  candidates: z.array(CandidateSchema).optional(),
  selected: z.object({ enc_path: z.string(), enc_dat_path: z.string() }).optional(),
  selection_reason: z.string().optional(),
});
export type LocatorRecord = z.infer<typeof LocatorRecordSchema>;

/** job_manifest.json (§3): the job's table of facts. */
export const ManifestSchema = z
  .object({
    schema_version: z.string(),
    job_id: z.string(),
    created_at: z.string(),
    updated_at: z.string().optional(),
    finished_at: z.string().optional(),
    status: z.enum(["RUNNING", "PASS", "FAIL"]),
    error_type: ErrorTypeSchema.optional(),
    detail_code: z.string().optional(),
    message: z.string().optional(),
    runtime: z
      .object({
        cwd: z.string(),
        run_dir: z.string(),
        adapter: z.enum(ADAPTERS),
        user: z.string().optional(),
        host: z.string().optional(),
        pid: z.number().optional(),
        env_summary: z.record(z.string(), z.string()).optional(),
        session: z
          .object({
            pgid: z.number().optional(),
            command: z.array(z.string()).optional(),
            tool_pid: z.number().optional(),
          })
          .optional(),
        /** `--adapter slurm`: the scheduler job, kept up to date while the session runs. */
        scheduler: SchedulerFactsSchema.optional(),
      })
      .passthrough(),
    design: z
      .object({
        enc_path: z.string(),
        enc_dat_path: z.string(),
        locator: LocatorRecordSchema,
        restore: z
          .object({
            wrapper: z.string(),
            request_id: z.string(),
            ack: z.string(),
            status: z.string().optional(),
          })
          .optional(),
      })
      .passthrough(),
    skill: z
      .object({ name: z.string(), version: z.string(), subskill_path: z.string() })
      .passthrough(),
    requests: z
      .array(
        z.object({
          request_id: z.string(),
          script: z.string(),
          status: z.string().optional(),
          error_type: z.string().optional(),
        }),
      )
      .optional(),
    artifacts: z.record(z.string(), z.string()).optional(),
    versions: z.record(z.string(), z.string()).optional(),
    closed_reason: z.string().optional(),
  })
  .passthrough();
export type Manifest = z.infer<typeof ManifestSchema>;

/** summary.json (§9.1). */
export const SummarySchema = z
  .object({
    schema_version: z.string(),
    job_id: z.string(),
    status: z.enum(["PASS", "FAIL"]),
    error_type: ErrorTypeSchema,
    detail_code: z.string().optional(),
    message: z.string().optional(),
    design: z.object({ enc_path: z.string(), enc_dat_path: z.string() }),
    skill: z.object({ name: z.string(), version: z.string() }),
    metrics: z.record(z.string(), z.unknown()),
    findings: z.array(z.string()).optional(),
    risks: z.array(z.string()).optional(),
    evidence: z.object({
      run_dir: z.string(),
      summary_md: z.string(),
      reports_dir: z.string(),
      debug_bundle_dir: z.string().optional(),
    }),
    duration_ms: z.number().optional(),
  })
  .passthrough();
export type Summary = z.infer<typeof SummarySchema>;

/** debug_bundle/index.json (§11.3). */
export const DebugIndexSchema = z.object({
  schema_version: z.string(),
  job_id: z.string(),
  error_type: ErrorTypeSchema,
  detail_code: z.string().optional(),
  summary: z.string(),
  pointers: z.object({
    manifest: z.string(),
    timeline: z.string(),
    last_fail_ack: z.string().nullable(),
    session_logs: z.string().nullable(),
    reports_inventory: z.string(),
    contract: z.string().nullable(),
    /** The failing request's Tcl errorInfo, copied from session/errors/<request_id>.txt. */
    error_info: z.string().nullable().optional(),
  }),
  next_actions: z.array(z.string()),
});
export type DebugIndex = z.infer<typeof DebugIndexSchema>;

/**
 * Who bumps session/heartbeat: a Tcl thread, the POSIX-sh sidecar (both beat while the main
 * interp is busy, so the runtime judges them during requests), or the event loop (judged only
 * while idle). `auto` (the setting) picks the first that works in that order.
 */
export const HEARTBEAT_MODES = ["thread", "sidecar", "loop"] as const;
export type HeartbeatMode = (typeof HEARTBEAT_MODES)[number];

/** session/ready.json, written by the queue processor once it listens. */
export const ReadySchema = z.object({
  schema_version: z.string(),
  pid: z.number(),
  host: z.string(),
  tcl_version: z.string(),
  stubbed: z.boolean(),
  started_at: z.string(),
  /** Absent from processors before the mode existed: those beat on the loop. */
  heartbeat_mode: z.enum(HEARTBEAT_MODES).optional(),
  /** The sidecar's pid (on the tool's host), in `sidecar` mode. */
  heartbeat_pid: z.number().optional(),
});
export type Ready = z.infer<typeof ReadySchema>;

/**
 * session/runner.json: the runner that owns the job now, written atomically by the runtime at
 * start and by `skill resume`. The queue processor reads it to tell an orphaned session, and how
 * long to wait (`orphan_grace_ms`) for a resume before it ends itself.
 */
export const RunnerFileSchema = z.object({
  schema_version: z.string(),
  pid: z.number().int(),
  host: z.string(),
  since: z.string(),
  orphan_grace_ms: z.number().int().nonnegative(),
});
export type RunnerFile = z.infer<typeof RunnerFileSchema>;

/** session/orphan.json: written by the queue processor when it finds its runner gone. */
export const OrphanFileSchema = z.object({
  schema_version: z.string(),
  runner_pid: z.number().int(),
  since: z.string(),
  until: z.string(),
  orphan_grace_ms: z.number().int().nonnegative(),
});
export type OrphanFile = z.infer<typeof OrphanFileSchema>;
