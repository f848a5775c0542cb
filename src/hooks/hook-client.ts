import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { isProcessAlive } from "../core/index.ts";
import type { HookEvent } from "./hook-events.ts";
import { formatHookResponse } from "./hook-outcome.ts";
import {
  claimedFile,
  HOOK_PROTOCOL,
  HOOK_REPLY_WAIT_MS,
  type HookReply,
  type HookRequestHeader,
  type HookServerRecord,
  hookServerPaths,
  replyFile,
  requestFile,
} from "./hook-protocol.ts";
import { resolveRoot } from "./hook-root.ts";

/** A plain hook call's arguments (`hook <event> [--agent A] [--json] [-C DIR]`). */
export interface HookArgs {
  event: string | undefined;
  agent?: string | undefined;
  json?: boolean;
  cwd?: string;
}

export interface HookClientOptions {
  args: HookArgs;
  /** The caller's working directory and environment (the hook runs under both). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The payload, or how to read it (the hook's stdin), called only once a server is there. */
  input: Buffer | string | (() => Buffer);
  /** How long a server may take to claim a request before the caller runs it (default 1 s). */
  claimTimeoutMs?: number;
  /**
   * How long to wait for the reply at all (default `HOOK_REPLY_WAIT_MS`, 130 s: past the server's
   * own 2 minutes for a hook, so only a server that can no longer write replies gets here).
   * Then: a failure, exit 0.
   */
  replyTimeoutMs?: number;
}

export type HookClientResult =
  | { served: true; stdout: string; stderr: string; exitCode: number }
  /** Nothing ran; `input` is the payload when it was read (the caller's stdin is consumed). */
  | { served: false; reason: string; input?: Buffer };

/**
 * Variables a hook never needs and a request file should not carry (the agent's API keys and
 * tokens): left out of the environment the hook runs under. The files are private (0600) and
 * live for milliseconds, but a key written to disk is a key at risk.
 */
const SECRET_NAME = /SECRET|TOKEN|PASSW(OR)?D|CREDENTIAL|API_?KEY|PRIVATE_?KEY|AUTH/i;

/** Fault injection for tests (TIMEWARP_CRASH_AT, …) kills or stalls its own process. */
const FAULT_POINT_ENV = /^TIMEWARP_[A-Z]+_AT$/;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Hand a hook call to the workspace's hook server (the watch daemon's worker, where the code is
 * loaded and warm) instead of starting the CLI: what the bin tries first for `timewarp hook`.
 * Synchronous: writes the request, then polls for the reply (see `hook-protocol.ts`).
 *
 * `served: false` means the hook did not run; the caller runs it itself (with `input` when the
 * payload was already read). Once the server claimed the request the hook counts as handed
 * over: a server that dies before replying yields a failure reply (exit 0 and a message), never
 * a second run. Skipped with `TIMEWARP_HOOK_SERVER=0`, `TIMEWARP_WATCH=0`, a fault-injection
 * variable, or no live server for the workspace found from `--cwd`, else the agent's project
 * directory or the working directory (the hook's own rule, minus the payload's `cwd`: the
 * server resolves the root again from the payload).
 */
