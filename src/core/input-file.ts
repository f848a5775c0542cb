import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { ErrorCode, errnoCode, TimewarpError } from "./errors.ts";

export interface InputPathOptions {
  /** How the user named it, for the message: `--content-file`, `the patch file`, `RUN_DIR`. */
  what: string;
  /** Relative paths resolve against this directory (default: the process's working directory). */
  cwd?: string;
}

/**
 * The coded error for a path the user named that cannot be used: every way it fails is the
 * caller's mistake, not a bug, so none of them is INTERNAL (issue 16, class 10). `data.input`
 * carries the path as given (the CLI exits 2 on it), `data.errno` the system's code.
 */
export function inputPathError(error: unknown, path: string, what: string): TimewarpError {
  if (error instanceof TimewarpError) return error;
  const errno = errnoCode(error);
  const data = { input: path, what, errno };
  const fail = (code: ErrorCode, why: string) =>
    new TimewarpError(code, `${what} ${JSON.stringify(path)}: ${why}`, { data, cause: error });
  switch (errno) {
    case "ENOENT":
      return fail(ErrorCode.NOT_FOUND, "no such file or directory");
    case "ENOTDIR":
      return fail(ErrorCode.NOT_FOUND, "a parent of it is not a directory");
    case "EISDIR":
      return fail(ErrorCode.NOT_A_FILE, "is a directory, expected a file");
    case "ENAMETOOLONG":
      return fail(ErrorCode.NAME_TOO_LONG, "the name is too long for the file system");
    case "EACCES":
    case "EPERM":
      return fail(ErrorCode.PERMISSION_DENIED, "permission denied");
    case "ELOOP":
      return fail(ErrorCode.INVALID_INPUT, "too many levels of symbolic links");
    default:
      return fail(
        ErrorCode.IO_ERROR,
        `cannot be read (${error instanceof Error ? error.message : String(error)})`,
      );
  }
}

/**
 * Read a file the user named on the command line (a patch, `--content-file`, `--search-file`,
 * a transcript …), "-" being stdin. The one home for reading such inputs: whatever is wrong with
 * the path (missing, a directory, a FIFO or device, a name too long, unreadable) is a coded
 * error from `inputPathError`, never a raw system error.
 *
 * @example
 * const diff = readInputFile(patchFile, { what: "patch file", cwd: invocationDir }).toString("utf8");
 */
export function readInputFile(path: string, options: InputPathOptions): Buffer {
  if (path === "-") {
    try {
      return readFileSync(0);
    } catch (error) {
      throw inputPathError(error, "-", `${options.what} (stdin)`);
    }
  }
  const abs = resolve(options.cwd ?? process.cwd(), path);
  try {
    // A FIFO or a device would block or never end: refuse what is not a regular file first.
    const st = statSync(abs);
    if (st.isDirectory()) throw Object.assign(new Error("EISDIR"), { code: "EISDIR" });
    if (!st.isFile()) {
      throw new TimewarpError(
        ErrorCode.NOT_A_FILE,
        `${options.what} ${JSON.stringify(path)}: not a regular file (a FIFO, socket or device)`,
        { data: { input: path, what: options.what } },
      );
    }
    return readFileSync(abs);
  } catch (error) {
    throw inputPathError(error, path, options.what);
  }
}

/**
 * Check that a directory the user named exists and is one (a run directory, a skill folder),
 * with the same coded errors as `readInputFile`; returns its absolute path.
 */
export function assertInputDirectory(path: string, options: InputPathOptions): string {
  const abs = resolve(options.cwd ?? process.cwd(), path);
  let isDir: boolean;
  try {
    isDir = statSync(abs).isDirectory();
  } catch (error) {
    throw inputPathError(error, path, options.what);
  }
  if (!isDir) {
    throw new TimewarpError(
      ErrorCode.NOT_A_DIRECTORY,
      `${options.what} ${JSON.stringify(path)}: not a directory`,
      { data: { input: path, what: options.what } },
    );
  }
  return abs;
}
