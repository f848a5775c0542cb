/**
 * The runner's side of the file protocol (seed §5): a request enters queue/ and the supervisor's
 * own FAIL ack enters ack/ by the same rule — written under a temp name, then hard-linked to its
 * final name, which fails if the name exists, so no request or ack is ever overwritten.
 */
import {
  existsSync,
  type FSWatcher,
  linkSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  watch,
} from "node:fs";
import { join } from "node:path";
import type { Clock } from "../core/index.ts";
import { ErrorCode, errnoCode, isTempName, TimewarpError, tempPathFor } from "../core/index.ts";
import { type Ack, AckSchema, type RequestPolicy, SCHEMA_VERSION } from "./protocol.ts";
import type { ProtocolIo, RunPaths } from "./run-dir.ts";

/** ack/<id>.json when present and valid (an ack is published whole, so a bad one is foreign). */
export function readAck(path: string): Ack | undefined {
  try {
    return AckSchema.parse(JSON.parse(readFileSync(path, "utf8")));
  } catch {
    return undefined;
  }
}

/** Write `text` to `final` through a temp name and a hard link; false when `final` exists. */
function publishOnce(io: ProtocolIo, final: string, text: string): boolean {
  const temp = tempPathFor(final);
  io.writeFile(temp, text);
  try {
    linkSync(temp, final);
    return true;
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
    return false;
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // gone already
    }
  }
}

/** Whether a request id was ever used in this run: its ack, or its request under any name. */
function requestIdUsed(paths: RunPaths, requestId: string): boolean {
  return (
    existsSync(join(paths.ack, `${requestId}.json`)) ||
    readdirSync(paths.queue).some(
      (n) => n === `${requestId}.json` || n.startsWith(`${requestId}.json.`),
    )
  );
}

export interface RequestFile {
  requestId: string;
  jobId: string;
  script: string;
  timeoutMs: number;
  createdAt: string;
  /** Optional: what the queue processor refuses while the script runs. */
  policy?: RequestPolicy;
}

/**
 * Put a SOURCE_TCL request in queue/. REQUEST_DUPLICATE when the id was used before in this run
 * (`usedIds` holds the ids this runner submitted, whose files the tool may have moved already).
 */
export function submitRequest(
  paths: RunPaths,
  io: ProtocolIo,
  usedIds: Set<string>,
  request: RequestFile,
): void {
  const { requestId } = request;
  if (usedIds.has(requestId) || requestIdUsed(paths, requestId)) {
    throw new TimewarpError(
      ErrorCode.REQUEST_DUPLICATE,
      `request id ${requestId} was used already in ${paths.queue}; a request file is never overwritten (seed §5.1.4)`,
      { data: { request_id: requestId } },
    );
  }
  usedIds.add(requestId);
  const queuePath = join(paths.queue, `${requestId}.json`);
  const body = {
    schema_version: SCHEMA_VERSION,
    request_id: requestId,
    job_id: request.jobId,
    action: "SOURCE_TCL",
    script: request.script,
    timeout_s: request.timeoutMs / 1000,
    created_at: request.createdAt,
    ...(request.policy ? { policy: request.policy } : {}),
  };
  if (!publishOnce(io, queuePath, `${JSON.stringify(body, null, 2)}\n`)) {
    throw new TimewarpError(ErrorCode.REQUEST_DUPLICATE, `${queuePath} exists already`, {
      data: { request_id: requestId },
    });
  }
}

export interface SupervisorFailure {
  error_type: Ack["error_type"];
  detail_code: string;
  message: string;
}

/**
 * The supervisor's FAIL ack for a request the tool could not answer. When the tool's own ack
 * landed first, that one stands and is returned: each request has exactly one ack.
 */
export function publishSupervisorAck(
  paths: RunPaths,
  io: ProtocolIo,
  clock: Clock,
  ids: { requestId: string; jobId: string; startedAt: string },
  failure: SupervisorFailure,
): Ack {
  const final = join(paths.ack, `${ids.requestId}.json`);
  const ack: Ack = {
    schema_version: SCHEMA_VERSION,
    request_id: ids.requestId,
    job_id: ids.jobId,
    status: "FAIL",
    error_type: failure.error_type,
    detail_code: failure.detail_code,
    message: failure.message,
    started_at: ids.startedAt,
    finished_at: clock.now().toISOString(),
    evidence_paths: ["session/supervisor.log", "session/tool.stderr.log"],
    by: "supervisor",
  };
  if (publishOnce(io, final, `${JSON.stringify(ack, null, 2)}\n`)) return ack;
  return readAck(final) ?? ack;
}

/**
 * Remove temp names (`.…tw-tmp-…`) from ack/, queue/ and session/. Only safe once no writer is
 * left: a tool killed between an ack's hard link and the unlink of its temp name leaves one.
 */
export function sweepTempFiles(paths: RunPaths): void {
  for (const dir of [paths.ack, paths.queue, paths.session]) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (!isTempName(name)) continue;
      try {
        unlinkSync(join(dir, name));
      } catch {
        // gone already
      }
    }
  }
}

/**
 * What wakes the runner while it waits for an ack: fs.watch on ack/ (when `useWatch`), anything
 * that calls `wake()` (the tool's exit, an interrupt), and at the latest the nap's own timer.
 */
export interface AckWaker {
  nap(ms: number): Promise<void>;
  wake(): void;
  close(): void;
}

export function ackWaker(ackDir: string, useWatch: boolean): AckWaker {
  let wakeUp: (() => void) | undefined;
  let watcher: FSWatcher | undefined;
  if (useWatch) {
    try {
      watcher = watch(ackDir, () => wakeUp?.());
      watcher.on("error", () => {});
    } catch {
      watcher = undefined;
    }
  }
  return {
    nap: (ms) =>
      new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          wakeUp = undefined;
          resolve();
        }, ms);
        wakeUp = () => {
          clearTimeout(t);
          wakeUp = undefined;
          resolve();
        };
      }),
    wake: () => wakeUp?.(),
    close() {
      watcher?.close();
      watcher = undefined;
    },
  };
}
