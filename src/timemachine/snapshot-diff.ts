import { isUtf8 } from "node:buffer";
import { lstatSync, readFileSync, readlinkSync } from "node:fs";
import {
  assertSafeToRead,
  ErrorCode,
  effectiveExcludes,
  fromSystemError,
  readConfig,
  TimewarpError,
  workspacePaths,
} from "../core/index.ts";
import { createFilePatch } from "../diff/index.ts";
import {
  createObjectStore,
  entriesAt,
  fsPathOf,
  type ManifestEntry,
  readSnapshot,
} from "../store/index.ts";
import { diffSources, type ManifestSource, recordSource, scanSource } from "./store-adapter.ts";

/** `timewarp snapshot diff A [B] --json`: what changed from A to B (or the workspace now). */
export interface SnapshotDifference {
  from: string;
  /** The other snapshot's id, or `"workspace"`. */
  to: string;
  /** Paths either side did not capture: not compared (neither a difference nor a deletion). */
  skipped: string[];
  added: string[];
  removed: string[];
  modified: string[];
  mode_changed: { path: string; before: string; after: string }[];
  type_changed: { path: string; before: string; after: string }[];
}

/** One side of a comparison: a snapshot's manifest, or the workspace's scan (`present`). */
interface Side {
  source: ManifestSource;
  present: boolean;
}

function snapshotSide(root: string, id: string): Side {
  return { source: recordSource(root, readSnapshot(root, id)), present: false };
}

/** The workspace now, hashed only: the stat cache is read, never written, so a diff cannot change the next snapshot. */
function presentSide(root: string): Side {
  const paths = workspacePaths(root);
  const scan = scanSource(paths.root, effectiveExcludes(readConfig(paths.config)));
  return { source: scan.source, present: true };
}

function sides(root: string, from: string, to: string | undefined): [Side, Side] {
  const a = snapshotSide(root, from);
  return [a, to === undefined ? presentSide(root) : snapshotSide(root, to)];
}

/** A side's entry at `path`: by the tree's keys (a leaf or two read) unless a name is not plain. */
function entryOf(side: Side, path: string): ManifestEntry | undefined {
  const byTree = entriesAt(side.source.tree(), [path]);
  if (byTree !== null) return byTree[0];
  return side.source.manifest().entries.find((e) => e.path === path);
}

/**
 * What changed from snapshot `from` to snapshot `to` (default: the workspace now), path by path,
 * as `timewarp snapshot diff` reports it. Reads only. SNAPSHOT_NOT_FOUND for an unknown id.
 */
export function diffSnapshots(options: {
  root: string;
  from: string;
  to?: string;
}): SnapshotDifference {
  const [a, b] = sides(options.root, options.from, options.to);
  const skipped = [...a.source.skipped, ...b.source.skipped];
  const d = diffSources(a.source, b.source, skipped);
  return {
    from: options.from,
    to: options.to ?? "workspace",
    skipped: [...new Set(skipped.map((s) => s.path))].sort(),
    added: d.added.map((e) => e.path),
    removed: d.removed.map((e) => e.path),
    modified: d.modified.map((c) => c.path),
    mode_changed: d.mode_changed.map((c) => ({
      path: c.path,
      before: c.before.mode.toString(8),
      after: c.after.mode.toString(8),
    })),
    type_changed: d.type_changed.map((c) => ({
      path: c.path,
      before: c.before.type,
      after: c.after.type,
    })),
  };
}

/** One path's text diff between two snapshots (or a snapshot and the workspace). */
export interface SnapshotFileDiff {
  from: string;
  to: string;
  path: string;
  /** A git-format diff of the path (`""` when its content and mode are the same on both sides). */
  diff: string;
  /** Why `diff` is empty though the sides differ: binary content, or a side past the size cap. */
  omitted: "binary" | "too_large" | "directory" | null;
  before: { type: string; size: number } | null;
  after: { type: string; size: number } | null;
}

/** Past this size a side is not diffed as text (the page would not show it usefully anyway). */
const MAX_DIFF_BYTES = 4 * 1024 * 1024;

/**
 * The text diff of one path from snapshot `from` to `to` (default: the workspace now), in git's
 * format. NOT_FOUND when neither side has the path (or a side did not capture it).
 */
export function diffSnapshotFile(options: {
  root: string;
  from: string;
  to?: string;
  path: string;
}): SnapshotFileDiff {
  const root = workspacePaths(options.root).root;
  const [a, b] = sides(root, options.from, options.to);
  const ea = entryOf(a, options.path);
  const eb = entryOf(b, options.path);
  if (ea === undefined && eb === undefined)
    throw new TimewarpError(
      ErrorCode.NOT_FOUND,
      `${options.path} is in neither ${options.from} nor ${options.to ?? "the workspace"}`,
      { data: { path: options.path } },
    );
  const base = {
    from: options.from,
    to: options.to ?? "workspace",
    path: options.path,
    before: ea === undefined ? null : { type: ea.type, size: ea.size },
    after: eb === undefined ? null : { type: eb.type, size: eb.size },
  };
  const why = omission(ea, eb);
  if (why !== null) return { ...base, diff: "", omitted: why };
  const before = ea === undefined ? null : contentOf(root, ea, a.present);
  const after = eb === undefined ? null : contentOf(root, eb, b.present);
  if ((before !== null && !isText(before)) || (after !== null && !isText(after)))
    return { ...base, diff: "", omitted: "binary" };
  const diff = createFilePatch({
    oldPath: options.path,
    newPath: options.path,
    before,
    after,
    oldMode: ea === undefined ? undefined : gitMode(ea),
    newMode: eb === undefined ? undefined : gitMode(eb),
  });
  return { ...base, diff, omitted: null };
}

function omission(
  ea: ManifestEntry | undefined,
  eb: ManifestEntry | undefined,
): SnapshotFileDiff["omitted"] {
  if (ea?.type === "dir" || eb?.type === "dir") return "directory";
  if ((ea?.size ?? 0) > MAX_DIFF_BYTES || (eb?.size ?? 0) > MAX_DIFF_BYTES) return "too_large";
  return null;
}

function isText(bytes: Uint8Array): boolean {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const nul = buf.indexOf(0);
  return (nul === -1 || nul >= 8000) && isUtf8(buf);
}

function gitMode(e: ManifestEntry): string {
  if (e.type === "symlink") return "120000";
  return (e.mode & 0o111) !== 0 ? "100755" : "100644";
}

/** A file's bytes or a symlink's target: from the object store, or (the workspace) from disk. */
function contentOf(root: string, e: ManifestEntry, present: boolean): Buffer {
  if (e.type === "symlink" && !present)
    return e.target_b64 === undefined
      ? Buffer.from(e.target ?? "")
      : Buffer.from(e.target_b64, "base64");
  if (!present) return createObjectStore(workspacePaths(root).objects).read(e.oid ?? "");
  // The path came from the scan a moment ago; read it as a write would be checked (no symlink
  // on the way), so a parent swapped for a link since cannot make the page read outside.
  assertSafeToRead(root, e.path_b64 === undefined ? e.path : Buffer.from(e.path_b64, "base64"));
  const file = fsPathOf(root, e);
  try {
    if (lstatSync(file).isSymbolicLink()) return Buffer.from(readlinkSync(file, "buffer"));
    return readFileSync(file);
  } catch (error) {
    throw fromSystemError(error, `reading ${e.path}`);
  }
}
