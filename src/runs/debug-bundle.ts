import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { fromSystemError, tempPathFor } from "../core/index.ts";
import { type Ack, AckSchema, type DebugIndex, SCHEMA_VERSION } from "./protocol.ts";
import type { ProtocolIo, RunPaths } from "./run-dir.ts";
import type { JobFailure } from "./taxonomy.ts";
import { inventoryReports } from "./validate-outputs.ts";

function tailOf(path: string, bytes: number): string | undefined {
  try {
    return readFileSync(path, "utf8").slice(-bytes);
  } catch {
    return undefined;
  }
}

/** The last FAIL ack of the run (by finished_at, then name), if any. */
export function lastFailAck(paths: RunPaths): { name: string; ack: Ack } | undefined {
  let best: { name: string; ack: Ack } | undefined;
  let names: string[] = [];
  try {
    names = readdirSync(paths.ack)
      .filter((n) => n.endsWith(".json") && !n.includes(".tw-tmp-"))
      .sort();
  } catch {
    return undefined;
  }
  for (const name of names) {
    try {
      const ack = AckSchema.parse(JSON.parse(readFileSync(join(paths.ack, name), "utf8")));
      if (ack.status === "FAIL") best = { name, ack };
    } catch {
      // a foreign file in ack/
    }
  }
  return best;
}

const NEXT_ACTIONS: Record<JobFailure["error_type"], string[]> = {
  LOCATOR_FAIL: [
    "check design.locator in job_manifest.json; pass an explicit ./X.enc or --select N",
  ],
  SESSION_START_FAIL: [
    "read session/tool.stderr.log and session/supervisor.log",
    "check skillpilot.tclsh/innovus/dsub_template in .timewarp/config.json and ready_timeout_ms",
  ],
  INNOVUS_CRASH: [
    "read the tails of session/tool.stderr.log and tool.stdout.log",
    "re-run the last request's script alone to reproduce the crash",
  ],
  HEARTBEAT_LOST: [
    "the tool stopped beating (stopped, frozen, or its node lost): check the host or farm job, session/processor.log.tail and session/sidecar.log.tail",
    "raise skillpilot.heartbeat_stale_ms if the host is overloaded",
  ],
  QUEUE_TIMEOUT: [
    "the script did not return in time: check it for an endless loop, or raise its timeout_s in the contract (or skillpilot.request_timeout_ms)",
  ],
  RESTORE_FAIL: [
    "read the restore ack (pointers.last_fail_ack)",
    "check that the .enc restores in a fresh tool session",
  ],
  CMD_FAIL: ["read the last FAIL ack (pointers.last_fail_ack: message, detail_code)"],
  CONTRACT_INVALID: ["run `timewarp skill check <subskill dir>` and fix the field it names"],
  OUTPUT_MISSING: [
    "compare reports_inventory.json with the contract's outputs.required",
    "see the contract's debug_hints",
  ],
  OUTPUT_EMPTY: ["the listed outputs exist but are empty: see the contract's debug_hints"],
  INTERNAL_ERROR: ["read session/supervisor.log and notes.txt; report it if it repeats"],
};

/** Beyond this, an errorInfo file is cut in its middle (its head and tail kept). */
const ERROR_INFO_MAX_BYTES = 256 * 1024;

/**
 * Copy session/errors/*.txt (the Tcl errorInfo the queue processor writes on TCL_ERROR and
 * SCRIPT_EXIT) into the bundle at the same relative path, so the ack's pointer works in both.
 * Returns the bundle path of the failing request's errorInfo, or null when it has none.
 */
function copyErrorInfos(
  paths: RunPaths,
  temp: string,
  failedId: string | undefined,
): string | null {
  const from = join(paths.session, "errors");
  let names: string[];
  try {
    names = readdirSync(from).filter((n) => n.endsWith(".txt") && !n.includes(".tw-tmp-"));
  } catch {
    return null;
  }
  if (names.length === 0) return null;
  mkdirSync(join(temp, "session", "errors"), { recursive: true });
  for (const name of names) {
    const text = readFileSync(join(from, name));
    const kept =
      text.length <= ERROR_INFO_MAX_BYTES
        ? text
        : Buffer.concat([
            text.subarray(0, ERROR_INFO_MAX_BYTES / 2),
            Buffer.from(`\n… ${text.length - ERROR_INFO_MAX_BYTES} bytes cut …\n`),
            text.subarray(text.length - ERROR_INFO_MAX_BYTES / 2),
          ]);
    writeFileSync(join(temp, "session", "errors", name), kept);
  }
  const mine = failedId !== undefined ? `${failedId}.txt` : undefined;
  return mine !== undefined && names.includes(mine) ? `session/errors/${mine}` : null;
}

