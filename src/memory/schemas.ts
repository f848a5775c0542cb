import { z } from "zod";

/** The seed's four checkpoints, in the order a run must pass them. */
export const CHECKPOINTS = ["reproduce", "modify", "test", "regress"] as const;
export type Checkpoint = (typeof CHECKPOINTS)[number];

/** Where an event was extracted from (not in the seed: kept so a reader knows how much to trust it). */
export const EVENT_SOURCES = [
  "chat",
  "transcript",
  "patch",
  "term",
  "git",
  "ledger",
  "bus",
  "trajectory",
] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

export const TestResultSchema = z.object({
  framework: z.string(),
  passed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  skipped: z.number().int().nonnegative().default(0),
  /** The command's exit code when the source says it (transcripts, logs with `exit N`). */
  exit_code: z.number().int().nullable().default(null),
  /** Per-test outcomes when the output names its tests (`node --test`), so a required test can be matched by name. */
  tests: z
    .array(z.object({ name: z.string(), status: z.enum(["pass", "fail", "skip"]) }))
    .optional(),
});
export type TestResult = z.infer<typeof TestResultSchema>;

/**
 * One line of `events.jsonl` — the seed's appendix schema (edit / plan / shell(test)) as one
 * union-of-fields object, plus a few optional fields the extractors know exactly (`source`,
 * `change`, `stats`, `result`, `op_id`). Unknown fields are dropped on read, never an error.
 */
export const MemoryEventSchema = z.object({
  run_id: z.string(),
  step: z.number().int().nonnegative(),
  phase: z.enum(CHECKPOINTS),
  tool: z.enum(["edit", "plan", "shell"]),
  /** `<path>` or `<path>:<line>` for edits. */
  where: z.string().optional(),
  why: z.string().optional(),
  confidence: z.number().min(0).max(1).optional(),
  /** A snippet that shows the change happened (code block, diff hunk, tool input), truncated. */
  evidence: z.string().optional(),
  cmd: z.string().optional(),
  source: z.enum(EVENT_SOURCES).optional(),
  /** For edits: what happened to the file, when the source knows. */
  change: z.enum(["added", "modified", "deleted", "renamed"]).optional(),
  stats: z.object({ added: z.number(), removed: z.number() }).optional(),
  result: TestResultSchema.optional(),
  /** The ledger operation that made this edit (for `timewarp revert`). */
  op_id: z.string().optional(),
  /** ISO time of the event when its source records one (eval's recovery time in seconds). */
  ts: z.string().optional(),
  /** The other sources that saw the same edit or test run (`source` is the most exact one). */
  also: z.array(z.enum(EVENT_SOURCES)).optional(),
  /** A prose claim of an edit that no fact of the run (steps, patch, git, ledger) shows: kept at low confidence. */
  claim: z.boolean().optional(),
});
export type MemoryEvent = z.infer<typeof MemoryEventSchema>;

export const GUARD_ACTIONS = ["ok", "warn", "rollback"] as const;
export type GuardAction = (typeof GUARD_ACTIONS)[number];

/** One line of `guards.jsonl` (seed appendix) plus `tool`, `phase` and `reasons`. */
export const GuardRecordSchema = z.object({
  run_id: z.string(),
  step: z.number().int().nonnegative(),
  tool: z.enum(["edit", "plan", "shell"]),
  phase: z.enum(CHECKPOINTS),
  scope_guard: z.number(),
  plan_guard: z.number(),
  test_guard: z.number(),
  evidence_guard: z.number(),
  drift_score: z.number(),
  action: z.enum(GUARD_ACTIONS),
  file: z.string().optional(),
  cmd: z.string().optional(),
  auto_fixable: z.boolean().optional(),
  fix_cmd: z.string().optional(),
  reasons: z.array(z.string()),
});
export type GuardRecord = z.infer<typeof GuardRecordSchema>;

const StringList = z.array(z.string().min(1));

export const WeightsSchema = z
  .object({
    scope: z.number().min(0).default(0.4),
    plan: z.number().min(0).default(0.3),
    test: z.number().min(0).default(0.2),
    evidence: z.number().min(0).default(0.1),
  })
  .strict()
  .refine((w) => w.scope + w.plan + w.test + w.evidence > 0, {
    message: "at least one weight must be > 0",
  });
export type Weights = z.infer<typeof WeightsSchema>;

export const ThresholdsSchema = z
  .object({
    warn: z.number().min(0).max(1).default(0.5),
    rollback: z.number().min(0).max(1).default(0.8),
  })
  .strict()
  .refine((t) => t.warn <= t.rollback, {
    message: "warn must be <= rollback",
    path: ["warn"],
  });
