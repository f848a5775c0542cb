import { lstatSync, mkdirSync } from "node:fs";
import {
  assertSafeToRead,
  ErrorCode,
  errnoCode,
  fromSystemError,
  isTimewarpError,
  safeChmod,
  safeLink,
  safeMkdir,
  safeRmdir,
  safeSymlink,
  safeUnlink,
  safeWriteFile,
  safeWriteFileWith,
  TimewarpError,
  type WorkspaceRelPath,
} from "../core/index.ts";
import { ancestorsOf, diffTrees, entriesAt, type ManifestTree } from "./diff-trees.ts";
import { entryKey } from "./entry-path.ts";
import { createExcludeMatcher } from "./excludes.ts";
import {
  diffManifestTexts,
  MANIFEST_SCHEMA_VERSION,
  type Manifest,
  type ManifestEntry,
  type TextDifference,
} from "./manifest.ts";
import { isZeroChunk, LARGE_OBJECT_BYTES, type ObjectStore } from "./object-store.ts";
import {
  assertSafeManifest,
  filterExcluded,
  notCaptured,
  planRestore,
  type RestorePlan,
  withoutNotCaptured,
} from "./plan-restore.ts";
import { type SkippedPath, scanWorkspace } from "./scan-workspace.ts";
import type { StatCache } from "./stat-cache.ts";

export interface RestoreOptions {
  /** Where file contents come from. */
  store: ObjectStore;
  /** Excludes in force at the target: excluded paths are never read, written or deleted. */
  excludes: readonly string[];
  /** The target's stat cache, so unchanged files are not re-hashed to compare them. */
  statCache?: StatCache;
  /** The target is the workspace: ask its watch daemon what changed (see `ScanOptions`). */
  useWatcher?: boolean;
  /** Files over this size whose content is not known are left alone (as a scan would skip them). */
  maxFileBytes?: number;
  /** Re-hash each object as it is read (default true). */
  verify?: boolean;
  onProgress?: (progress: { done: number; total: number }) => void;
  /**
   * The target's current state, when the caller scanned it a moment ago under the workspace
   * lock (travel: the present backup's `manifest` and `record.skipped`). Saves a second scan;
   * without it the target is scanned first.
   */
  current?: { manifest: Manifest; skipped: SkippedPath[] };
  /**
   * Also require the objects of the present files this restore overwrites or deletes (travel:
   * the backup just taken must really hold what the restore is about to destroy).
   */
  requireReplacedObjects?: boolean;
  /**
   * Paths the target's record did not capture (its `skipped`; a travel adds its backup's): they,
   * and everything below them, are neither deleted, written, created nor chmodded. What the scan
   * of the target finds unreadable is left alone the same way.
   */
  skipped?: readonly SkippedPath[];
}

/** An object a restore needs that the store lacks (or holds at the wrong size). */
export interface MissingObject {
  path: string;
  oid: string;
  problem: "missing" | "size";
  /** `target`: content to write; `present`: content the restore would overwrite or delete. */
  side: "target" | "present";
}

/**
 * The reason a restore gives for a path it left alone because the path is no longer what the
 * scan it was planned from saw (written, created or deleted since): never overwritten.
 */
export const CHANGED_SINCE_SCAN = "changed since the scan";

/** Why a target entry could not be restored (nothing else was harmed). */
export interface BlockedPath {
  path: string;
  reason: string;
}

