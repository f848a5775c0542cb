import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { errnoCode } from "../core/index.ts";
import { jobFailed } from "./taxonomy.ts";

/** The file-system calls the protocol relies on; a seam so tests can make one misbehave. */
export interface FsProbeOps {
  writeFile(path: string, data: string): void;
  readFile(path: string): string;
  /** link(2): must fail with EEXIST when `to` exists (acks and requests are published so). */
  link(from: string, to: string): void;
  /** rename(2): must replace `to` whole (atomic writes of manifest, heartbeat, ready.json). */
  rename(from: string, to: string): void;
  remove(path: string): void;
}

export const defaultFsProbeOps: FsProbeOps = {
  writeFile: (path, data) => writeFileSync(path, data, { flag: "wx" }),
  readFile: (path) => readFileSync(path, "utf8"),
  link: linkSync,
  rename: renameSync,
  remove: (path) => rmSync(path, { force: true }),
};

function unsupported(dir: string, what: string, detail: string): Error {
  return jobFailed({
    error_type: "SESSION_START_FAIL",
    detail_code: "RUN_DIR_FS_UNSUPPORTED",
    message: `the run directory ${dir} is on a file system without ${what} (${detail}); the request/ack protocol needs it — put .skillpilot/runs on a local disk or an NFSv3+/Lustre/GPFS mount that supports hard links`,
  });
}

/**
 * Check once per run, before the tool starts, that the run directory's file system does what the
 * protocol needs (an NFS or SMB mount on a farm may not): create a file, hard-link it to a new name,
 * have a hard link onto an existing name fail with EEXIST, and rename over an existing file.
 * Throws SESSION_START_FAIL / RUN_DIR_FS_UNSUPPORTED; leaves nothing behind.
 */
export function probeRunDir(dir: string, ops: FsProbeOps = defaultFsProbeOps): void {
  const tag = `.fsprobe-${process.pid}-${Date.now().toString(36)}`;
  const a = join(dir, `${tag}.a`);
  const b = join(dir, `${tag}.b`);
  const c = join(dir, `${tag}.c`);
  try {
    try {
      ops.writeFile(a, "a");
      ops.writeFile(c, "c");
    } catch (error) {
      throw unsupported(dir, "file creation", errnoCode(error) ?? String(error));
    }
    try {
      ops.link(a, b);
    } catch (error) {
      throw unsupported(dir, "hard links", `link(): ${errnoCode(error) ?? String(error)}`);
    }
    let replaced = false;
    try {
      ops.link(a, c);
      replaced = true;
    } catch (error) {
      if (errnoCode(error) !== "EEXIST")
        throw unsupported(
          dir,
          "exclusive hard links",
          `link() onto an existing name: ${errnoCode(error) ?? String(error)}`,
        );
    }
    if (replaced)
      throw unsupported(dir, "exclusive hard links", "link() replaced an existing name");
    try {
      ops.rename(b, c);
    } catch (error) {
      throw unsupported(
        dir,
        "atomic rename",
        `rename() over a file: ${errnoCode(error) ?? String(error)}`,
      );
    }
    let content: string;
    try {
      content = ops.readFile(c);
    } catch (error) {
      throw unsupported(
        dir,
        "atomic rename",
        `reading the renamed file: ${errnoCode(error) ?? String(error)}`,
      );
    }
    if (content !== "a")
      throw unsupported(dir, "atomic rename", "rename() did not replace the file");
  } finally {
    for (const p of [a, b, c]) {
      try {
        ops.remove(p);
      } catch {
        // best effort: a leftover dot file is harmless
      }
    }
  }
}
