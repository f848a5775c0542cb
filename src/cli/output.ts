import { ErrorCode, isTimewarpError, TimewarpError } from "../core/index.ts";

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

/** The single place a CLI process turns an error into output and an exit code. */
export function printError(error: unknown, json: boolean): void {
  const tw = isTimewarpError(error)
    ? error
    : new TimewarpError(
        ErrorCode.INTERNAL,
        error instanceof Error ? (error.stack ?? error.message) : String(error),
      );
  if (json) process.stdout.write(`${JSON.stringify({ error: tw.toJSON() })}\n`);
  else process.stderr.write(`${style.red("error")} ${tw.code}: ${tw.message}\n`);
  process.exitCode = tw.code === ErrorCode.INVALID_INPUT ? 2 : 1;
}
