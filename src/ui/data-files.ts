import { realpathSync, statSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";
import { ErrorCode, TimewarpError } from "../core/index.ts";

/** The only folders of a workspace whose files the dashboard may send as they are. */
const DATA_DIRS = [".timewarp", ".skillpilot"];

/**
 * A workspace-relative path the page asked for, as a real file inside `.timewarp/` or
 * `.skillpilot/`, or UNSAFE_PATH / NOT_FOUND. The check is made on the real path, after every
 * symlink, so a link inside a run directory that points at `~/.ssh` is refused too.
 */
export function dataFile(root: string, rel: string): string {
  if (rel === "" || rel.includes("\0") || isAbsolute(rel))
    throw new TimewarpError(ErrorCode.UNSAFE_PATH, `not a workspace data path: ${rel}`);
  let real: string;
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
    real = realpathSync(join(root, rel));
  } catch {
    throw new TimewarpError(ErrorCode.NOT_FOUND, `no such file: ${rel}`);
  }
  const inside = DATA_DIRS.some((dir) => {
    const r = relative(join(realRoot, dir), real);
    return r !== "" && !r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r);
  });
  if (!inside)
    throw new TimewarpError(
      ErrorCode.UNSAFE_PATH,
      `the dashboard only serves files inside .timewarp/ and .skillpilot/: ${rel}`,
    );
  if (!statSync(real).isFile()) throw new TimewarpError(ErrorCode.NOT_A_FILE, `not a file: ${rel}`);
  return real;
}
