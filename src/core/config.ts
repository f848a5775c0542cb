import { readFileSync } from "node:fs";
import { z } from "zod";
import { ErrorCode, errnoCode, fromSystemError, TimewarpError } from "./errors.ts";
import { formatZodIssues, parseJsonText } from "./schema.ts";

/** The seed's default excludes (§4) plus nested `.git/` and the usual runtime artifacts. */
export const DEFAULT_EXCLUDES: readonly string[] = [
  "node_modules/",
  ".venv/",
  "dist/",
  "build/",
  ".next/",
  "target/",
  ".cache/",
  "*.log",
  "*.pid",
  ".DS_Store",
  ".git/",
  ".timewarp/",
];

export const ConfigSchema = z
  .object({
    schema_version: z.literal(1).default(1),
    /** gitignore-syntax patterns, relative to the workspace root. Replaces the defaults when given. */
    exclude_globs: z.array(z.string().min(1)).default([...DEFAULT_EXCLUDES]),
    /** Extra patterns added to `exclude_globs` (the usual way to extend the defaults). */
    extra_excludes: z.array(z.string().min(1)).default([]),
    /**
     * New files larger than this are skipped and reported (the snapshot is marked partial; no
     * restore touches them). A safety cap, not a memory limit: large files are hashed and stored
     * in chunks, never held whole.
     */
    max_file_bytes: z
      .number()
      .int()
      .positive()
      .default(1024 * 1024 * 1024),
    /**
     * Keep a file watcher running per workspace (`timewarp watch`; the session-start hook
     * starts it), so scans visit only what changed instead of walking the tree.
     */
    watch: z.boolean().default(true),
    retention: z
      .object({
        /** Ledger operations older than this many days may be dropped (0: keep forever). */
        history_max_age_days: z.number().int().nonnegative().default(0),
        /** At most this many ledger operations are kept (0: no limit). */
        history_max_operations: z.number().int().nonnegative().default(0),
        /**
         * Snapshots made by hand (`timewarp snapshot create`) a session start's cleanup keeps:
         * the newest N (0: all of them, the default). Pinned snapshots always stay.
         */
        manual_snapshots_keep: z.number().int().nonnegative().default(0),
        /** Hand-made snapshots older than this many days may go at a session start (0: never). */
        manual_snapshots_max_age_days: z.number().int().nonnegative().default(0),
        /**
         * Turn checkpoints (`timewarp rewind`) a session start's cleanup keeps: those of live
         * sessions and of the N sessions that prompted last (0: every session's).
         */
        turn_sessions_keep: z.number().int().nonnegative().default(5),
      })
      .prefault({}),
    skillpilot: z
      .object({
        adapter: z.enum(["tclsh", "innovus", "dsub-i", "slurm"]).default("tclsh"),
        tclsh: z.string().default("tclsh"),
        innovus: z.string().default("innovus"),
        /** Launcher template for `dsub-i`; `{cmd}` is replaced by the tool command line. */
        dsub_template: z.string().default("dsub -I {cmd}"),
        ready_timeout_ms: z.number().int().positive().default(60_000),
        /** Silence that ends the session HEARTBEAT_LOST; unset = 3 × heartbeat_interval_ms. */
        heartbeat_stale_ms: z.number().int().positive().optional(),
        request_timeout_ms: z.number().int().positive().default(3_600_000),
        /** Innovus arguments; `{boot}` is the boot script (`-files {boot}` on newer releases). */
        innovus_args: z.array(z.string()).default(["-no_gui", "-init", "{boot}"]),
        /** What the `dsub-i` launcher runs: Innovus (the seed's case) or tclsh. */
        dsub_tool: z.enum(["innovus", "tclsh"]).default("innovus"),
        /** How often the in-tool queue processor looks at queue/ while idle. */
        poll_ms: z.number().int().positive().default(10),
        /** How often the in-tool queue processor bumps session/heartbeat. */
        heartbeat_interval_ms: z.number().int().positive().default(1_000),
        /** Who bumps it: `auto` (a Tcl thread, else the sh sidecar, else the event loop) or one of them. */
        heartbeat_mode: z.enum(["auto", "thread", "sidecar", "loop"]).default("auto"),
        /**
         * How long an orphaned tool session (its runner killed -9) keeps its restored design,
         * waiting for `timewarp skill resume`, before it ends itself; 0 ends it at once.
         */
        orphan_grace_ms: z.number().int().nonnegative().default(600_000),
        /**
         * `--adapter slurm`: how long the job may stay pending before the start fails
         * (SESSION_START_FAIL / QUEUE_WAIT_TIMEOUT); `ready_timeout_ms` counts from RUNNING.
         */
        queue_wait_timeout_ms: z.number().int().positive().default(1_800_000),
        /** `--adapter slurm`: the session runs as `srun --job-name=skillpilot-<job_id> -N1 -n1 …`. */
        slurm: z
          .object({
            partition: z.string().min(1).optional(),
            /** `--time` in Slurm's syntax (`30`, `2:00:00`, `1-0`). */
            time: z.string().min(1).optional(),
            /** Extra srun arguments, before the tool's argv. */
            args: z.array(z.string()).default([]),
            /** What the job step runs. */
            tool: z.enum(["innovus", "tclsh"]).default("innovus"),
            srun: z.string().default("srun"),
            squeue: z.string().default("squeue"),
            scontrol: z.string().default("scontrol"),
            scancel: z.string().default("scancel"),
            sacct: z.string().default("sacct"),
            /** How often the runner asks Slurm about the job. */
            poll_ms: z.number().int().positive().default(1_000),
          })
          .prefault({}),
      })
      .prefault({}),
    memory: z
      .object({
        /** A user-level pattern library shared across projects (optional). */
        user_patterns_dir: z.string().optional(),
        /** External command for the optional `reflect` step (e.g. an LLM CLI); never required. */
        reflect_command: z.array(z.string()).optional(),
      })
      .prefault({}),
  })
  .strict();

export type Config = z.infer<typeof ConfigSchema>;

/** The excludes in force: `exclude_globs` + `extra_excludes`, with `.timewarp/` always present. */
export function effectiveExcludes(config: Config): string[] {
  const all = [...config.exclude_globs, ...config.extra_excludes];
  if (!all.includes(".timewarp/")) all.push(".timewarp/");
  return all;
}

/** Parse a config document; `source` names the file in errors. */
export function parseConfig(value: unknown, source: string): Config {
  const result = ConfigSchema.safeParse(value);
  if (!result.success) {
    throw new TimewarpError(
      ErrorCode.CONFIG_INVALID,
      `${source}: ${formatZodIssues(result.error.issues)}`,
      {
        data: {
          file: source,
          issues: result.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
        },
      },
    );
  }
  return result.data;
}

/** Read `.timewarp/config.json`; defaults when it is absent, CONFIG_INVALID naming the field when wrong. */
export function readConfig(configPath: string): Config {
  let text: string;
  try {
    text = readFileSync(configPath, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return parseConfig({}, configPath);
    throw fromSystemError(error, `reading ${configPath}`);
  }
  const json = parseJsonText(
    text,
    (reason) =>
      new TimewarpError(ErrorCode.CONFIG_INVALID, `${configPath}: not valid JSON (${reason})`, {
        data: { file: configPath },
      }),
  );
  return parseConfig(json, configPath);
}