export interface RestoreResult {
  /** Files and symlinks written (new or different content). */
  written: number;
  /** Files, symlinks and directories removed because the manifest lacks them. */
  deleted: number;
  /** Entries already right (content and mode). */
  unchanged: number;
  /** Files whose content was right and only the mode changed. */
  mode_changed: number;
  dirs_created: number;
  /** Manifest entries not applied because the target's excludes cover them. */
  excluded: number;
  /** Entries that could not be applied; the restore is incomplete when non-empty. */
  blocked: BlockedPath[];
  /** Directories kept although the manifest lacks them (they hold excluded or skipped content). */
  kept_dirs: string[];
  /**
   * Paths not captured on either side (the target's record's skipped paths, and present paths
   * the scan could not read: special files, unreadable, too large); they and everything below
   * them were left untouched.
   */
  untouched: SkippedPath[];
  /**
   * Target entries not applied because they lie at or below an untouched path (or would replace
   * a directory holding one). A verify against the target reports the ones that matter.
   */
  left_alone: string[];
  /**
   * A restore by tree: the paths where the workspace's scan and the target differed (each
   * once), and how many entries it found equal. What a verify after it must look at again.
   */
  compared?: { differing: string[]; same: number };
}

/** The path every write of an entry names: its exact bytes when they are not UTF-8. */
function relOf(e: { path: string; path_b64?: string | undefined }): WorkspaceRelPath {
  return e.path_b64 === undefined ? e.path : Buffer.from(e.path_b64, "base64");
}

/**
 * Make the directory `root` match `manifest` by difference: compare against what is there now
 * (stat cache + content hashes), write only files whose content or type differs (atomically,
 * temp + rename, with their mode), fix modes, delete what the manifest lacks, create missing
 * directories. Excluded paths (and `.timewarp/`) are never touched; neither is anything at or
 * below a path the target's record did not capture (`options.skipped`) or the scan of the
 * target cannot read (`result.untouched`, `result.left_alone`). Hard links (`link`) are
 * restored as links. Every entry is checked before anything is
 * written: UNSAFE_PATH for absolute paths, `..`, or a path below a symlink (also re-checked
 * on disk before each write). OBJECT_NOT_FOUND / OBJECT_CORRUPT when content is missing or bad.
 *
 * Restored files get a fresh mtime (as `git checkout` does), so build tools see them as changed.
 */
export function restoreManifest(
  root: string,
  manifest: Manifest,
  options: RestoreOptions,
): RestoreResult {
  assertSafeManifest(manifest);
  const excluded = createExcludeMatcher(options.excludes);
  const target = filterExcluded(manifest, excluded);
  try {
    mkdirSync(root, { recursive: true });
  } catch (error) {
    throw fromSystemError(error, `creating restore target ${root}`);
  }
  const scan =
    options.current ??
    scanWorkspace(root, {
      excludes: options.excludes,
      statCache: options.statCache,
      maxFileBytes: options.maxFileBytes,
      ...(options.useWatcher === true ? { useWatcher: true } : {}),
      leaveAlone: options.skipped,
    });
  const files = new Set<string>();
  for (const e of target.kept) if (e.type === "file") files.add(e.path);
  return applyRestore(root, planRestore(scan.manifest.entries, target.kept), options, {
    excluded: target.dropped,
    untouched: mergeSkipped(scan.skipped, options.skipped),
    unchanged: 0,
    links: target.kept.filter((e) => e.link !== undefined),
    isTargetFile: (path) => files.has(path),
  });
}

/**
 * `restoreManifest` with both sides as canonical manifest texts (`manifestBytes`): the target's
 * (a stored manifest) and the workspace's as a scan just found it (`current`). Only the lines
 * that differ are decoded and planned, so the cost follows the difference, not the workspace.
 * Null when a text is not canonical plain UTF-8 (decode both and use `restoreManifest`).
 */
export function restoreManifestText(
  root: string,
  target: Buffer,
  current: { text: Buffer; skipped: SkippedPath[] },
  options: Omit<RestoreOptions, "current" | "statCache" | "useWatcher">,
): RestoreResult | null {
  const d = diffManifestTexts(current.text, target);
  if (d === null) return null;
  return restoreDifference(root, d, current.skipped, options);
}

