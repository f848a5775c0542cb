import { mkdirSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  ErrorCode,
  errnoCode,
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
 */
export function exportSnapshot(
  root: string,
  id: string,
  dir: string,
  query: RecordQuery = {},
): ExportResult {
  const record = readSnapshot(root, id, query);
  const manifest = readManifest(root, record);
  const out = resolve(dir);
  try {
    const names = readdirSync(out);
    if (names.length > 0) {
      throw new TimewarpError(
        ErrorCode.TARGET_NOT_EMPTY,
        `export target ${out} is not empty (has ${names.length} entries); choose a new directory`,
        { data: { dir: out } },
      );
    }
  } catch (error) {
    if (errnoCode(error) === "ENOTDIR") {
      throw new TimewarpError(
        ErrorCode.NOT_A_DIRECTORY,
        `export target ${out} is not a directory`,
        {
          data: { dir: out },
        },
      );
    }
    if (errnoCode(error) !== "ENOENT") throw error;
  }
  mkdirSync(join(out, "workspace"), { recursive: true });
  const restore = restoreManifest(join(out, "workspace"), manifest, {
    store: createObjectStore(workspacePaths(root).objects),
    excludes: [],
  });
  writeJsonAtomic(join(out, RECORD_FILE), record);
  return { dir: out, files: record.files, bytes: record.bytes, restore, skipped: record.skipped };
}
