import { lstatSync } from "node:fs";
import { isAbsolute, normalize, relative, resolve, sep } from "node:path";
import {
  assertSafeToRead,
  DATA_DIR,
  ErrorCode,
  errnoCode,
  TimewarpError,
  toFsPath,
} from "../core/index.ts";

/** A workspace-relative path (forward slashes) and its absolute location. */
export interface SafePath {
  rel: string;
  abs: string;
}

/**
 * Resolve a path given by a caller (relative to the workspace, or absolute inside it) and refuse
 * anything that escapes the workspace (UNSAFE_PATH), goes through a symlink (UNSAFE_PATH), names
 * the workspace itself or lies inside `.timewarp/` (INVALID_INPUT). `links`: the path itself may
 * be a symlink (a patch changes links as git's do; its parents still may not be).
 */
export function resolveWorkspacePath(
  root: string,
  input: string,
  options: { links?: boolean } = {},
): SafePath {
  if (input.length === 0 || input.includes("\0")) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `path ${JSON.stringify(input)} is empty or has a NUL byte`,
    );
  }
  const absRoot = resolve(root);
  const abs = resolve(absRoot, input);
  const rel = relative(absRoot, abs);
  if (rel === "") {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `path ${JSON.stringify(input)} is the workspace root itself`,
    );
  }
  if (rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel)) {
    throw new TimewarpError(
      ErrorCode.UNSAFE_PATH,
      `path ${JSON.stringify(input)} escapes the workspace ${absRoot}`,
      { data: { path: input } },
    );
  }
  const parts = normalize(rel).split(sep);
  if (parts[0] === DATA_DIR) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `path ${JSON.stringify(input)} is inside ${DATA_DIR}/, which the ledger never edits`,
      { data: { path: input } },
    );
  }
  // Every component must be a real directory/file, never a symlink: an edit through a link could
  // write outside the workspace. Parents: core's check (the writes check them again, at write
  // time); the file itself: a symlink is not a file the ledger edits.
  const relPath = parts.join("/");
  assertSafeToRead(absRoot, relPath);
  let isLink = false;
  try {
    isLink = options.links !== true && lstatSync(toFsPath(abs)).isSymbolicLink();
  } catch (error) {
    if (errnoCode(error) !== "ENOENT" && errnoCode(error) !== "ENOTDIR") throw error;
  }
  if (isLink) {
    throw new TimewarpError(
      ErrorCode.UNSAFE_PATH,
      `path ${JSON.stringify(input)} goes through the symlink ${relPath}`,
      { data: { path: input } },
    );
  }
  return { rel: relPath, abs };
}
