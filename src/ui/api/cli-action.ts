import { spawn } from "node:child_process";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import type { UiContext } from "../context.ts";

/**
 * A state-changing action (revert, travel, return, rewind) run as the CLI itself:
 * `timewarp -C ROOT <args> --json` in a child process. Three reasons, each a promise the
 * dashboard makes: the result is the CLI's document by construction, not a copy of how the
 * CLI builds it; the server's event loop stays free while a travel restores a large tree, so
 * pages, the event stream and the action's own progress (the child writes the progress channel
 * like any command) keep being served; and the work's memory is the child's, not the server's.
 */
export function runCliAction(ctx: UiContext, args: string[]): Promise<unknown> {
  const [command, ...prefix] = ctx.cliCommand;
  return new Promise((resolve, reject) => {
    const child = spawn(command as string, [...prefix, "-C", ctx.root, ...args, "--json"], {
      cwd: ctx.root,
      stdio: ["ignore", "pipe", "pipe"],
      // a terminal's colour settings mean nothing in a JSON document
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", (error) =>
      reject(
        new TimewarpError(ErrorCode.INTERNAL, `could not start the CLI: ${error.message}`, {
          cause: error,
        }),
      ),
    );
    // "close", not "exit": the last write may still be in the pipe at exit
    child.on("close", (code, signal) => {
      try {
        resolve(cliResult(Buffer.concat(out).toString("utf8"), code, signal));
      } catch (error) {
        reject(error);
      }
    });
  });
}

/** The CLI's one JSON document: its result on exit 0, its error (code and data kept) otherwise. */
function cliResult(stdout: string, code: number | null, signal: string | null): unknown {
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    const how = signal === null ? `exited with ${code}` : `was killed by ${signal}`;
    throw new TimewarpError(ErrorCode.INTERNAL, `the CLI ${how} without a JSON document`);
  }
  const error = (doc as { error?: { code?: unknown; message?: unknown; data?: unknown } }).error;
  if (code === 0 || error === undefined || error === null) return doc;
  const known = Object.values(ErrorCode).includes(error.code as ErrorCode);
  throw new TimewarpError(
    known ? (error.code as ErrorCode) : ErrorCode.INTERNAL,
    typeof error.message === "string" ? error.message : "the CLI failed",
    error.data === undefined ? {} : { data: error.data as Record<string, unknown> },
  );
}
