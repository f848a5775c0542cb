import { lstatSync, readlinkSync, type Stats } from "node:fs";
import { join } from "node:path";
import { errnoCode, gitBlobId } from "../core/index.ts";
import { diffManifests } from "./diff-manifests.ts";
import { diffTrees, entriesAt, type ManifestTree } from "./diff-trees.ts";
import { parentOf } from "./entry-path.ts";
import { createExcludeMatcher } from "./excludes.ts";
import { MANIFEST_SCHEMA_VERSION, type Manifest, type ManifestEntry } from "./manifest.ts";
import { filterExcluded, notCaptured } from "./plan-restore.ts";
import { parentsAreDirs, readFileStable } from "./read-stable.ts";
import { type SkippedPath, scanWorkspace } from "./scan-workspace.ts";
import type { StatCache } from "./stat-cache.ts";

export interface VerifyOptions {
  /** Excludes in force: excluded paths are neither expected nor checked. */
  excludes: readonly string[];
  /**
   * Trust stat data that matches this cache (and is not racy) instead of re-reading. Without
   * it every file is read and hashed: the check is then exact regardless of timestamps.
   */
  statCache?: StatCache;
  /** Ask the workspace's watch daemon what changed since `statCache` (see `ScanOptions`). */
  useWatcher?: boolean;
  /**
   * Paths the expected manifest's record did not capture (its `skipped`): neither they nor
   * anything below them is compared, whatever the workspace holds there now.
   */
  skipped?: readonly SkippedPath[];
}

export type DifferenceKind = "missing" | "extra" | "content" | "mode" | "type" | "unreadable";

export interface WorkspaceDifference {
  path: string;
  kind: DifferenceKind;
}

export interface VerifyResult {
  /** True when the workspace holds exactly the manifest (paths, types, contents, modes). */
  ok: boolean;
  differences: WorkspaceDifference[];
  /** Entries compared. */
  checked: number;
}

/**
 * Compare the workspace at `root` with `manifest`, exactly: every path, type, file content
 * (by blob id), symlink target and mode (mtimes are not compared). Used by the time machine's
 * `return` to prove the present came back. What the manifest's record did not capture
 * (`options.skipped`) is not compared. A path the scan cannot read now is not compared either,
 * unless the manifest captured something there (then it is a difference, `unreadable`: "ok" is
 * never claimed without proof).
 */
export function verifyWorkspace(
  root: string,
  manifest: Manifest,
  options: VerifyOptions,
): VerifyResult {
  const expected = filterExcluded(manifest, createExcludeMatcher(options.excludes)).kept;
  const scan = scanWorkspace(root, {
    excludes: options.excludes,
    statCache: options.statCache,
    ...(options.useWatcher === true ? { useWatcher: true } : {}),
    leaveAlone: options.skipped,
  });
  return compare(expected, scan.manifest.entries, scan.skipped, options.skipped ?? [], 0);
}

/**
 * `verifyWorkspace` with both sides as trees: the expected one (a stored manifest) and the
 * workspace's as a scan just found it (`current`, a fresh delta scan: the stat cache's answer,
 * with what the watch daemon says changed re-read). Equal roots are equal manifests and nothing
 * is read; otherwise only the leaves that differ are decoded. Null when a name is not plain
 * UTF-8 (decode and use `verifyWorkspace`).
 */
export function verifyWorkspaceTree(
  expected: ManifestTree,
  current: { tree: ManifestTree; skipped: SkippedPath[] },
  options: Pick<VerifyOptions, "excludes" | "skipped">,
): VerifyResult | null {
  const d = diffTrees(expected, current.tree);
  if (d === null) return null;
  const differing: Manifest = { schema_version: MANIFEST_SCHEMA_VERSION, entries: d.a };
  const kept = filterExcluded(differing, createExcludeMatcher(options.excludes)).kept;
  return compare(kept, d.b, current.skipped, options.skipped ?? [], d.same);
}

