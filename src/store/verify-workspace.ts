import { diffManifests } from "./diff-manifests.ts";
import { createExcludeMatcher } from "./excludes.ts";
import {
  diffManifestTexts,
  MANIFEST_SCHEMA_VERSION,
  type Manifest,
  type ManifestEntry,
} from "./manifest.ts";
import { filterExcluded } from "./plan-restore.ts";
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
 * `return` to prove the present came back. A present path the scan cannot read counts as a
 * difference (`unreadable`), so "ok" is never claimed without proof.
 */
export function verifyWorkspace(
  root: string,
  manifest: Manifest,
  options: VerifyOptions,
): VerifyResult {
  const expected = filterExcluded(manifest, createExcludeMatcher(options.excludes)).kept;
  const scan = scanWorkspace(root, {
    excludes: options.excludes,
    ...(options.statCache === undefined ? {} : { statCache: options.statCache }),
    ...(options.useWatcher === true ? { useWatcher: true } : {}),
  });
  return compare(expected, scan.manifest.entries, scan.skipped, 0);
}

/**
 * `verifyWorkspace` with both sides as canonical manifest texts: the expected one (a stored
 * manifest) and the workspace's as a scan just found it (`current`). Only differing lines are
 * decoded. Null when a text is not canonical plain UTF-8 (decode and use `verifyWorkspace`).
 */
export function verifyWorkspaceText(
  expected: Buffer,
  current: { text: Buffer; skipped: SkippedPath[] },
  options: Pick<VerifyOptions, "excludes">,
): VerifyResult | null {
  const d = diffManifestTexts(expected, current.text);
  if (d === null) return null;
  const differing: Manifest = { schema_version: MANIFEST_SCHEMA_VERSION, entries: d.a };
  // A line the workspace's scan shares is not excluded: the scan ran with these excludes.
  const kept = filterExcluded(differing, createExcludeMatcher(options.excludes)).kept;
  return compare(kept, d.b, current.skipped, d.same);
}

function compare(
  expected: ManifestEntry[],
  found: ManifestEntry[],
  skipped: SkippedPath[],
  alsoChecked: number,
): VerifyResult {
  const diff = diffManifests(
    { schema_version: MANIFEST_SCHEMA_VERSION, entries: expected },
    { schema_version: MANIFEST_SCHEMA_VERSION, entries: found },
  );
  const differences: WorkspaceDifference[] = [
    ...diff.removed.map((e) => ({ path: e.path, kind: "missing" as const })),
    ...diff.added.map((e) => ({ path: e.path, kind: "extra" as const })),
    ...diff.modified.map((c) => ({ path: c.path, kind: "content" as const })),
    ...diff.mode_changed.map((c) => ({ path: c.path, kind: "mode" as const })),
    ...diff.type_changed.map((c) => ({ path: c.path, kind: "type" as const })),
    ...skipped.map((s) => ({ path: s.path, kind: "unreadable" as const })),
  ];
  differences.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { ok: differences.length === 0, differences, checked: expected.length + alsoChecked };
}