export type Thresholds = z.infer<typeof ThresholdsSchema>;

/**
 * The original lab's names for two goal fields (`1_sessions/<s>/pairs/qNN/goal.json`, issue 18):
 * accepted as aliases, so a lab goal reads as it is. Giving both names of one field is an error.
 */
const GOAL_ALIASES = { allowed_paths: "whitelist", forbidden_paths: "blacklist" } as const;

function goalAliases(value: unknown, ctx: z.RefinementCtx): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [alias, name] of Object.entries(GOAL_ALIASES)) {
    if (!(alias in out)) continue;
    if (name in out) {
      ctx.addIssue({
        code: "custom",
        path: [alias],
        message: `${alias} and ${name} are one field (${alias} is the original lab's name for ${name}): give one of them`,
      });
    } else out[name] = out[alias];
    delete out[alias];
  }
  return out;
}

/** `goal.json` as stored, under timewarp's own field names. */
const GoalObjectSchema = z
  .object({
    schema_version: z.literal(1).default(1),
    run_id: z.string().min(1).optional(),
    objective: z.string().trim().min(1),
    /** gitignore-like globs the run may edit (`docs/` covers everything below). Empty: anything not blacklisted. */
    whitelist: StringList.default([]),
    /** gitignore-like globs the run must not edit. A path in both lists is blacklisted (the safer reading). */
    blacklist: StringList.default([]),
    /**
     * The Scope guard's value for an edit outside a non-empty whitelist (not blacklisted). 1, the
     * default, makes it as much a violation as the blacklist; 0.5 makes it a warning under the
     * default weights and thresholds, while the blacklist still rolls back.
     */
    whitelist_scope: z.number().min(0).max(1).default(1),
    /** Globs of tests the run must not modify (editing them to pass is tampering). */
    protected: StringList.default([]),
    checkpoints: z
      .array(z.enum(["reproduce", "modify", "test", "regress"]))
      .default(["reproduce", "modify", "test", "regress"])
      .refine((list) => list.every((c, i) => i === 0 || order(list[i - 1] ?? c) < order(c)), {
        message: "checkpoints must be in the order reproduce → modify → test → regress, each once",
      }),
    /** Test commands (or substrings of them), or test names a runner lists (`node --test`), that must have run and passed. */
    required_tests: StringList.default([]),
    /** Files already modified before the run started: a baseline, never drift. */
    baseline: StringList.default([]),
    thresholds: ThresholdsSchema.prefault({}),
    weights: WeightsSchema.prefault({}),
    difficulty: z.enum(["low", "high"]).optional(),
    /** SWE-bench instance id, for the predictions export. */
    instance_id: z.string().optional(),
    /** A git work tree (relative to the run directory) whose changed-file list is a fallback source. */
    repo: z.string().optional(),
  })
  .strict();

/** `goal.json`: the objective, the scope lists, the checkpoints, thresholds and weights (lab aliases accepted). */
export const GoalSchema = z.preprocess(goalAliases, GoalObjectSchema);
export type Goal = z.infer<typeof GoalObjectSchema>;
export type GoalInput = z.input<typeof GoalObjectSchema>;

function order(c: string): number {
  return (CHECKPOINTS as readonly string[]).indexOf(c);
}

/** `profiles/<user>.json` (seed appendix). */
export const ProfileSchema = z.object({
  user_id: z.string().min(1),
  self_report: z.string().optional(),
  hist_first_try_success: z.number().min(0).max(1).optional(),
  pref: z.enum(["terse", "guided"]).nullable().optional(),
});
export type Profile = z.infer<typeof ProfileSchema>;

/** A pattern card: the seed's fields (governance-ready) plus a use counter. */
export const PatternCardSchema = z.object({
  version: z.string(),
  pattern_id: z.string().regex(/^pc_[a-z0-9_]+$/, "expected pc_ followed by [a-z0-9_]"),
  title: z.string().min(1),
  triggers: z.array(z.string()),
  steps: z.array(z.string()),
  invariants: z.array(z.string()),
  anti_patterns: z.array(z.string()),
  eval_examples: z.array(z.string()),
  views: z.object({ terse: z.string(), guided: z.string() }),
  provenance: z
    .object({
      source_runs: z.array(z.string()),
      created_by: z.string(),
      created_at: z.string(),
      updated_at: z.string().optional(),
      reflected: z.boolean().optional(),
    })
    .passthrough(),
  /** How often the card was retrieved for a task (not in the seed; the reuse metric needs it). */
  uses: z.number().int().nonnegative().default(0),
  last_used_at: z.string().optional(),
});
export type PatternCard = z.infer<typeof PatternCardSchema>;
