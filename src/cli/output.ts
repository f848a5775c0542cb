import { ErrorCode, type TimewarpError, toTimewarpError } from "../core/index.ts";

/** What a command returns: the JSON document for `--json`, and the text for people. */
export interface CommandResult {
  json: unknown;
  human: string;
  /** Exit code for a result that is not an error but should fail a script (default 0). */
  exitCode?: number;
}

const useColor = () => process.stdout.isTTY === true && process.env.NO_COLOR === undefined;

/** ANSI styling that disappears when stdout is not a TTY (or NO_COLOR is set). */
export const style = {
  bold: (s: string) => (useColor() ? `\x1b[1m${s}\x1b[22m` : s),
  dim: (s: string) => (useColor() ? `\x1b[2m${s}\x1b[22m` : s),
  green: (s: string) => (useColor() ? `\x1b[32m${s}\x1b[39m` : s),
  yellow: (s: string) => (useColor() ? `\x1b[33m${s}\x1b[39m` : s),
  red: (s: string) => (useColor() ? `\x1b[31m${s}\x1b[39m` : s),
};

export function printResult(result: CommandResult, json: boolean): void {
  if (json) process.stdout.write(`${JSON.stringify(result.json)}\n`);
  else if (result.human !== "")
    process.stdout.write(result.human.endsWith("\n") ? result.human : `${result.human}\n`);
  process.exitCode = result.exitCode ?? 0;
}

/**
 * The single place a CLI process turns an error into output and an exit code. Never a stack
 * trace: a system error gets its code (`toTimewarpError`); a bug is INTERNAL with its message,
 * and its stack goes to stderr only with TIMEWARP_DEBUG=1.
 */
export function printError(error: unknown, json: boolean): void {
  const tw = toTimewarpError(error);
  if (json) process.stdout.write(`${JSON.stringify({ error: tw.toJSON() })}\n`);
  else process.stderr.write(`${style.red("error")} ${tw.code}: ${tw.message}\n`);
  if (tw.code === ErrorCode.INTERNAL) {
    const stack = tw.cause instanceof Error ? tw.cause.stack : tw.stack;
    process.stderr.write(
      process.env.TIMEWARP_DEBUG === "1" && stack !== undefined
        ? `${stack}\n`
        : "(a bug in timewarp: please report it; TIMEWARP_DEBUG=1 prints the stack)\n",
    );
  }
  process.exitCode = exitCodeFor(tw);
}

/**
 * The exit code of a failed command, the same with and without `--json`: 2 for the caller's
 * mistakes (bad usage or arguments, a name too long, an input file that cannot be read: its
 * error names it in `data.input`), 1 for everything else.
 */
export function exitCodeFor(error: TimewarpError): number {
  if (error.code === ErrorCode.INVALID_INPUT || error.code === ErrorCode.NAME_TOO_LONG) return 2;
  return error.data?.input !== undefined ? 2 : 1;
}