export function callHookServer(options: HookClientOptions): HookClientResult {
  const { env } = options;
  if (env.TIMEWARP_HOOK_SERVER === "0") return { served: false, reason: "TIMEWARP_HOOK_SERVER=0" };
  if (env.TIMEWARP_WATCH === "0") return { served: false, reason: "TIMEWARP_WATCH=0" };
  const fault = Object.keys(env).find((k) => FAULT_POINT_ENV.test(k));
  if (fault !== undefined) return { served: false, reason: `${fault} is set` };
  const explicitRoot =
    options.args.cwd !== undefined ? resolve(options.cwd, options.args.cwd) : undefined;
  const paths = hookServerPaths(explicitRoot ?? resolveRoot(options.cwd, env));
  const server = liveServer(paths.record);
  if (server === null) return { served: false, reason: "no hook server runs" };

  const raw = typeof options.input === "function" ? options.input() : options.input;
  const input = typeof raw === "string" ? Buffer.from(raw, "utf8") : raw;
  const header: HookRequestHeader = {
    protocol: HOOK_PROTOCOL,
    event: options.args.event ?? "",
    ...(options.args.agent !== undefined ? { agent: options.args.agent } : {}),
    ...(options.args.json === true ? { json: true } : {}),
    ...(explicitRoot !== undefined ? { root: explicitRoot } : {}),
    cwd: options.cwd,
    // who ran the hook command: the session start binds the session to the agent found from it
    ppid: process.ppid,
    env: Object.fromEntries(
      Object.entries(env).filter(
        (e): e is [string, string] => e[1] !== undefined && !SECRET_NAME.test(e[0]),
      ),
    ),
  };
  const id = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const request = join(paths.dir, requestFile(id));
  const temp = join(paths.dir, `.${requestFile(id)}.tmp`);
  try {
    // By hand, not core's writeFileAtomic: its temp names load node:crypto (~4 ms of a hook).
    writeFileSync(temp, Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), input]), {
      mode: 0o600,
    });
    renameSync(temp, request);
  } catch (error) {
    rmSync(temp, { force: true });
    return { served: false, reason: `cannot write the request: ${String(error)}`, input };
  }

  const reply = join(paths.dir, replyFile(id));
  // Date.now, not performance.now: loading perf_hooks costs the client ~1.5 ms.
  const sentAt = Date.now();
  const claimBy = sentAt + (options.claimTimeoutMs ?? 1_000);
  let claimed = false;
  let nextLivenessCheck = 0;
  let waitMs = 0.05;
  for (;;) {
    let text: string | undefined;
    // A stat that does not throw while the reply is not there: an ENOENT error per poll costs more.
    if (statSync(reply, { throwIfNoEntry: false }) !== undefined) {
      try {
        text = readFileSync(reply, "utf8");
      } catch (error) {
        return failure(options.args, `its reply is unreadable: ${String(error)}`);
      }
    }
    if (text !== undefined) {
      rmSync(reply, { force: true });
      let answer: HookReply;
      try {
        answer = JSON.parse(text) as HookReply;
      } catch {
        return failure(options.args, "its reply is not JSON");
      }
      if (answer.declined !== undefined) return { served: false, reason: answer.declined, input };
      // (only a write command, which this client never sends, is answered so)
      if (answer.interrupted !== undefined) return failure(options.args, answer.interrupted);
      return { served: true, ...answer };
    }
    const now = Date.now();
    // The server claims by renaming the request away: from then on its reply time and its
    // liveness count, not the claim time (a slow claim limit must not delay noticing a death).
    if (!claimed && statSync(request, { throwIfNoEntry: false }) === undefined) claimed = true;
    if (!claimed && now >= claimBy) {
      // Take the request back: if it is still there, the server never saw it.
      try {
        renameSync(request, join(paths.dir, `.${claimedFile(id)}.retracted`));
        rmSync(join(paths.dir, `.${claimedFile(id)}.retracted`), { force: true });
        return { served: false, reason: "the hook server did not take the request", input };
      } catch {
        claimed = true; // claimed: it runs, wait for its reply
      }
    }
    if (claimed && now - sentAt >= (options.replyTimeoutMs ?? HOOK_REPLY_WAIT_MS))
      return failure(options.args, "no reply within 2 minutes");
    if (claimed && now >= nextLivenessCheck) {
      nextLivenessCheck = now + 1_000;
      if (!isProcessAlive(server.pid))
        return failure(options.args, `its process ${server.pid} is gone`);
    }
    Atomics.wait(pause, 0, 0, waitMs);
    // Most hooks answer within a few ms: poll finely at first, then back off.
    waitMs = Math.min(waitMs * 2, now - sentAt < 200 ? 0.25 : 2);
  }
}

/** A hook the server claimed but never answered: a failure in the hook's own form, exit 0. */
function failure(args: HookArgs, why: string): HookClientResult {
  const response = formatHookResponse(
    {
      kind: "failed",
      summary: "internal failure",
      message: `the daemon's hook server did not finish this hook (${why})`,
    },
    // A failure's form depends only on --json (the event is echoed in it).
    { agent: "claude-code", event: (args.event ?? "") as HookEvent, json: args.json === true },
  );
  return { served: true, ...response };
}

/**
 * The record of the hook server serving the workspace at `root`, or null when none of this
 * protocol runs there.
 */
export function readHookServer(root: string): HookServerRecord | null {
  return liveServer(hookServerPaths(root).record);
}

/** The server's record when one of this protocol runs. */
function liveServer(record: string): HookServerRecord | null {
  let server: HookServerRecord;
  try {
    server = JSON.parse(readFileSync(record, "utf8")) as HookServerRecord;
  } catch {
    return null;
  }
  if (server.protocol !== HOOK_PROTOCOL || typeof server.pid !== "number") return null;
  return isProcessAlive(server.pid) ? server : null;
}
