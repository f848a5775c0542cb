/**
 * runs (SkillPilot): evidence-first jobs that drive a long-lived Tcl tool session (Innovus, or
 * tclsh by default) only through atomic request/ack files, with `CWD/.skillpilot/runs/<job_id>/`
 * as the single source of truth (seed: skillpilot-protocols.zh.md). See README.md.
 */

export type { ComparedJob, CompareResult, MetricChange, MetricDiff } from "./compare.ts";
/** `skill compare JOB1 JOB2`: metric differences across two jobs of one skill. */
export { compareJobs, diffMetrics, flattenMetrics, formatCompare } from "./compare.ts";
/**
 * Parse/validate contract.yaml (§7) — `readContract(dir)` checks the text, `checkContract(dir)`
 * the text and the files (entries exist, stay in the subskill; unique script names); results, not throws.
 */
export type { CheckedContract, CheckedScript } from "./contract.ts";
export { checkContract, readContract } from "./contract.ts";
export type { RunSkillOptions, RunSkillResult, SkillPilotSettings } from "./job.ts";
/** Run a skill as a job; tool faults are the job's FAIL, never an exception. */
export { runSkill } from "./job.ts";
export type { JobFiles, QueueState, RequestPair, RunFile, StateSpan } from "./job-files.ts";
/** A run directory read for the dashboard: timeline and states, requests paired with acks, files, bundle. */
export { readJobFiles } from "./job-files.ts";
/**
 * `skill runs` / `skill show`; both close stale RUNNING jobs first (those not resumable), unless
 * `close: false` (the read-only dashboard). `readManifest(runDir)`: a job's manifest, or undefined
 * when absent or unreadable (reads only).
 */
export { closeStaleJobs, listJobs, readManifest, showJob } from "./jobs.ts";
export type { MetricSeries, SeriesJob } from "./metric-series.ts";
/** Metrics of every job of one skill, oldest first, and the numeric ones they share (the dashboard's chart). */
export { skillMetricSeries } from "./metric-series.ts";
export { exampleDesignDir } from "./package-paths.ts";
export { processGroupAlive } from "./process-group.ts";
export type { Ack, AdapterName, HeartbeatMode, Manifest, RequestPolicy } from "./protocol.ts";
export {
  AckSchema,
  ADAPTERS,
  DebugIndexSchema,
  ManifestSchema,
  RequestSchema,
  SummarySchema,
  TimelineEventSchema,
} from "./protocol.ts";
export type { ResumeJobOptions, ResumeJobResult } from "./resume.ts";
/** `skill resume`: take over a job whose runner was killed, on its live session, or close it. */
export { resumeJob } from "./resume.ts";
export type { ProtocolIo } from "./run-dir.ts";
export { createRunDir, defaultProtocolIo, runsRootFor } from "./run-dir.ts";
/** `--adapter slurm`'s plan from `skillpilot.slurm` (the benchmark starts Slurm sessions with it). */
export { planSlurm } from "./scheduler-slurm.ts";
export type { SessionTimings, StartSessionOptions, ToolSession } from "./session.ts";
/** A tool session behind the file protocol (used by runSkill and the benchmark). */
export { startToolSession } from "./session.ts";
export { listSkills } from "./skills.ts";