/**
 * `restoreManifest` with both sides as trees: the target's (a stored manifest) and the
 * workspace's as a scan just found it (`current`). Only the leaves that differ are read, and of
 * the rest only the target's entries at the directories above a differing path (is one of them
 * a symlink?), so the cost follows the difference. The hard links re-linked after their leader
 * is written anew are the differing ones: a link whose line both sides share is on its leader's
 * inode now with the target's content, so that leader is not rewritten. Null when a name is not
 * plain UTF-8 (decode both and use `restoreManifest`).
 */
export function restoreManifestTree(
  root: string,
  target: ManifestTree,
  current: { tree: ManifestTree; skipped: SkippedPath[] },
  options: Omit<RestoreOptions, "current" | "statCache" | "useWatcher">,
): RestoreResult | null {
  const d = diffTrees(current.tree, target);
  if (d === null) return null;
  const above = entriesAt(target, ancestorsOf(d.b));
  if (above === null) return null;
  const bSymlinks = above.filter((e) => e.type === "symlink").map((e) => e.path);
  const bLinks = d.b.filter((e) => e.type === "file" && e.link !== undefined);
  const result = restoreDifference(root, { ...d, bSymlinks, bLinks }, current.skipped, options);
  const differing = [...new Set([...d.a.map((e) => e.path), ...d.b.map((e) => e.path)])];
  return { ...result, compared: { differing, same: d.same } };
}

/** Plan and apply a restore from the differing entries of both sides. */
function restoreDifference(
  root: string,
  d: Pick<TextDifference, "a" | "b" | "same" | "bSymlinks" | "bLinks">,
  currentSkipped: SkippedPath[],
  options: Omit<RestoreOptions, "current" | "statCache" | "useWatcher">,
): RestoreResult {
  const differing: Manifest = { schema_version: MANIFEST_SCHEMA_VERSION, entries: d.b };
  assertSafeManifest(differing, d.bSymlinks);
  // A line the scan of the workspace shares is not excluded: the scan ran with these excludes.
  const excluded = createExcludeMatcher(options.excludes);
  const kept = filterExcluded(differing, excluded);
  try {
    mkdirSync(root, { recursive: true });
  } catch (error) {
    throw fromSystemError(error, `creating restore target ${root}`);
  }
  const links = filterExcluded(
    { schema_version: MANIFEST_SCHEMA_VERSION, entries: d.bLinks },
    excluded,
  );
  return applyRestore(root, planRestore(d.a, kept.kept), options, {
    excluded: kept.dropped,
    untouched: mergeSkipped(currentSkipped, options.skipped),
    unchanged: d.same,
    links: links.kept,
    // A link's leader is a file of the same target manifest; here only its exclusion is unknown.
    isTargetFile: (path) =>
      filterExcluded(
        {
          schema_version: MANIFEST_SCHEMA_VERSION,
          entries: [{ path, type: "file", mode: 0, size: 0, mtime_ms: 0 }],
        },
        excluded,
      ).kept.length === 1,
  });
}

/** Both sides' skipped paths, each path once (the present's entry first: it says why now). */
function mergeSkipped(
  current: readonly SkippedPath[],
  target: readonly SkippedPath[] | undefined,
): SkippedPath[] {
  const out = [...current];
  if (target === undefined || target.length === 0) return out;
  const seen = new Set(current.map((s) => s.path));
  for (const s of target) {
    if (!seen.has(s.path)) {
      seen.add(s.path);
      out.push(s);
    }
  }
  return out;
}

