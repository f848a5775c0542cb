import { lstatSync, readFileSync } from "node:fs";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  safeMkdir,
  safeRmdir,
  safeUnlink,
  safeWriteFile,
  TimewarpError,
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

/**
 * Write (atomically) or delete the file `rel` under `root`; parent directories are created as
 * needed. Every write goes through core's safe path: no parent on the way may be a symlink.
 */
export function writeFileState(root: string, rel: string, state: FileState | null): void {
  try {
    if (state === null) safeUnlink(root, rel);
    else
      safeWriteFile(root, rel, state.bytes, {
        mode: state.mode === "100755" ? 0o755 : 0o644,
        createParents: true,
      });
  } catch (error) {
    if (state === null && errnoCode(error) === "ENOENT") return;
    throw fromSystemError(error, `${state === null ? "deleting" : "writing"} ${rel}`);
  }
}

/** Create the directory `rel` under `root` and its missing parents (checked: no symlink). */
export function makeDirectory(root: string, rel: string): void {
  try {
    safeMkdir(root, rel, { parents: true });
  } catch (error) {
    if (errnoCode(error) === "EEXIST" && isDirectory(`${root}/${rel}`)) return;
    throw fromSystemError(error, `creating directory ${rel}`);
  }
}

/** Remove the empty directory `rel` under `root`; false when it is not empty or absent. */
export function removeEmptyDirectory(root: string, rel: string): boolean {
  try {
    safeRmdir(root, rel);
    return true;
  } catch (error) {
    if (error instanceof TimewarpError) throw error;
    return false;
  }
}
