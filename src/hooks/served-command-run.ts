import { closeSync, openSync, writeSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { HookAnswer, HookReply, HookRequestHeader } from "./hook-protocol.ts";

/**
 * Runs a CLI command in this thread as its own process would (the CLI's `runCapturedCommand`,
 * handed in by the CLI's entry: this folder does not import the CLI): the arguments after
 * `timewarp`, the client's working directory and terminals; its output and exit code. With
 * `stderr`, what the command writes there goes to it as it is written instead of into the
 * answer (whose `stderr` is then empty).
 */
export type CommandRunner = (request: {
  args: string[];
  cwd: string;
  tty: { stdout: boolean; stderr: boolean };
  stderr?: (text: string) => void;
}) => Promise<HookAnswer>;

/**
 * One command request in the worker, under the client's environment (the caller set it).
 *
 * A write command (`live`) opens its live stderr file (`stderrFile`, created new and private:
 * anything already there is not ours, and the command is declined) and says `started` before it
 * runs; from then on it is never declined, since its client would run it a second time: a bug
 * that escapes the CLI's own error handling is reported `interrupted`. A read-only command the
 * worker fails is declined, and its client runs it itself.
 */
export async function runServedCommand(options: {
  header: HookRequestHeader;
  stderrFile: string | undefined;
  runCommand: CommandRunner | undefined;
  started: () => void;
}): Promise<HookReply> {
  const { header, runCommand } = options;
  if (runCommand === undefined || header.command === undefined)
    return { declined: "this worker runs no commands" };
  const request = {
    args: header.command,
    cwd: header.cwd,
    tty: header.tty ?? { stdout: false, stderr: false },
  };
  if (header.live !== true) {
    try {
      return await runCommand(request);
    } catch (error) {
      // The CLI answers its own errors; reaching here is a bug: the client runs the command itself.
      return { declined: `the command failed in the worker: ${String(error)}` };
    }
  }
  if (options.stderrFile === undefined) return { declined: "a live command needs reply files" };
  let fd: number;
  try {
    fd = openSync(options.stderrFile, "wx", 0o600);
  } catch (error) {
    return { declined: `cannot create the command's stderr file: ${String(error)}` };
  }
  try {
    options.started();
    return await runCommand({ ...request, stderr: (text) => writeAll(fd, text) });
  } catch (error) {
    return { interrupted: `the command failed in the worker: ${String(error)}` };
  } finally {
    closeSync(fd);
  }
}

/** Write all of `text` to `fd` (a regular file: short writes only on a full disk, then lost). */
function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text);
  let at = 0;
  try {
    while (at < bytes.length) at += writeSync(fd, bytes, at);
  } catch {
    // Progress is best effort: the command's own result does not depend on it.
  }
}

let gc: (() => void) | undefined;
/** How long the worker must be idle after a write command before it collects (ms). */
const IDLE_MS = 250;

/**
 * A full garbage collection of this thread once it has been idle `IDLE_MS` after a write command:
 * a travel or snapshot at 10k files grows the worker's heap by tens of MiB that V8 keeps
 * committed though only ~13 MiB is live once the command ends (the restore code keeps no cache
 * of its own). Measured: the daemon's RSS after three travel/return cycles 175 MiB without, 158
 * MiB with. Idle, because the collection blocks the thread: a command right after must not wait
 * for it. `gc` is reached as jest's leak detector reaches it: the flag, then a context made after.
 * `begin` when a request arrives (a pending collection waits), `end` when it is done.
 */
export function createIdleCollector(): { begin(): void; end(wrote: boolean): void } {
  let busy = 0;
  let due = false;
  let timer: NodeJS.Timeout | undefined;
  return {
    begin() {
      busy++;
      clearTimeout(timer);
      timer = undefined;
    },
    end(wrote) {
      busy--;
      due ||= wrote;
      if (!due || busy > 0) return;
      timer = setTimeout(() => {
        timer = undefined;
        if (busy > 0) return;
        due = false;
        if (gc === undefined) {
          setFlagsFromString("--expose-gc");
          gc = runInNewContext("gc") as () => void;
        }
        gc();
      }, IDLE_MS);
      timer.unref();
    },
  };
}
