import { chmodSync, lstatSync, mkdirSync, readFileSync, rmdirSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  TimewarpError,
  writeFileAtomic,
} from "../core/index.ts";

/** A regular file's bytes and git mode, as the ledger sees it. */
export interface FileState {
  bytes: Uint8Array;
  mode: "100644" | "100755";
}

/** The file at `abs`, or null when absent. A directory or symlink there is refused. */
export function readFileState(abs: string, rel: string): FileState | null {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(abs);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw fromSystemError(error, `reading ${rel}`);
  }
  if (st.isSymbolicLink()) {
    throw new TimewarpError(
      ErrorCode.UNSAFE_PATH,
      `${rel} is a symlink; the ledger edits regular files only`,
      { data: { path: rel } },
    );
  }
  if (!st.isFile()) {
    throw new TimewarpError(ErrorCode.INVALID_INPUT, `${rel} is not a regular file`, {
      data: { path: rel },
    });
  }
  try {
    return { bytes: readFileSync(abs), mode: (st.mode & 0o111) !== 0 ? "100755" : "100644" };
  } catch (error) {
    throw fromSystemError(error, `reading ${rel}`);
  }
}

/** The git mode of the regular file at `abs`, or undefined (absent, or not a regular file). */
export function statMode(abs: string): FileState["mode"] | undefined {
  try {
    const st = lstatSync(abs);
    if (!st.isFile()) return undefined;
    return (st.mode & 0o111) !== 0 ? "100755" : "100644";
  } catch {
    return undefined;
  }
}

/** True when `abs` is an existing directory (not through a symlink). */
export function isDirectory(abs: string): boolean {
  try {
    return lstatSync(abs).isDirectory();
  } catch {
    return false;
  }
}

/** Write (atomically) or delete the file at `abs`; parent directories are created as needed. */
export function writeFileState(abs: string, rel: string, state: FileState | null): void {
  if (state === null) {
    try {
      unlinkSync(abs);
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw fromSystemError(error, `deleting ${rel}`);
    }
    return;
  }
  try {
    mkdirSync(dirname(abs), { recursive: true });
  } catch (error) {
    throw fromSystemError(error, `creating the folder of ${rel}`);
  }
  const mode = state.mode === "100755" ? 0o755 : 0o644;
  writeFileAtomic(abs, state.bytes, { mode });
  // The temp file's mode is subject to the umask; set it exactly.
  chmodSync(abs, mode);
}

/** Remove an empty directory; false when it is not empty or absent. */
export function removeEmptyDirectory(abs: string): boolean {
  try {
    rmdirSync(abs);
    return true;
  } catch {
    return false;
  }
}