/** The tails of the session's logs and its state, when a session was started; else null. */
function copySessionLogs(paths: RunPaths, temp: string, io: ProtocolIo): string | null {
  if (!existsSync(paths.boot)) return null;
  mkdirSync(join(temp, "session"), { recursive: true });
  const logs: [string, string][] = [
    [paths.supervisorLog, "supervisor.log.tail"],
    [join(paths.session, "processor.log"), "processor.log.tail"],
    [paths.toolStdout, "innovus.stdout.tail"],
    [paths.toolStderr, "innovus.stderr.tail"],
    [join(paths.session, "sidecar.log"), "sidecar.log.tail"],
    [join(paths.session, "audit.jsonl"), "audit.jsonl.tail"],
  ];
  for (const [src, name] of logs) {
    const t = tailOf(src, 8000);
    if (t !== undefined) io.writeFile(join(temp, "session", name), t);
  }
  io.writeFile(
    join(temp, "session", "state.json"),
    `${JSON.stringify(
      {
        schema_version: SCHEMA_VERSION,
        last_heartbeat: tailOf(paths.heartbeat, 200)?.trim() ?? null,
        ready: tailOf(paths.ready, 2000) ? JSON.parse(readFileSync(paths.ready, "utf8")) : null,
      },
      null,
      2,
    )}\n`,
  );
  return "session";
}

/** Where a finer cause has its own advice, it replaces the error_type's (a scheduler's ending is not a crash). */
const DETAIL_ACTIONS: Record<string, string[]> = {
  SCHEDULER_CANCELLED: [
    "the scheduler cancelled the job (scancel by a user or an admin), not the tool: see runtime.scheduler in job_manifest.json and SCHEDULER_END in the timeline, then run the job again",
  ],
  PREEMPTED: [
    "a higher-priority job preempted this one, not a tool fault: run it again, or in a partition without preemption",
  ],
  NODE_FAIL: [
    "the node failed under the job, not the tool: run it again (another node); tell the cluster's admin if it repeats",
  ],
  TIME_LIMIT: [
    "the job reached its scheduler time limit: raise --time (skillpilot.slurm.time) or split the work",
  ],
  QUEUE_WAIT_TIMEOUT: [
    "the job waited in the queue longer than skillpilot.queue_wait_timeout_ms: choose another partition or raise the limit",
  ],
  RUN_DIR_FS_UNSUPPORTED: [
    "run from a directory whose file system has hard links and rename over a file (the protocol's atomic writes need both)",
  ],
  POLICY_REFUSED: [
    "the contract's policy refused a source or exec: the AUDIT events in the timeline (session/audit.jsonl.tail here) name it",
  ],
};

/**
 * debug_bundle/ (seed §11): built in a temp folder beside the run's files and renamed in whole,
 * so a reader never sees half a bundle.
 */
export function writeDebugBundle(options: {
  paths: RunPaths;
  jobId: string;
  failure: JobFailure;
  contractPath?: string;
  contractHints?: string[];
  notes?: string[];
  io: ProtocolIo;
}): string {
  const { paths, io, failure } = options;
  const final = paths.debugBundle;
  const temp = tempPathFor(final);
  try {
    mkdirSync(temp);
    copyFileSync(paths.manifest, join(temp, "job_manifest.json"));
    copyFileSync(paths.timeline, join(temp, "job_timeline.jsonl"));
    mkdirSync(join(temp, "ack"));
    for (const name of readdirSync(paths.ack)) {
      if (name.endsWith(".json") && !name.includes(".tw-tmp-"))
        copyFileSync(join(paths.ack, name), join(temp, "ack", name));
    }
    const fail = lastFailAck(paths);
    const sessionLogs = copySessionLogs(paths, temp, io);
    const errorInfo = copyErrorInfos(paths, temp, fail?.ack.request_id);
    io.writeFile(
      join(temp, "reports_inventory.json"),
      `${JSON.stringify({ schema_version: SCHEMA_VERSION, files: inventoryReports(paths.runDir) }, null, 2)}\n`,
    );
    let contract: string | null = null;
    if (options.contractPath && existsSync(options.contractPath)) {
      copyFileSync(options.contractPath, join(temp, "contract.yaml"));
      contract = "contract.yaml";
    }
    const notes = [
      `error_type: ${failure.error_type}${failure.detail_code ? ` (${failure.detail_code})` : ""}`,
      `message: ${failure.message}`,
      ...(options.contractPath ? [`contract: ${options.contractPath}`] : []),
      ...(options.notes ?? []),
    ];
    io.writeFile(join(temp, "notes.txt"), `${notes.join("\n")}\n`);
    const index: DebugIndex = {
      schema_version: SCHEMA_VERSION,
      job_id: options.jobId,
      error_type: failure.error_type,
      ...(failure.detail_code ? { detail_code: failure.detail_code } : {}),
      summary: `${failure.error_type}: ${failure.message}`.slice(0, 400),
      pointers: {
        manifest: "job_manifest.json",
        timeline: "job_timeline.jsonl",
        last_fail_ack: fail ? `ack/${fail.name}` : null,
        session_logs: sessionLogs,
        reports_inventory: "reports_inventory.json",
        contract,
        error_info: errorInfo,
      },
      next_actions: [
        ...(errorInfo
          ? [`read ${errorInfo} in this bundle: the failing request's Tcl errorInfo, every frame`]
          : []),
        ...(DETAIL_ACTIONS[failure.detail_code ?? ""] ?? NEXT_ACTIONS[failure.error_type]),
        ...(options.contractHints ?? []).map((h) => `hint: ${h}`),
      ],
    };
    io.writeFile(join(temp, "index.json"), `${JSON.stringify(index, null, 2)}\n`);
    renameSync(temp, final);
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    throw fromSystemError(error, `writing ${final}`);
  }
  return final;
}
