import { lstatSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, errnoCode, fromSystemError, TimewarpError, toFsPath } from "../core/index.ts";
import type { FileEdit } from "./record-operation.ts";
import type { DirectoryChange } from "./schema.ts";

type Kind = "absent" | "directory" | "file" | "symlink";

/**
 * Record the directories a file creation brings into being, so that reverting the creation
 * removes them again instead of leaving empty folders behind.
 */
export function withCreatedParents(
  root: string,
  edits: FileEdit[],
  directories: DirectoryChange[],
): DirectoryChange[] {
  const planned = new Set(directories.filter((d) => d.action === "created").map((d) => d.path));
  const kinds = kindReader(root);
  const extra: DirectoryChange[] = [];
  for (const e of edits) {
    if (e.newPath === null || e.after === null) continue;
    const parts = e.newPath.split("/");
    for (let i = 1; i < parts.length; i++) {
      const rel = parts.slice(0, i).join("/");
      if (planned.has(rel) || kinds(rel) === "directory") continue;
      planned.add(rel);
      extra.push({ path: rel, action: "created" });
    }
  }
  if (extra.length === 0) return directories;
  extra.sort((a, b) => a.path.split("/").length - b.path.split("/").length);
  return [...extra, ...directories];
}

/**
 * Refuse, before anything is written (and on dryRun alike), an operation whose writes cannot
 * all succeed on this tree: a file to be written where a directory stands (and stays), or a
 * file or directory to be created under something that is not a directory — a file on disk that
 * the operation keeps, or a file the same operation writes (issue 16: `edit patch` creating `d`
 * and `d/e` failed with EISDIR on its third file after rewriting the first two). What cannot be
 * predicted (a full disk, a permission, a race) is rolled back by `applyOperation`.
 */
export function assertWritable(
  root: string,
  edits: FileEdit[],
  directories: DirectoryChange[],
): void {
  const written = new Set<string>();
  const deleted = new Set<string>();
  for (const e of edits) {
    if (e.oldPath !== null && e.oldPath !== e.newPath) deleted.add(e.oldPath);
    if (e.newPath !== null) written.add(e.newPath);
  }
  const removedDirs = new Set(directories.filter((d) => d.action === "removed").map((d) => d.path));
  const kinds = kindReader(root);
  const mustBeDirectory = (rel: string, forWhat: string) => {
    if (written.has(rel)) {
      throw new TimewarpError(
        ErrorCode.NOT_A_DIRECTORY,
        `${rel}: the operation writes it as a file and also needs it as the directory of ${forWhat}; nothing was changed`,
        { data: { path: rel, for: forWhat } },
      );
    }
    const kind = kinds(rel);
    if (kind === "symlink") {
      throw new TimewarpError(
        ErrorCode.UNSAFE_PATH,
        `${rel} is a symlink; ${forWhat} would be written through it; nothing was changed`,
        { data: { path: rel, for: forWhat } },
      );
    }
    if (kind === "file" && !deleted.has(rel)) {
      throw new TimewarpError(
        ErrorCode.NOT_A_DIRECTORY,
        `${rel} is a file, so ${forWhat} cannot be created in it; nothing was changed`,
        { data: { path: rel, for: forWhat } },
      );
    }
  };
  const parentsOf = (rel: string, forWhat: string) => {
    const parts = rel.split("/");
    for (let i = 1; i < parts.length; i++) mustBeDirectory(parts.slice(0, i).join("/"), forWhat);
  };
  for (const rel of written) {
    parentsOf(rel, rel);
    if (kinds(rel) === "directory" && !removedDirs.has(rel)) {
      throw new TimewarpError(
        ErrorCode.INVALID_INPUT,
        `${rel} is a directory; the operation would write a file there; nothing was changed`,
        { data: { path: rel } },
      );
    }
  }
  for (const d of directories) {
    if (d.action !== "created") continue;
    parentsOf(d.path, `the directory ${d.path}`);
    mustBeDirectory(d.path, `the directory ${d.path}`);
  }
}

/** lstat-based kind of a workspace path, each path asked once. */
function kindReader(root: string): (rel: string) => Kind {
  const seen = new Map<string, Kind>();
  return (rel) => {
    let kind = seen.get(rel);
    if (kind === undefined) {
      try {
        // by the name's bytes: a ledger path keeps a name that is not UTF-8 as escapes
        const st = lstatSync(toFsPath(join(root, rel)));
        kind = st.isDirectory() ? "directory" : st.isSymbolicLink() ? "symlink" : "file";
      } catch (error) {
        const code = errnoCode(error);
        if (code !== "ENOENT" && code !== "ENOTDIR")
          throw fromSystemError(error, `checking ${rel}`);
        kind = "absent";
      }
      seen.set(rel, kind);
    }
    return kind;
  };
}
