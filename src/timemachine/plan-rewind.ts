import { pathTextOf } from "../core/index.ts";
import type { PathImage } from "../ledger/index.ts";
import {
  createExcludeMatcher,
  diffManifests,
  entryPathBytes,
  filterExcluded,
  type Manifest,
  type ManifestDiff,
  type ManifestEntry,
  type SkippedPath,
} from "../store/index.ts";

/** One path a change touches, as a listing shows it. */
export interface PathChange {
  path: string;
  change: "added" | "deleted" | "modified" | "mode" | "type";
}

/** A tree as a scan or a record has it: the manifest and what it did not capture. */
export interface TreeState {
  manifest: Manifest;
  skipped: readonly SkippedPath[];
}

/**
 * What a rewind does to bring the workspace (`present`) back to a checkpoint (`target`): the
 * ledger's part (files and symlinks to write or delete, directories to create and remove) and
 * the exact permission bits to set afterwards (the ledger knows only 644/755).
 */
export interface RewindPlan {
  files: PathImage[];
  /** Parents first. */
  makeDirs: string[];
  /** Deepest first; each only if it is empty once the plan's deletions are done. */
  removeDirs: string[];
  /** Files and directories the target has, with their exact permission bits. */
  modes: { path: string; mode: number }[];
  /** What changes, path by path, as the workspace will see it. */
  changes: PathChange[];
  /** Paths the plan will not touch, and why (version-control folders). */
  leftAlone: { path: string; reason: string }[];
}

/**
 * Version-control folders are never touched by a rewind, whatever the excludes say: one
 * rewritten `.git/index` or ref would lose the user's repository state.
 */
const VCS_PART = /(?:^|\/)(?:\.git|\.hg|\.svn|\.jj|\.bzr)(?:\/|$)/;

/** The ledger's name for an entry's path: its exact bytes as text (surrogate escapes). */
const relOf = (e: ManifestEntry): string =>
  e.path_b64 === undefined ? e.path : pathTextOf(entryPathBytes(e));

/** A file's git mode: executable or not (what the ledger writes). */
const gitMode = (e: ManifestEntry): "100644" | "100755" =>
  (e.mode & 0o111) !== 0 ? "100755" : "100644";

const linkTarget = (e: ManifestEntry): Uint8Array =>
  e.target_b64 !== undefined ? Buffer.from(e.target_b64, "base64") : Buffer.from(e.target ?? "");

/** Without `link`: a rewind restores contents; which names share an inode it does not. */
function withoutLinks(manifest: Manifest): Manifest {
  return {
    schema_version: manifest.schema_version,
    entries: manifest.entries.map((e) => {
      if (e.link === undefined && e.link_b64 === undefined) return e;
      const { link: _link, link_b64: _b64, ...rest } = e;
      return rest;
    }),
  };
}

/** The entries `excludes` do not cover, without `link`. */
function withoutExcluded(manifest: Manifest, excludes: readonly string[]): Manifest {
  const kept = filterExcluded(manifest, createExcludeMatcher(excludes)).kept;
  return withoutLinks({ schema_version: manifest.schema_version, entries: kept });
}

/** A manifest diff, path by path (pure). */
export function summarizeDiff(diff: ManifestDiff): PathChange[] {
  const out: PathChange[] = [
    ...diff.added.map((e) => ({ path: e.path, change: "added" as const })),
    ...diff.removed.map((e) => ({ path: e.path, change: "deleted" as const })),
    ...diff.modified.map((c) => ({ path: c.path, change: "modified" as const })),
    ...diff.mode_changed.map((c) => ({ path: c.path, change: "mode" as const })),
    ...diff.type_changed.map((c) => ({ path: c.path, change: "type" as const })),
  ];
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The files that changed from one tree to the next (pure): directories only when they changed
 * type; neither what either side did not capture nor what `excludes` cover is compared.
 */
export function changedPaths(
  from: TreeState,
  to: TreeState,
  excludes: readonly string[],
): PathChange[] {
  const diff = diffManifests(
    withoutExcluded(from.manifest, excludes),
    withoutExcluded(to.manifest, excludes),
    {
      skipped: [...from.skipped, ...to.skipped],
    },
  );
  return summarizeDiff({
    ...diff,
    added: diff.added.filter((e) => e.type !== "dir"),
    removed: diff.removed.filter((e) => e.type !== "dir"),
    mode_changed: diff.mode_changed.filter((c) => c.after.type !== "dir"),
  });
}

/**
 * Plan a rewind (pure): turn `present` into `target` — never at or below what either did not
 * capture, never what `excludes` cover (both sides: the config's now and the checkpoint's), never
 * a version-control folder.
 */
export function planRewind(
  present: TreeState,
  target: TreeState,
  excludes: readonly string[],
): RewindPlan {
  const diff = diffManifests(
    withoutExcluded(present.manifest, excludes),
    withoutExcluded(target.manifest, excludes),
    { skipped: [...present.skipped, ...target.skipped] },
  );
  const plan: RewindPlan = {
    files: [],
    makeDirs: [],
    removeDirs: [],
    modes: [],
    changes: [],
    leftAlone: [],
  };
  const vcs = (e: ManifestEntry) => {
    if (!VCS_PART.test(e.path)) return false;
    plan.leftAlone.push({ path: e.path, reason: "version-control folder" });
    return true;
  };
  /** Bring `t`, the target's entry, into being (its path holds nothing, or what goes first). */
  const make = (t: ManifestEntry) => {
    const path = relOf(t);
    if (t.type === "dir") plan.makeDirs.push(path);
    else if (t.type === "symlink")
      plan.files.push({ path, image: { target: linkTarget(t), mode: "120000" } });
    else plan.files.push({ path, image: { oid: t.oid ?? "", mode: gitMode(t) } });
    if (t.type !== "symlink") plan.modes.push({ path, mode: t.mode });
  };
  /** Take `p`, the present's entry, away. */
  const drop = (p: ManifestEntry) => {
    if (p.type === "dir") plan.removeDirs.push(relOf(p));
    else plan.files.push({ path: relOf(p), image: null });
  };
  for (const t of diff.added) if (!vcs(t)) make(t);
  for (const p of diff.removed) if (!vcs(p)) drop(p);
  for (const c of diff.modified) if (!vcs(c.after)) make(c.after);
  for (const c of diff.mode_changed) {
    if (vcs(c.after)) continue;
    // The executable bit is the ledger's (a write of the same bytes); the rest is a chmod.
    if (c.after.type === "file" && gitMode(c.before) !== gitMode(c.after)) make(c.after);
    else plan.modes.push({ path: relOf(c.after), mode: c.after.mode });
  }
  for (const c of diff.type_changed) {
    if (vcs(c.after)) continue;
    // A file or symlink is replaced in place by the write; a directory goes (or comes) apart.
    if (c.before.type === "dir" || c.after.type === "dir") drop(c.before);
    make(c.after);
  }
  const depth = (p: string) => p.split("/").length;
  plan.makeDirs.sort((a, b) => depth(a) - depth(b));
  plan.removeDirs.sort((a, b) => depth(b) - depth(a));
  const protectedPaths = new Set(plan.leftAlone.map((l) => l.path));
  plan.changes = summarizeDiff(diff).filter((c) => !protectedPaths.has(c.path));
  return plan;
}
