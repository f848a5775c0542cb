import {
  appendEvent,
  type Clock,
  ensureStoreIgnored,
  type Random,
  workspacePaths,
} from "../core/index.ts";
import {
  HOOK_EVENTS,
  type HookAgent,
  type HookEvent,
  isHookAgent,
  isHookEvent,
} from "./hook-events.ts";
import { formatHookResponse, type HookOutcome, type HookResponse } from "./hook-outcome.ts";
import { findWorkspaceRoot, resolveRoot } from "./hook-root.ts";
import { detectAgent, type HookPayload, parseHookPayload } from "./payload.ts";

/** What every event handler receives. */
export interface HookContext {
  root: string;
  event: HookEvent;
  payload: HookPayload;
  agent: HookAgent;
  clock: Clock;
  random: Random;
  /**
   * Work the hook's answer need not wait for (a session start's cleanup): run before `runHook`
   * returns, or after the answer when the caller asked for `deferAfterAnswer`.
   */
  later(task: () => void | Promise<void>): void;
  /** Whether `later` tasks run after the answer (`deferAfterAnswer`) rather than before it. */
  answersFirst: boolean;
  /** The pid of the process that ran the hook command (see `RunHookOptions.callerPid`). */
  callerPid: number | null;
  /**
   * Record a failure that does not fail the hook (the memory offer): a `hook.failed` event, as
   * for the hook's own failures, while the hook answers as it would have.
   */
  reportFailure(message: string): void;
}

export interface RunHookOptions {
  /**
   * How to run `timewarp watch run` for a workspace (the CLI passes its own command line): the
   * session-start, post-tool-use and user-prompt-submit hooks then start the watch daemon when none runs and the
   * config's `watch` is on. Without it (library use) no daemon is started.
   */
  watchCommand?: (root: string) => string[];
  /** One of HOOK_EVENTS; anything else is reported (exit 0), never a block. */
  event: string;
  /** The raw stdin text. */
  input: string;
  /** An explicit workspace root (`--cwd`); otherwise found from the payload's `cwd`. */
  root?: string;
  /**
   * The caller's working directory, where a payload without `cwd` is taken to run (default
   * `process.cwd()`; the daemon's hook worker passes its client's, and cannot chdir).
   */
  cwd?: string;
  /** Who calls (`--agent`, one of HOOK_AGENTS); otherwise guessed from the payload. */
  agent?: string;
  /** Print the CLI's one JSON document instead of the agent's protocol. */
  json?: boolean;
  /**
   * The pid of the process that ran the hook command (the agent, or a shell it ran the command
   * through): a session start binds the session's life to the agent found from it. Default
   * `process.ppid` (a hook in its own process); the hook server's worker passes its client's
   * parent (null when the client did not say: the daemon's own parent is no agent).
   */
  callerPid?: number | null;
  /**
   * Leave the work an answer need not wait for to the caller, as `HookRun.after`, to run once
   * the answer is out (the hook server's worker: the agent goes on meanwhile). A process hook
   * gains nothing by it (the agent waits for the process to exit) and leaves it unset.
   */
  deferAfterAnswer?: boolean;
  clock: Clock;
  random: Random;
}

export interface HookRun extends HookResponse {
  outcome: HookOutcome;
  root: string;
  /**
   * With `deferAfterAnswer`: the work left, to run after the answer. It never throws: a failure
   * is recorded as a `hook.failed` event, since the answer has gone.
   */
  after?: () => Promise<void>;
}

/**
 * The hook entry: parse the payload, run the event's handler, and answer in the agent's protocol.
 * This is the process boundary where errors are handled once: an internal failure (bad payload,
 * full disk, a bug) becomes exit 0 with a message on stderr and a `hook.failed` event, never a
 * block. Handlers and the capabilities they call are loaded lazily, per event, so a hook process
 * pays only for what its event needs.
 *
 * @example
 *   const run = await runHook({ event: "post-tool-use", input: stdinText, clock: systemClock, random: systemRandom });
 *   process.stdout.write(run.stdout); process.stderr.write(run.stderr); process.exitCode = run.exitCode;
 */