/** Carry out a restore plan (the part `restoreManifest` and the restores by difference share). */
function applyRestore(
  root: string,
  fullPlan: RestorePlan,
  options: Pick<RestoreOptions, "store" | "verify" | "onProgress" | "requireReplacedObjects">,
  known: {
    excluded: number;
    untouched: SkippedPath[];
    unchanged: number;
    /** The target's files that are hard links of another (`link`): all of them. */
    links: ManifestEntry[];
    /** Whether a leader of `links` is a file this restore is responsible for. */
    isTargetFile: (path: string) => boolean;
  },
): RestoreResult {
  // What a snapshot did not capture is not the restore's: never deleted, written or chmodded.
  const skip = notCaptured(known.untouched);
  const { plan, leftAlone } = withoutNotCaptured(fullPlan, skip);
  const missing = missingObjects(options.store, plan, options.requireReplacedObjects === true);
  if (missing.length > 0) {
    throw new TimewarpError(
      missing.some((m) => m.problem === "missing")
        ? ErrorCode.OBJECT_NOT_FOUND
        : ErrorCode.OBJECT_CORRUPT,
      `${missing.length} object(s) this restore needs are missing or damaged in ${options.store.dir} (${missing
        .slice(0, 5)
        .map(
          (m) =>
            `${m.path} → ${m.oid.slice(0, 12)}${m.side === "present" ? " (present content)" : ""}`,
        )
        .join(
          ", ",
        )}${missing.length > 5 ? ", …" : ""}); the workspace was not touched (run \`timewarp fsck\`)`,
      { data: { missing, touched: false } },
    );
  }
  const result: RestoreResult = {
    written: 0,
    deleted: 0,
    unchanged: plan.unchanged + known.unchanged,
    mode_changed: 0,
    dirs_created: 0,
    excluded: known.excluded,
    blocked: [],
    kept_dirs: [],
    untouched: known.untouched,
    left_alone: leftAlone,
  };
  const total =
    plan.deleteFiles.length + plan.deleteDirs.length + plan.makeDirs.length + plan.writes.length;
  let done = 0;
  const tick = () => {
    done++;
    if (options.onProgress !== undefined && (done % 200 === 0 || done === total))
      options.onProgress({ done, total });
  };

  // Just before a path is unlinked, overwritten, linked or chmodded its lstat must still be what
  // the scan saw (or absent where the scan saw nothing): a write since then (the user's editor,
  // another agent: the lock stops only timewarp's writers) is left as it is, the path blocked.
  const removed = new Set<string>();
  const blockedKeys = new Set<string>();
  const asScanned = (
    e: ManifestEntry,
    how: { fallback?: ManifestEntry; gone?: boolean; mode?: number } = {},
  ): boolean => {
    const key = entryKey(e);
    if (blockedKeys.has(key)) return false;
    const seen = removed.has(key)
      ? null
      : plan.present.has(key)
        ? plan.present.get(key)
        : how.fallback;
    if (seen === undefined || stillAsSeen(root, relOf(e), seen, how.gone, how.mode)) return true;
    // (a parent that became a symlink since the scan is UNSAFE_PATH, as the write would be)
    assertSafeToRead(root, relOf(e));
    blockedKeys.add(key);
    result.blocked.push({ path: e.path, reason: CHANGED_SINCE_SCAN });
    return false;
  };

  for (const e of plan.deleteFiles) {
    if (!asScanned(e, { gone: true })) {
      tick();
      continue;
    }
    try {
      removed.add(entryKey(e));
      safeUnlink(root, relOf(e));
      result.deleted++;
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw fromSystemError(error, `deleting ${e.path}`);
    }
    tick();
  }
  for (const e of plan.deleteDirs) {
    try {
      safeRmdir(root, relOf(e));
      removed.add(entryKey(e));
      result.deleted++;
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOTEMPTY" || code === "EEXIST") result.kept_dirs.push(e.path);
      else if (code !== "ENOENT") throw fromSystemError(error, `removing directory ${e.path}`);
    }
    tick();
  }

  for (const e of plan.makeDirs) {
    try {
      safeMkdir(root, relOf(e), { mode: 0o700 });
      result.dirs_created++;
    } catch (error) {
      const code = errnoCode(error);
      if (code === "EEXIST") {
        const key = entryKey(e);
        // A directory made since the scan is what the target wants (its mode is set below).
        if (blockedKeys.has(key) || stillAsSeen(root, relOf(e), dirEntry)) continue;
        // The scan saw nothing here, or a file this restore removed: something came since.
        const late = !plan.present.has(key) || removed.has(key);
        blockedKeys.add(key);
        result.blocked.push({
          path: e.path,
          reason: late ? CHANGED_SINCE_SCAN : "a non-directory is in the way",
        });
      } else throw fromSystemError(error, `creating directory ${e.path}`);
    }
    tick();
  }

  const verify = options.verify ?? true;
  const written = new Set<string>();
  const notOurs = new Set(leftAlone);
  /** Make `e` a hard link of its leader, when the leader is in place; false when it is not. */
  const linkToLeader = (e: ManifestEntry): boolean => {
    const leader = e.link;
    if (
      leader === undefined ||
      notOurs.has(leader) ||
      skip.covers(e.path) ||
      result.blocked.some((b) => b.path === leader) ||
      !known.isTargetFile(leader)
    )
      return false;
    const from: WorkspaceRelPath =
      e.link_b64 === undefined ? leader : Buffer.from(e.link_b64, "base64");
    try {
      const st = lstatSync(
        typeof from === "string"
          ? `${root}/${from}`
          : Buffer.concat([Buffer.from(`${root}/`), from]),
      );
      if (!st.isFile() || st.size !== e.size) return false;
      safeLink(root, from, relOf(e));
      return true;
    } catch (error) {
      if (isTimewarpError(error)) throw error;
      return false; // EXDEV, EMLINK, EPERM…: written as a file of its own
    }
  };
  for (const e of plan.writes) {
    if (!asScanned(e)) {
      tick();
      continue;
    }
    if (e.type === "file" && e.link !== undefined && linkToLeader(e)) {
      written.add(e.path);
      result.written++;
      tick();
      continue;
    }
    let bytes: Buffer | undefined;
    const large = e.type === "file" && e.size > LARGE_OBJECT_BYTES;
    if (e.type === "file") {
      if (e.oid === undefined) {
        throw new TimewarpError(ErrorCode.CORRUPT_FILE, `manifest file entry ${e.path} has no oid`);
      }
      if (!large) bytes = options.store.read(e.oid, { verify });
    }
    // The parents are checked by the write itself (core's safe path: no symlink on the way).
    try {
      if (large) writeFileStreamed(root, e, options.store, verify);
      else if (bytes === undefined) {
        const target =
          e.target_b64 !== undefined ? Buffer.from(e.target_b64, "base64") : (e.target ?? "");
        safeSymlink(root, relOf(e), target);
      } else safeWriteFile(root, relOf(e), bytes, { mode: e.mode, atomic: false });
    } catch (error) {
      const code = errnoCode(error);
      if (code === "EISDIR" || code === "ENOTEMPTY" || code === "EEXIST") {
        result.blocked.push({
          path: e.path,
          reason: "a directory with excluded or unreadable content is in the way",
        });
        continue;
      }
      if (code === "ENOTDIR") {
        result.blocked.push({ path: e.path, reason: "a non-directory is in the way" });
        continue;
      }
      throw fromSystemError(error, `writing ${e.path}`);
    }
    written.add(e.path);
    result.written++;
    tick();
  }
  // A leader written anew (unlink, create) left its unchanged links on the old inode: link again.
  // (a link the plan did not look at is a line both sides share: the scan saw the target's entry)
  for (const e of known.links) {
    if (
      e.link !== undefined &&
      written.has(e.link) &&
      !written.has(e.path) &&
      asScanned(e, { fallback: e }) &&
      linkToLeader(e)
    )
      result.written++;
  }
  for (const e of plan.chmods) {
    // the target's mode already: a hard link of this file was chmodded a moment ago
    if (!asScanned(e, { mode: e.mode })) continue;
    try {
      safeChmod(root, relOf(e), e.mode);
      result.mode_changed++;
    } catch (error) {
      throw fromSystemError(error, `setting mode of ${e.path}`);
    }
  }
  for (const e of plan.dirModes) {
    try {
      safeChmod(root, relOf(e), e.mode);
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw fromSystemError(error, `setting mode of ${e.path}`);
    }
  }
  return result;
}

