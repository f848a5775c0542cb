import { diffTrees, type ManifestTree } from "./diff-trees.ts";
import { entryKey } from "./entry-path.ts";
import { MANIFEST_SCHEMA_VERSION, type Manifest, type ManifestEntry } from "./manifest.ts";
import { notCaptured } from "./plan-restore.ts";

export interface ManifestChange {
  path: string;
  before: ManifestEntry;
  after: ManifestEntry;
}

/** What changed from manifest `a` to manifest `b`. Each path appears in at most one list. */
export interface ManifestDiff {
  added: ManifestEntry[];
  removed: ManifestEntry[];
  /**
   * Same type, different content (file oid, symlink target), or a file that became or stopped
   * being a hard link of another (`link`). A mode change may come with it.
   */
  modified: ManifestChange[];
  /** Same type and content, only the permission bits differ. */
  mode_changed: ManifestChange[];
  /** A file became a directory, a symlink a file, … */
  type_changed: ManifestChange[];
}

function sameContent(a: ManifestEntry, b: ManifestEntry): boolean {
  if (a.type === "file") return a.oid === b.oid && a.link === b.link && a.link_b64 === b.link_b64;
  if (a.type === "symlink") return a.target === b.target && a.target_b64 === b.target_b64;
  return true;
}

/**
 * The difference of two manifests (pure). Directories count only for add/remove/mode/type.
 * `skipped`: paths either side's record did not capture (its `skipped`, or a scan's); nothing
 * at or below them is compared (a file a snapshot skipped is not "removed" from it).
 */
export function diffManifests(
  a: Manifest,
  b: Manifest,
  options: { skipped?: readonly { path: string }[] } = {},
): ManifestDiff {
  const skip = notCaptured(options.skipped ?? []);
  const ours = (e: ManifestEntry) => !skip.covers(e.path);
  const out: ManifestDiff = {
    added: [],
    removed: [],
    modified: [],
    mode_changed: [],
    type_changed: [],
  };
  const before = new Map<string, ManifestEntry>();
  for (const e of a.entries) if (ours(e)) before.set(entryKey(e), e);
  for (const e of b.entries) {
    if (!ours(e)) continue;
    const key = entryKey(e);
    const old = before.get(key);
    if (old === undefined) {
      out.added.push(e);
      continue;
    }
    before.delete(key);
    if (old.type !== e.type) out.type_changed.push({ path: e.path, before: old, after: e });
    else if (!sameContent(old, e)) out.modified.push({ path: e.path, before: old, after: e });
    else if (old.mode !== e.mode && e.type !== "symlink")
      out.mode_changed.push({ path: e.path, before: old, after: e });
  }
  for (const e of before.values()) out.removed.push(e);
  return out;
}

/**
 * `diffManifests` of two stored trees, reading only the leaves that differ (a line both hold is
 * the same entry on both sides, so it adds nothing). Null when a name is not plain UTF-8 (decode
 * both and use `diffManifests`).
 */
export function diffManifestTrees(
  a: ManifestTree,
  b: ManifestTree,
  options: { skipped?: readonly { path: string }[] } = {},
): ManifestDiff | null {
  const d = diffTrees(a, b);
  if (d === null) return null;
  return diffManifests(
    { schema_version: MANIFEST_SCHEMA_VERSION, entries: d.a },
    { schema_version: MANIFEST_SCHEMA_VERSION, entries: d.b },
    options,
  );
}

/** True when the diff holds no change at all. */
export function isEmptyDiff(diff: ManifestDiff): boolean {
  return (
    diff.added.length === 0 &&
    diff.removed.length === 0 &&
    diff.modified.length === 0 &&
    diff.mode_changed.length === 0 &&
    diff.type_changed.length === 0
  );
}