export async function runHook(options: RunHookOptions): Promise<HookRun> {
  const fallbackRoot = options.root ?? findWorkspaceRoot(options.cwd ?? process.cwd());
  const asked = isHookAgent(options.agent ?? "") ? (options.agent as HookAgent) : undefined;
  if (!isHookEvent(options.event)) {
    return finish(options, fallbackRoot, asked ?? "claude-code", {
      kind: "failed",
      summary: "unknown event",
      message: `unknown hook event ${JSON.stringify(options.event)}: expected one of ${HOOK_EVENTS.join(", ")}`,
    });
  }
  const event = options.event;
  const parsed = parseHookPayload(options.input, event);
  if (!parsed.ok) {
    const message = `invalid ${event} payload: ${parsed.issues.join("; ")}`;
    return finish(options, fallbackRoot, asked ?? "claude-code", {
      kind: "failed",
      summary: "payload rejected",
      message,
    });
  }
  const payload = parsed.value;
  const root =
    options.root ?? resolveRoot(payload.cwd ?? options.cwd ?? process.cwd(), process.env);
  const agent = asked ?? detectAgent(payload);
  const tasks: (() => void | Promise<void>)[] = [];
  const ctx: HookContext = {
    root,
    event,
    payload,
    agent,
    clock: options.clock,
    random: options.random,
    later: (task) => tasks.push(task),
    answersFirst: options.deferAfterAnswer === true,
    callerPid: options.callerPid === undefined ? process.ppid : options.callerPid,
    reportFailure: (message) => recordFailure(root, options, agent, message),
  };
  let outcome: HookOutcome;
  try {
    outcome = await dispatch(ctx);
  } catch (error) {
    outcome = {
      kind: "failed",
      summary: "internal failure",
      message: error instanceof Error ? error.message : String(error),
    };
  }
  if (
    options.watchCommand !== undefined &&
    (event === "session-start" || event === "post-tool-use" || event === "user-prompt-submit")
  ) {
    const command = options.watchCommand;
    const { ensureWatchDaemon } = await import("../store/index.ts");
    ensureWatchDaemon(root, () => command(root));
  }
  if (options.deferAfterAnswer === true && tasks.length > 0) {
    const after = async () => {
      for (const task of tasks) {
        try {
          await task();
        } catch (error) {
          recordFailure(
            root,
            options,
            agent,
            error instanceof Error ? error.message : String(error),
          );
        }
      }
    };
    return { ...finish(options, root, agent, outcome), after };
  }
  try {
    for (const task of tasks) await task();
  } catch (error) {
    outcome = {
      kind: "failed",
      summary: "internal failure",
      message: error instanceof Error ? error.message : String(error),
    };
  }
  return finish(options, root, agent, outcome);
}

async function dispatch(ctx: HookContext): Promise<HookOutcome> {
  switch (ctx.event) {
    case "session-start":
      return (await import("./on-session-start.ts")).onSessionStart(ctx);
    case "pre-tool-use":
      return (await import("./on-pre-tool-use.ts")).onPreToolUse(ctx);
    case "post-tool-use":
      return (await import("./on-post-tool-use.ts")).onPostToolUse(ctx);
    case "session-end":
      return (await import("./on-session-end.ts")).onSessionEnd(ctx);
    case "user-prompt-submit":
      return (await import("./on-user-prompt.ts")).onUserPrompt(ctx);
  }
}

function finish(
  options: RunHookOptions,
  root: string,
  agent: HookAgent,
  outcome: HookOutcome,
): HookRun {
  ensureStoreIgnored(root); // the store a hook made or found stays out of git (issue 16, class 9)
  if (outcome.kind === "failed") recordFailure(root, options, agent, outcome.message);
  const response = formatHookResponse(outcome, {
    agent,
    // An unknown event only ever fails, and a failure's form does not depend on the event.
    event: isHookEvent(options.event) ? options.event : "pre-tool-use",
    json: options.json === true,
  });
  return { ...response, outcome, root };
}

function recordFailure(
  root: string,
  options: RunHookOptions,
  agent: HookAgent,
  message: string,
): void {
  try {
    // `agent`: `timewarp doctor` lists each installed agent's recent failures.
    appendEvent(
      workspacePaths(root).events,
      "hook.failed",
      { event: options.event, agent, message },
      options.clock,
    );
  } catch {
    // The bus itself is unwritable (disk full, read-only): stderr already carries the message.
  }
}