/**
 * The `paths` (plain text) that are no longer as `scanned` saw them (`stillAsSeen`: absent where
 * the scan had no entry). For a writer that plans from a scan and writes through another door
 * (`rewind`, through the ledger): one lstat per path, one pass over the scan.
 */
export function pathsChangedSince(
  root: string,
  scanned: Manifest,
  paths: readonly string[],
): string[] {
  const wanted = new Set(paths);
  const seen = new Map<string, ManifestEntry>();
  for (const e of scanned.entries)
    if (e.path_b64 === undefined && wanted.has(e.path)) seen.set(e.path, e);
  return paths.filter((p) => !stillAsSeen(root, p, seen.get(p) ?? null));
}

/** Any directory, for `stillAsSeen`. */
const dirEntry: ManifestEntry = { path: "", type: "dir", mode: 0, size: 0, mtime_ms: 0 };

/**
 * Whether the path is still what the scan saw (`seen`; null: absent): same type, and for a file
 * or symlink the same size and mtime (and a file's mode). A directory counts as itself (its
 * mtime moves as the restore deletes inside it). A missing parent counts as absent.
 */
function stillAsSeen(
  root: string,
  rel: WorkspaceRelPath,
  seen: ManifestEntry | null,
  /** Absent will do too (a delete: nothing there to lose). */
  gone = false,
  /** A file's mode that will do too (a chmod to it: the mode of its hard link, set just now). */
  mode?: number,
): boolean {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(
      typeof rel === "string" ? `${root}/${rel}` : Buffer.concat([Buffer.from(`${root}/`), rel]),
    );
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return seen === null || gone;
    throw fromSystemError(error, `checking ${String(rel)} before restoring it`);
  }
  if (seen === null) return false;
  if (seen.type === "dir") return st.isDirectory();
  if (seen.type === "symlink")
    return st.isSymbolicLink() && st.size === seen.size && st.mtimeMs === seen.mtime_ms;
  return (
    st.isFile() &&
    st.size === seen.size &&
    st.mtimeMs === seen.mtime_ms &&
    ((st.mode & 0o7777) === seen.mode || (st.mode & 0o7777) === mode)
  );
}

