import { lstatSync, readFileSync, readlinkSync } from "node:fs";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  type GitFileMode,
  gitFileMode,
  safeMkdir,
  safeRmdir,
  safeSymlink,
  safeUnlink,
  safeWriteFile,
  TimewarpError,
  toFsPath,
} from "../core/index.ts";

/**
 * A file's bytes and git mode, as the ledger sees it. A symlink (`120000`, only where a patch
 * names one) holds its target's bytes, as git's blob of it does.
 */
export interface FileState {
  bytes: Uint8Array;
  mode: GitFileMode | "120000";
}

/**
 * The file at `abs`, or null when absent. A directory there is refused; so is a symlink unless
 * `links` (a patch may create, change or delete one, as git's can). Paths holding escaped bytes
 * (`pathTextOf`) are read by their exact bytes.
 */
export function readFileState(
  absText: string,
  rel: string,
  options: { links?: boolean } = {},
): FileState | null {
  const abs = toFsPath(absText);
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(abs);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw fromSystemError(error, `reading ${rel}`);
  }
  if (st.isSymbolicLink() && options.links === true) {
    try {
      return { bytes: readlinkSync(abs, { encoding: "buffer" }), mode: "120000" };
    } catch (error) {
      throw fromSystemError(error, `reading the link ${rel}`);
    }
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
    return { bytes: readFileSync(abs), mode: gitFileMode(st.mode) };
  } catch (error) {
    throw fromSystemError(error, `reading ${rel}`);
  }
}

/** The git mode of the regular file at `abs`, or undefined (absent, or not a regular file). */
export function statMode(abs: string): GitFileMode | undefined {
  try {
    const st = lstatSync(toFsPath(abs));
    if (!st.isFile()) return undefined;
    return gitFileMode(st.mode);
  } catch {
    return undefined;
  }
}

/** True when `abs` is an existing directory (not through a symlink). */
export function isDirectory(abs: string): boolean {
  try {
    return lstatSync(toFsPath(abs)).isDirectory();
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
    else if (state.mode === "120000") safeSymlink(root, rel, state.bytes, { createParents: true });
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
