import type { HookAnswer } from "../hooks/index.ts";

export interface CapturedCommandRequest {
  /** The arguments after `timewarp`, as typed. */
  args: string[];
  /** The client's working directory. */
  cwd: string;
  /** Whether the client's stdout and stderr are terminals. */
  tty: { stdout: boolean; stderr: boolean };
  /** Where stderr goes as it is written (a write command's progress); else into the answer. */
  stderr?: (text: string) => void;
}

/**
 * Run one CLI command in this thread as it would run in a process of its own, and return what it
 * printed and its exit code: the hook server's worker does this for `bin/timewarp` (the read-only
 * commands; see `isServedCommand` in src/hooks). The CLI writes to `process.stdout`/`stderr`,
 * sets `process.exitCode` and reads `process.cwd()` and the terminals' `isTTY`; a worker thread
 * has its own `process` object, so for the command's length these are the client's: its output
 * collected, its working directory, its terminals (colours as the client's own process would
 * choose them). The caller has made `process.env` the client's. One command at a time. With
 * `request.stderr`, stderr is handed on as it is written and the answer's is empty.
 */
export async function runCapturedCommand(request: CapturedCommandRequest): Promise<HookAnswer> {
  const out: string[] = [];
  const err: string[] = [];
  const restore = [
    capture(process.stdout, (text) => out.push(text), request.tty.stdout),
    capture(process.stderr, request.stderr ?? ((text) => err.push(text)), request.tty.stderr),
    replace(process, "cwd", () => request.cwd),
  ];
  process.exitCode = undefined;
  try {
    const { main } = await import("./main.ts");
    await main(["node", "timewarp", ...request.args]);
    const code = process.exitCode;
    return {
      stdout: out.join(""),
      stderr: err.join(""),
      exitCode: typeof code === "number" ? code : Number(code ?? 0),
    };
  } finally {
    process.exitCode = undefined;
    for (const undo of restore.reverse()) undo();
  }
}

/** Load the CLI's program and the served commands' capabilities (a worker's warm-up). */
export async function warmCapturedCommands(): Promise<void> {
  const { createProgram } = await import("./main.ts");
  createProgram();
  await Promise.all([
    import("../timemachine/index.ts"),
    import("../ledger/index.ts"),
    import("../store/index.ts"),
  ]);
}

/** Hand what is written to `stream` to `into`; it reads as a terminal when `tty`. Returns the undo. */
function capture(
  stream: NodeJS.WriteStream,
  into: (text: string) => void,
  tty: boolean,
): () => void {
  const undoWrite = replace(stream, "write", ((chunk: unknown, ...rest: unknown[]) => {
    into(typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString());
    const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
    callback?.();
    return true;
  }) as NodeJS.WriteStream["write"]);
  const undoTty = replace(stream, "isTTY", tty);
  return () => {
    undoTty();
    undoWrite();
  };
}

/** Set `target[key]` to `value` (as an own property); returns what puts the old one back. */
function replace<T extends object, K extends keyof T>(target: T, key: K, value: T[K]): () => void {
  const own = Object.getOwnPropertyDescriptor(target, key);
  Object.defineProperty(target, key, { value, writable: true, configurable: true });
  return () => {
    if (own !== undefined) Object.defineProperty(target, key, own);
    else delete target[key];
  };
}