/**
 * Every object the plan reads (and, when asked, every object of a present file it replaces),
 * checked for presence and size before anything is written: the cost is one stat per file
 * that differs, not per file of the workspace. Contents are re-hashed as they are read.
 */
function missingObjects(store: ObjectStore, plan: RestorePlan, replaced: boolean): MissingObject[] {
  const out: MissingObject[] = [];
  const check = (e: ManifestEntry, side: MissingObject["side"]) => {
    if (e.type !== "file" || e.oid === undefined) return;
    const size = store.sizeOf(e.oid);
    if (size !== e.size)
      out.push({ path: e.path, oid: e.oid, problem: size === null ? "missing" : "size", side });
  };
  for (const e of plan.writes) check(e, "target");
  if (replaced) for (const e of plan.replaced) check(e, "present");
  return out;
}

/**
 * A large file (`LARGE_OBJECT_BYTES`) from the store, never whole in memory: copied chunk by
 * chunk into a temp file beside it (runs of zeros left as holes, so a sparse file stays sparse),
 * hashed on the way, then renamed over it: a corrupt object leaves the old file as it was.
 */
function writeFileStreamed(
  root: string,
  e: ManifestEntry,
  store: ObjectStore,
  verify: boolean,
): void {
  safeWriteFileWith(
    root,
    relOf(e),
    (out) => {
      const size = store.readChunks(
        e.oid ?? "",
        (chunk, position) => {
          if (!isZeroChunk(chunk, chunk.length)) out.write(chunk, position);
        },
        { verify },
      );
      out.truncate(size);
    },
    { mode: e.mode },
  );
}