/**
 * `verifyWorkspaceTree` for a workspace known to match `expected` everywhere but at `paths`: a
 * restore planned from a scan vouched for by the watch daemon, whose own writes and every change
 * the daemon saw since that scan are `paths`. Only those are read (type, content by blob id,
 * symlink target, mode, hard link to the expected leader) and compared with the expected
 * entries there; `alsoChecked` counts the entries the scan found equal. Null when this cannot
 * vouch for the answer, so the caller verifies the whole workspace: a directory at one of the
 * paths (on disk or expected: what lies below it is not listed), a path that cannot be read
 * stably, is special, too large, has other hard links than expected, or a name that is not
 * plain UTF-8.
 */
export function verifyWorkspacePaths(
  root: string,
  expected: ManifestTree,
  options: Pick<VerifyOptions, "excludes" | "skipped"> & {
    /** The paths where the scan found the workspace and `expected` to differ. */
    planned: readonly string[];
    /** The paths changed since that scan (the restore's own writes among them). */
    changed: readonly string[];
    /** Entries the scan found equal. */
    same: number;
    /** What the scan the restore was planned from could not read. */
    scanSkipped: SkippedPath[];
    maxFileBytes: number;
  },
): VerifyResult | null {
  const excluded = createExcludeMatcher(options.excludes);
  const wanted = new Set<string>();
  for (const raw of [...options.planned, ...options.changed]) {
    const p = raw.endsWith("/") ? raw.slice(0, -1) : raw;
    if (p === "" || p.includes("\uFFFD")) return null;
    wanted.add(p);
  }
  const asManifest = (entries: ManifestEntry[]): Manifest => ({
    schema_version: MANIFEST_SCHEMA_VERSION,
    entries,
  });
  const sorted = [...wanted].sort();
  const at = entriesAt(expected, sorted);
  if (at === null) return null;
  const planned = new Set(options.planned);
  const kept = filterExcluded(asManifest(at), excluded).kept;
  const byPath = new Map(kept.map((e) => [e.path, e]));
  const dirOk = new Map<string, boolean>();
  // What is excluded (or `.timewarp/`) is neither expected nor read; a directory-only pattern
  // needs to know the path is a directory now.
  const candidates = sorted.map((path) => ({
    path,
    type: isDirOnDisk(root, path, dirOk) ? ("dir" as const) : ("file" as const),
    mode: 0,
    size: 0,
    mtime_ms: 0,
  }));
  const ours = filterExcluded(asManifest(candidates), excluded).kept;
  const found: ManifestEntry[] = [];
  for (const { path } of ours) {
    if (path === ".timewarp" || path.startsWith(".timewarp/")) continue;
    const want = byPath.get(path);
    const now = entryOnDisk(root, path, want, dirOk, options.maxFileBytes);
    if (now === undefined) return null;
    // A directory the scan did not find differing, reported since: what lies below it (moved
    // in whole, say) is not listed anywhere. One the scan listed, it compared entry by entry.
    const isDir = now?.type === "dir" || want?.type === "dir";
    if (isDir && !planned.has(path)) return null;
    if (now !== null) found.push(now);
  }
  // An entry at a path only the daemon reported was counted equal by the scan: count it once.
  const recounted = kept.filter((e) => !planned.has(e.path)).length;
  return compare(
    kept,
    found,
    options.scanSkipped,
    options.skipped ?? [],
    Math.max(0, options.same - recounted),
  );
}

/**
 * The manifest entry a walk would make of `path` now: null when a walk would not see it (gone,
 * or below something that is no longer a real directory), undefined when only a walk can say.
 */
