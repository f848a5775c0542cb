import { join } from "node:path";
import { DATA_DIR } from "../core/index.ts";

/**
 * The hook server's file protocol, shared by the client (the bin, before it loads the CLI) and
 * the server (the watch daemon). Files, not a socket: a client then needs only `node:fs`
 * (loading `node:net` and running a socket stream costs a hook ~5 ms), and a request is claimed
 * by rename, so it runs at most once, as SkillPilot's requests do.
 *
 * In `.timewarp/watch/hooks/`:
 *   `server.json`      the server's record (`HookServerRecord`); present while it serves.
 *   `req-<id>.json`    a request, renamed in whole: a `HookRequestHeader` JSON line, then the
 *                      payload bytes (the hook's stdin).
 *   `run-<id>.json`    the same request once the server claimed it (renamed; then removed).
 *   `res-<id>.json`    the reply (`HookReply`), renamed in whole; the client reads and removes it.
 *   `out-<id>`, `err-<id>`  with `reply: "files"`: the hook's stdout and stderr, each written
 *                      only when not empty and before the reply, which then holds only
 *                      `{"exitCode":N}` (or `{"declined":…}`); the client removes them with it.
 *
 * A client that sees no reply in time takes its request back by renaming it away: if that
 * works the server never had it, and the client runs the hook itself; if the request is gone,
 * the server claimed it, and the client waits for the reply.
 *
 * Two clients speak it: the bin's (Node, `hook-client.ts`) and `bin/timewarp-hook` (a POSIX
 * shell script, which spares a hook Node's start; it asks for `reply: "files"` because it has no
 * JSON parser, and reads the record's first two fields by their place: `protocol`, then `pid`).
 *
 * A request may also carry a CLI command instead of a hook (`command`, with `event: "command"`):
 * `bin/timewarp`, the shell launcher of the `timewarp` command, sends the commands
 * `servedCommandKind` names and prints the answer as the CLI in its own process would have.
 * Protocol 4 added them: a server of protocol 3 would have run one as an unknown hook. A write
 * command (`live: true`) differs in two ways:
 *   `err-<id>`         is created (new, 0600) when the worker starts the command, before it may
 *                      write anything, and takes its stderr as it is written: the client tails
 *                      it (progress). The reply then carries no stderr of its own.
 *   `{"interrupted":…}` is the reply when the worker, once it started the command, stops before
 *                      answering (it crashed; the daemon stopping waited `COMMAND_STOP_WAIT_MS`
 *                      for it in vain): the client must not run it again. A `declined` reply still means the command never started.
 */
export const HOOK_PROTOCOL = 4;

export interface HookServerRecord {
  protocol: number;
  pid: number;
  started_at: string;
  /** Hooks answered so far (rewritten after each). */
  served: number;
  /**
   * Per event: hooks answered, and the time from claiming a request to writing its reply
   * (queueing behind an earlier hook included) over the last `HOOK_TIMING_WINDOW` of them.
   */
  timings?: Record<string, HookEventTimings>;
}

export interface HookEventTimings {
  count: number;
  p50_ms: number;
  p95_ms: number;
}

/**
 * How long the server lets one hook run before it abandons it (restarts the worker) and answers
 * with a failure.
 */
export const HOOK_RUN_LIMIT_MS = 120_000;

/**
 * How long a client waits for the reply to a request the server claimed: past the server's own
 * limit, so only a server that can no longer write replies makes a client give up (a failure,
 * exit 0). `bin/timewarp-hook` waits the same 130 s by the clock. The agents' hook timeouts are set
 * above it (`agent-wiring.ts`).
 */
export const HOOK_REPLY_WAIT_MS = 130_000;

/**
 * How long a stopping daemon (`timewarp watch stop`, SIGTERM, SIGINT, SIGHUP) lets a write
 * command its worker started run on before it stops the worker anyway: the client then gets
 * `{"interrupted":…}` (COMMAND_LOST) and a travel or return cut short is `recover`'s, as after a
 * kill. Generous: a return at 100k files takes seconds, and stopping it half-way only leaves work.
 */
export const COMMAND_STOP_WAIT_MS = 5 * 60_000;

/** How many recent answers per event the server's percentiles cover. */
export const HOOK_TIMING_WINDOW = 200;

export interface HookRequestHeader {
  protocol: number;
  event: string;
  agent?: string;
  json?: boolean;
  /** `--cwd` as given, resolved against `cwd`. */
  root?: string;
  /** The client's working directory. */
  cwd: string;
  /**
   * The client's parent pid: the process that ran the hook command (the agent, or the shell it
   * ran it through). A session start records the agent's pid from it; without it, none.
   */
  ppid?: number;
  /**
   * The client's environment, but for secret-looking names (API keys, tokens): the hook runs
   * under it, as it would in its own process.
   */
  env: Record<string, string>;
  /** `files`: the answer's output as files of its own (`out-<id>`, `err-<id>`), not in the JSON. */
  reply?: "json" | "files";
  /**
   * A CLI command to run instead of a hook (`event` is then `"command"`): its arguments as the
   * user typed them after `timewarp`. Only read-only ones are run (`isServedCommand`); a failure
   * before the answer declines, so the client runs it itself (a read-only command run twice
   * changes nothing).
   */
  command?: string[];
  /** With `command`: whether the client's stdout and stderr are terminals (colours, progress). */
  tty?: { stdout: boolean; stderr: boolean };
  /**
   * With a write command (and `reply: "files"`): its stderr goes to `err-<id>` as it is written,
   * and once started it is never declined (see the module comment).
   */
  live?: boolean;
}

/** The `event` of a request that carries a `command`. */
export const COMMAND_EVENT = "command";

/** What a hook printed and how it exited. */
export interface HookAnswer {
  stdout: string;
  stderr: string;
  exitCode: number;
  declined?: undefined;
  interrupted?: undefined;
}

/**
 * A hook's answer; or the server's refusal to run it (then the client runs it itself); or, for a
 * write command only, word that it started and was cut short (then the client must not).
 */
export type HookReply =
  | HookAnswer
  | { declined: string; interrupted?: undefined }
  | { interrupted: string; declined?: undefined };

export interface HookServerPaths {
  dir: string;
  record: string;
}

/** Where the hook server of the workspace at `root` keeps its files (beside the watch daemon's). */
export function hookServerPaths(root: string): HookServerPaths {
  const dir = join(root, DATA_DIR, "watch", "hooks");
  return { dir, record: join(dir, "server.json") };
}

/** The request name of a request id; the claimed and reply names derive from it. */
export const requestFile = (id: string): string => `req-${id}.json`;
export const claimedFile = (id: string): string => `run-${id}.json`;
export const replyFile = (id: string): string => `res-${id}.json`;
export const stdoutFile = (id: string): string => `out-${id}`;
export const stderrFile = (id: string): string => `err-${id}`;
/** The id of a request file name, or null for any other name. */
export function requestId(name: string): string | null {
  return name.startsWith("req-") && name.endsWith(".json") ? name.slice(4, -5) : null;
}
