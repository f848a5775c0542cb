import { diffManifests } from "./diff-manifests.ts";
import { diffTrees, type ManifestTree } from "./diff-trees.ts";
import { parentOf } from "./entry-path.ts";
import { createExcludeMatcher } from "./excludes.ts";
import { MANIFEST_SCHEMA_VERSION, type Manifest, type ManifestEntry } from "./manifest.ts";
import { filterExcluded, notCaptured } from "./plan-restore.ts";
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
