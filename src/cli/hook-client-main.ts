import { fstatSync, readSync } from "node:fs";
import { callHookServer } from "../hooks/index.ts";
import { parseHookArgv } from "./commands/hooks.ts";

/** What the bin hands on to the CLI's entry when the hook server did not run the hook. */
export interface HookServerTry {
  served: boolean;
  /** The payload when it was read from stdin already. */
  input?: Buffer;
}

/**
 * The bin's first try for `timewarp hook …`: hand the call to the workspace's hook server (see
 * `callHookServer`) and print its answer. `served: false` when the server did not run it; the
 * caller then runs the hook itself, with `input` when stdin was read. Bundled alone
 * (dist/bin/hook-client.cjs, a few KiB, only `node:fs` and `node:path`) so that trying costs
 * Node's start and a few file operations, not loading the CLI.
 */
export function runViaHookServer(args: readonly string[]): HookServerTry {
  const hook = parseHookArgv(args);
  if (hook === null) return { served: false };
  const result = callHookServer({
    args: hook,
    cwd: process.cwd(),
    env: process.env,
    input: readStdin,
  });
  if (!result.served)
    return result.input !== undefined ? { served: false, input: result.input } : { served: false };
  if (result.stdout !== "") process.stdout.write(result.stdout);
  if (result.stderr !== "") process.stderr.write(result.stderr);
  process.exitCode = result.exitCode;
  return { served: true };
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * The hook's stdin, read with plain reads: a pipe or socket from the agent is read to its end
 * without starting a stream on it (a few ms of a hook's budget). A terminal gives nothing, as
 * the CLI's own reader; a non-blocking stdin that runs dry is waited on.
 */
function readStdin(): Buffer {
  try {
    if (fstatSync(0).isCharacterDevice()) return Buffer.alloc(0);
  } catch {
    return Buffer.alloc(0); // no stdin at all
  }
  const chunks: Buffer[] = [];
  const chunk = Buffer.allocUnsafe(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(0, chunk, 0, chunk.length, null);
    } catch (error) {
      // A stream would end on an error too: the payload is what was read.
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") return Buffer.concat(chunks);
      Atomics.wait(pause, 0, 0, 1);
      continue;
    }
    if (n === 0) return Buffer.concat(chunks);
    chunks.push(Buffer.from(chunk.subarray(0, n)));
  }
}
