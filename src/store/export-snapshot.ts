import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  fsyncDirectory,
  isProcessAlive,
  type OnProgress,
  TimewarpError,
  workspacePaths,
  writeJsonAtomic,
} from "../core/index.ts";
import { createObjectStore } from "./object-store.ts";
import { type RestoreResult, restoreManifest } from "./restore-manifest.ts";
import type { SkippedPath } from "./scan-workspace.ts";
import { RECORD_FILE, type RecordQuery, readManifest, readSnapshot } from "./snapshots.ts";

export interface ExportResult {
  dir: string;
  files: number;
  bytes: number;
  restore: RestoreResult;
  /** What the snapshot did not capture (so it is not in the export either); from its record. */
  skipped: SkippedPath[];
}

/**
 * Materialize a snapshot as the seed's copy layout: `<dir>/snapshot.json` and
 * `<dir>/workspace/…` (files with their modes, symlinks as links, hard links as links, empty
 * directories). What the snapshot skipped is absent, and listed in `skipped`.
 * `dir` must not exist or be empty (TARGET_NOT_EMPTY); SNAPSHOT_NOT_FOUND for an unknown id.
 *
 * The copy is built in a hidden folder beside `dir` and renamed onto it at the end, so `dir`
 * appears whole or not at all (issue 16: a full disk left half a copy that looked like one). A
 * failure removes the folder (DISK_FULL when the disk filled); one left by a killed export is
 * removed by the next export to the same place.
 */
export function exportSnapshot(
  root: string,
  id: string,
  dir: string,
  options: RecordQuery & {
    /** Phase `write`: entries written of all (files, links, directories). */
    onProgress?: OnProgress;
  } = {},
): ExportResult {
  const { onProgress, ...query } = options;
  onProgress?.({ phase: "read manifest" });
  const record = readSnapshot(root, id, query);
  const manifest = readManifest(root, record);
  const out = resolve(dir);
  assertExportTarget(out);
  const parent = dirname(out);
  const prefix = `.${basename(out)}.tw-export-`;
  const building = join(parent, `${prefix}${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    mkdirSync(parent, { recursive: true });
    removeStaleBuilds(parent, prefix);
    mkdirSync(join(building, "workspace"), { recursive: true });
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    throw fromSystemError(error, `creating ${building} to export ${id}`);
  }
  let restore: RestoreResult;
  try {
    restore = restoreManifest(join(building, "workspace"), manifest, {
      store: createObjectStore(workspacePaths(root).objects),
      excludes: [],
      ...(onProgress ? { onProgress: (p) => onProgress({ phase: "write", ...p }) } : {}),
    });
    writeJsonAtomic(join(building, RECORD_FILE), record);
    // Replaces `out` when it is an empty directory (rename(2)); checked again just before.
    assertExportTarget(out);
    renameSync(building, out);
    fsyncDirectory(parent);
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    throw fromSystemError(error, `exporting ${id} to ${out}`);
  }
  return { dir: out, files: record.files, bytes: record.bytes, restore, skipped: record.skipped };
}

/** `out` must not exist, or be an empty directory. */
function assertExportTarget(out: string): void {
  let names: string[];
  try {
    names = readdirSync(out);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return;
    if (errnoCode(error) === "ENOTDIR") {
      throw new TimewarpError(
        ErrorCode.NOT_A_DIRECTORY,
        `export target ${out} is not a directory`,
        {
          data: { dir: out },
        },
      );
    }
    throw fromSystemError(error, `reading export target ${out}`);
  }
  if (names.length > 0) {
    throw new TimewarpError(
      ErrorCode.TARGET_NOT_EMPTY,
      `export target ${out} is not empty (has ${names.length} entries); choose a new directory`,
      { data: { dir: out } },
    );
  }
}

/** Folders a killed export to the same target left (their pid is gone). */
function removeStaleBuilds(parent: string, prefix: string): void {
  for (const name of readdirSync(parent)) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1]);
    if (Number.isInteger(pid) && !isProcessAlive(pid)) {
      rmSync(join(parent, name), { recursive: true, force: true });
    }
  }
}
