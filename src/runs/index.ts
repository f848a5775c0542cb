/**
 * runs (SkillPilot): evidence-first jobs that drive a long-lived Tcl tool session (Innovus, or
 * tclsh by default) only through atomic request/ack files, with `CWD/.skillpilot/runs/<job_id>/`
 * as the single source of truth (seed: skillpilot-protocols.zh.md). See README.md.
 */

export type { Contract } from "./contract.ts";
/** Parse/validate contract.yaml (§7) — `readContract(dir)` reads `<dir>/contract.yaml`; results, not throws. */
export { ContractSchema, parseContract, readContract } from "./contract.ts";
export type { RunSkillOptions, RunSkillResult, SkillPilotSettings } from "./job.ts";
/** Run a skill as a job; tool faults are the job's FAIL, never an exception. */
export { runSkill, timingsFrom } from "./job.ts";
export type { JobListing } from "./jobs.ts";
/** `skill runs` / `skill show`; both close stale RUNNING jobs first. */
export { closeStaleJobs, listJobs, showJob } from "./jobs.ts";
export type { LaunchSettings } from "./launch.ts";
/** The session command line for each adapter (pure). */
export { planLaunch } from "./launch.ts";
export type { LocateResult } from "./locator.ts";
/** The design locator (§3.4). */
export { locateDesign } from "./locator.ts";
export { exampleDesignDir, exampleSkillsDir, tclDir } from "./package-paths.ts";
export { processGroupAlive } from "./process-group.ts";
export type {
  Ack,
  AdapterName,
  DebugIndex,
  ErrorType,
  Manifest,
  Summary,
  TimelineEvent,
} from "./protocol.ts";
export {
  AckSchema,
  ADAPTERS,
  DebugIndexSchema,
  ERROR_TYPES,
  ManifestSchema,
  RequestSchema,
  SCHEMA_VERSION,
  SummarySchema,
  TimelineEventSchema,
} from "./protocol.ts";
export type { ProtocolIo, RunPaths } from "./run-dir.ts";
export { createRunDir, defaultProtocolIo, runPathsFor, runsRootFor } from "./run-dir.ts";
export type {
  RequestOptions,
  SessionTimings,
  StartSessionOptions,
  ToolSession,
} from "./session.ts";
/** A tool session behind the file protocol (used by runSkill and the benchmark). */
export { startToolSession } from "./session.ts";
export type { SkillEntry } from "./skills.ts";
export { findSkill, listSkills } from "./skills.ts";
export type { JobFailure, SessionObservation } from "./taxonomy.ts";
export { classifySession } from "./taxonomy.ts";
export type { ValidateOutputsResult } from "./validate-outputs.ts";
export { checkOutputs, inventoryReports, validateOutputs } from "./validate-outputs.ts";