function entryOnDisk(
  root: string,
  path: string,
  expected: ManifestEntry | undefined,
  dirOk: Map<string, boolean>,
  maxFileBytes: number,
): ManifestEntry | null | undefined {
  if (!parentsAreDirs(root, path, dirOk)) return null;
  const full = join(root, path);
  let st: Stats;
  try {
    st = lstatSync(full);
  } catch (error) {
    const code = errnoCode(error);
    return code === "ENOENT" || code === "ENOTDIR" ? null : undefined;
  }
  const mode = st.mode & 0o7777;
  if (st.isDirectory()) return { path, type: "dir", mode, size: 0, mtime_ms: st.mtimeMs };
  if (st.isSymbolicLink()) {
    let target: Buffer;
    try {
      target = readlinkSync(full, { encoding: "buffer" });
    } catch {
      return undefined;
    }
    const text = target.toString("utf8");
    if (!Buffer.from(text, "utf8").equals(target)) return undefined;
    return {
      path,
      type: "symlink",
      mode,
      size: target.length,
      mtime_ms: st.mtimeMs,
      oid: gitBlobId(target),
      target: text,
    };
  }
  if (!st.isFile() || st.size > maxFileBytes) return undefined;
  const got = readFileStable(full);
  if (got === null || "skip" in got) return undefined;
  const link = linkOf(root, got.stat, expected);
  if (link === undefined) return undefined;
  return {
    path,
    type: "file",
    mode: got.stat.mode & 0o7777,
    size: got.stat.size,
    mtime_ms: got.stat.mtimeMs,
    oid: gitBlobId(got.bytes),
    ...(link === null ? {} : { link }),
  };
}

/**
 * The `link` a walk would record for a file: null for a file of one name; the expected leader
 * when it is that leader's inode; undefined (walk) for any other hard link.
 */
function linkOf(
  root: string,
  st: Stats,
  expected: ManifestEntry | undefined,
): string | null | undefined {
  if (st.nlink <= 1) return null;
  const leader = expected?.link;
  if (leader === undefined || expected?.link_b64 !== undefined) return undefined;
  try {
    const l = lstatSync(join(root, leader));
    return l.ino === st.ino && l.dev === st.dev ? leader : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a walk would find a directory at `path` (an error says no: the read decides). */
function isDirOnDisk(root: string, path: string, dirOk: Map<string, boolean>): boolean {
  try {
    return parentsAreDirs(root, path, dirOk) && lstatSync(join(root, path)).isDirectory();
  } catch {
    return false;
  }
}

function compare(
  allExpected: ManifestEntry[],
  allFound: ManifestEntry[],
  skipped: SkippedPath[],
  notInExpected: readonly SkippedPath[],
  alsoChecked: number,
): VerifyResult {
  // What the expected record did not capture is not compared at all.
  const theirs = notCaptured(notInExpected);
  const expected = allExpected.filter((e) => !theirs.covers(e.path));
  const found = allFound.filter((e) => !theirs.covers(e.path));
  const diff = diffManifests(
    { schema_version: MANIFEST_SCHEMA_VERSION, entries: expected },
    { schema_version: MANIFEST_SCHEMA_VERSION, entries: found },
  );
  const all: WorkspaceDifference[] = [
    ...diff.removed.map((e) => ({ path: e.path, kind: "missing" as const })),
    ...diff.added.map((e) => ({ path: e.path, kind: "extra" as const })),
    ...diff.modified.map((c) => ({ path: c.path, kind: "content" as const })),
    ...diff.mode_changed.map((c) => ({ path: c.path, kind: "mode" as const })),
    ...diff.type_changed.map((c) => ({ path: c.path, kind: "type" as const })),
  ];
  // A path the scan cannot read now is left out; it is a difference (`unreadable`) only when
  // something the expected manifest captured at or below it did not come back as it was.
  const now = new Set(skipped.filter((s) => !theirs.covers(s.path)).map((s) => s.path));
  const unreadable = new Set<string>();
  const differences = all.filter((d) => {
    const root = coveringRoot(now, d.path);
    if (root === null) return true;
    if (d.kind !== "extra") unreadable.add(root);
    return false;
  });
  for (const path of unreadable) differences.push({ path, kind: "unreadable" });
  differences.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { ok: differences.length === 0, differences, checked: expected.length + alsoChecked };
}

/** The member of `roots` that is `path` or one of its ancestors, or null. */
function coveringRoot(roots: ReadonlySet<string>, path: string): string | null {
  if (roots.size === 0) return null;
  for (let p = path; p !== ""; p = parentOf(p)) if (roots.has(p)) return p;
  return null;
}
