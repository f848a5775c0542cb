/**
 * runs (SkillPilot): evidence-first jobs that drive a long-lived Tcl tool session (Innovus, or
 * tclsh by default) only through atomic request/ack files, with `CWD/.skillpilot/runs/<job_id>/`
 * as the single source of truth (seed: skillpilot-protocols.zh.md). See README.md.
 */

/** Parse/validate contract.yaml (§7) — `readContract(dir)` reads `<dir>/contract.yaml`; results, not throws. */
export { readContract } from "./contract.ts";
export type { RunSkillOptions, SkillPilotSettings } from "./job.ts";
/** Run a skill as a job; tool faults are the job's FAIL, never an exception. */
export { runSkill } from "./job.ts";
/** `skill runs` / `skill show`; both close stale RUNNING jobs first. */
export { closeStaleJobs, listJobs, showJob } from "./jobs.ts";
export { exampleDesignDir } from "./package-paths.ts";
export { processGroupAlive } from "./process-group.ts";
export type { AdapterName, Manifest } from "./protocol.ts";
export {
  AckSchema,
  ADAPTERS,
  DebugIndexSchema,
  ManifestSchema,
  RequestSchema,
  SummarySchema,
  TimelineEventSchema,
} from "./protocol.ts";
export type { ProtocolIo } from "./run-dir.ts";
export { createRunDir, defaultProtocolIo, runsRootFor } from "./run-dir.ts";
/** `--adapter slurm`'s plan from `skillpilot.slurm` (the benchmark starts Slurm sessions with it). */
export { planSlurm } from "./scheduler-slurm.ts";
export type { SessionTimings, StartSessionOptions, ToolSession } from "./session.ts";
/** A tool session behind the file protocol (used by runSkill and the benchmark). */
export { startToolSession } from "./session.ts";
export { listSkills } from "./skills.ts";
