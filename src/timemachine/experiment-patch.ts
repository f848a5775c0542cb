import { mkdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import {
  type Clock,
  gitFileMode,
  pathTextOf,
  timeStamp,
  workspacePaths,
  writeFileAtomic,
  writeJsonAtomic,
} from "../core/index.ts";
import { createPatch } from "../diff/index.ts";
import {
  createObjectStore,
  entryPathBytes,
  fsPathOf,
  type ManifestEntry,
  notCaptured,
} from "../store/index.ts";
import { getIssue } from "./issues.ts";
import {
  type CurrentState,
  diffSources,
  type ManifestSource,
  scanSource,
} from "./store-adapter.ts";

type PatchChange = Parameters<typeof createPatch>[0][number];

function gitMode(e: ManifestEntry): string {
  if (e.type === "symlink") return "120000";
  return gitFileMode(e.mode);
}

export interface SavedPatch {
  patch_path: string;
  files: number;
}

/** The work done in the past: a git-format patch (binary-safe) and the paths it touches. */
export interface PastWork {
  patch: string;
  files: string[];
}

/**
 * The past workspace as it is now against the snapshot travelled to, as a git-format patch
 * (created, deleted, modified files, modes, symlinks; binary content as literals). Null when
 * nothing changed. Reads the workspace; writes nothing. What the snapshot or this scan did not
 * capture (`snapshotSkipped`, the scan's own skipped: too large, unreadable, special) is left
 * out, never reported as deleted; names that are not UTF-8 are read and written by their bytes.
 * A travel leaves the present's own files where the snapshot captured nothing: what was changed
 * there against what `present` captured is work too, a new file against the snapshot.
 */
export function diffPastWork(options: {
  root: string;
  /** The snapshot travelled to (its `skipped`: what it did not capture). */
  snapshot: ManifestSource;
  /** The present as its backup captured it (read only when the snapshot skipped something). */
  present?: ManifestSource;
  excludes: readonly string[];
  /** The workspace as scanned a moment ago with these excludes (return's one scan). */
  current?: CurrentState | undefined;
  /**
   * Leave out every path whose state in the workspace this record holds too (recover: the
   * snapshot a half-done travel or return was writing, whose content is kept already).
   */
  heldBy?: ManifestSource | undefined;
  /**
   * With `heldBy`: true when another record holds this path's state in the workspace (`entry`,
   * null for absent): recover's kept past work.
   */
  alsoHeld?: ((path: string, entry: ManifestEntry | null) => boolean) | undefined;
}): PastWork | null {
  const paths = workspacePaths(options.root);
  // By trees when the watch daemon vouches for the scan: only the leaves that differ are read.
  const scan = options.current ?? scanSource(paths.root, options.excludes);
  const diff = diffSources(options.snapshot, scan.source, [
    ...options.snapshot.skipped,
    ...scan.skipped,
  ]);
  const differing = options.heldBy === undefined ? null : pathsDiffering(options.heldBy, scan);
  // Filtered before any content is read: a half-applied restore differs in many paths.
  const alsoHeld = options.alsoHeld ?? (() => false);
  const wanted = (path: string, now: ManifestEntry | null) =>
    differing === null || (differing.has(path) && !alsoHeld(path, now));
  const store = createObjectStore(paths.objects);
  const contentOf = (e: ManifestEntry, side: "before" | "after"): Uint8Array => {
    if (e.type === "symlink") {
      if (side === "after") return readlinkSync(fsPathOf(paths.root, e), { encoding: "buffer" });
      return e.target_b64 === undefined
        ? Buffer.from(e.target ?? "")
        : Buffer.from(e.target_b64, "base64");
    }
    if (side === "before") return store.read(e.oid ?? "");
    return readFileSync(fsPathOf(paths.root, e));
  };
  // The patch names a file by its exact bytes (core's escaped text form); the list shows it.
  const nameOf = (e: ManifestEntry) => pathTextOf(entryPathBytes(e));
  const changes: { change: PatchChange; shown: string }[] = [];
  const isContent = (e: ManifestEntry) => e.type !== "dir";
  /** A file the past has and the patch creates. */
  const created = (e: ManifestEntry) => {
    changes.push({
      shown: e.path,
      change: {
        oldPath: null,
        newPath: nameOf(e),
        before: null,
        after: contentOf(e, "after"),
        newMode: gitMode(e),
      },
    });
  };
  for (const e of diff.added) if (isContent(e) && wanted(e.path, e)) created(e);
  for (const e of diff.removed.filter((r) => isContent(r) && wanted(r.path, null))) {
    changes.push({
      shown: e.path,
      change: {
        oldPath: nameOf(e),
        newPath: null,
        before: contentOf(e, "before"),
        after: null,
        oldMode: gitMode(e),
      },
    });
  }
  // A git patch knows a file's mode only as 100644 or 100755: a change of other bits (0644 to
  // 0600) has no line in it, and a patch of nothing but such a change is one git apply refuses.
  const modes = diff.mode_changed.filter((c) => gitMode(c.before) !== gitMode(c.after));
  for (const c of [...diff.modified, ...modes, ...diff.type_changed]) {
    if (!wanted(c.path, c.after)) continue;
    const was = isContent(c.before);
    const is = isContent(c.after);
    if (!was && !is) continue;
    changes.push({
      shown: c.path,
      change: {
        oldPath: was ? nameOf(c.before) : null,
        newPath: is ? nameOf(c.after) : null,
        before: was ? contentOf(c.before, "before") : null,
        after: is ? contentOf(c.after, "after") : null,
        ...(was ? { oldMode: gitMode(c.before) } : {}),
        ...(is ? { newMode: gitMode(c.after) } : {}),
      },
    });
  }
  const uncaptured = notCaptured(options.snapshot.skipped);
  if (options.present !== undefined && uncaptured.roots.size > 0) {
    // What the present's backup did not capture either, the return leaves as the past has it.
    const sincePresent = diffSources(options.present, scan.source, [
      ...options.present.skipped,
      ...scan.skipped,
    ]);
    const changed = [sincePresent.modified, sincePresent.mode_changed, sincePresent.type_changed];
    for (const e of [...sincePresent.added, ...changed.flat().map((c) => c.after)]) {
      if (isContent(e) && uncaptured.covers(e.path)) created(e);
    }
  }
  if (changes.length === 0) return null;
  changes.sort((a, b) => (a.shown < b.shown ? -1 : a.shown > b.shown ? 1 : 0));
  return {
    patch: createPatch(changes.map((c) => c.change)),
    files: changes.map((c) => c.shown),
  };
}

/**
 * The paths where the workspace differs from `record`. What the record did not capture is not
 * held by it, so the workspace's file there counts as differing.
 */
function pathsDiffering(record: ManifestSource, scan: CurrentState): Set<string> {
  const d = diffSources(record, scan.source, scan.skipped);
  const changed = [...d.modified, ...d.mode_changed, ...d.type_changed].map((c) => c.path);
  return new Set([...d.added.map((e) => e.path), ...d.removed.map((e) => e.path), ...changed]);
}

/**
 * `return --save-patch ISSUE_ID`: the experiment's changes (`diffPastWork`) as a git-format
 * patch in the issue's folder. Memory only (seed: "workspace changes made during experiments
 * are not brought back directly"): nothing ever applies it by itself. Returns null when the
 * experiment changed nothing.
 */
export function saveExperimentPatch(options: {
  root: string;
  issueId: string;
  work: PastWork | null;
  clock: Clock;
}): SavedPatch | null {
  const issue = getIssue({ root: options.root, issueId: options.issueId });
  if (options.work === null) return null;
  const stamp = timeStamp(options.clock.now());
  const file = join(issue.path, `experiment-${stamp}.patch`);
  writeFileAtomic(file, options.work.patch);
  return { patch_path: file, files: options.work.files.length };
}

/**
 * A plain `return` after work done in the past keeps that work (issue 16, class 9: it was
 * dropped without a word): `.timewarp/past-work/<backup_id>.patch`, a git-format patch of the
 * past tree against the snapshot travelled to (`git apply` brings it into the present), beside
 * `<backup_id>.json` naming the snapshot, the time and the files.
 */
export function savePastWork(options: {
  root: string;
  work: PastWork;
  snapshotId: string;
  backupId: string;
  enteredAt: string | null;
  clock: Clock;
}): SavedPatch {
  const dir = join(workspacePaths(options.root).data, PAST_WORK_DIR);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${options.backupId}.patch`);
  writeFileAtomic(file, options.work.patch);
  writeJsonAtomic(join(dir, `${options.backupId}.json`), {
    schema_version: 1,
    snapshot_id: options.snapshotId,
    backup_id: options.backupId,
    entered_at: options.enteredAt,
    saved_at: options.clock.now().toISOString(),
    patch: `${options.backupId}.patch`,
    files: options.work.files,
  });
  return { patch_path: file, files: options.work.files.length };
}

/** Where `savePastWork` keeps the work of each travel, inside `.timewarp/`. */
export const PAST_WORK_DIR = "past-work";
