import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gitBlobId } from "../core/index.ts";
import {
  decodeStoredManifest,
  entryLine,
  type ManifestEntry,
  readManifestTextFile,
  spliceManifestText,
} from "./manifest.ts";
import { type NodeStore, nodeStoreOf } from "./manifest-nodes.ts";
import { buildTree, type LineEdit, spliceTree, type TreeRoot } from "./manifest-tree.ts";
import type { ObjectStore } from "./object-store.ts";
import {
  revisitRoots,
  type ScanOptions,
  type SkippedPath,
  scanScope,
  scanWorkspace,
} from "./scan-workspace.ts";
import {
  type CachedStat,
  discardStatCache,
  type ManifestRef,
  openParts,
  readManifestRef,
  type ScanIndex,
  writeStatCacheUpdate,
} from "./stat-cache.ts";
import { byCodeUnits } from "./stat-cache-format.ts";
import { DamagedCache, type StatCacheParts } from "./stat-cache-parts.ts";
import { type WatchedChanges, watchedChanges } from "./watch.ts";

/**
 * The incremental snapshot that costs what changed (`deltaScan`): where `scanWorkspace`'s
 * incremental mode still decodes the whole stat cache, builds every manifest entry and encodes
 * the manifest anew (O(files) work, ~30 ms at 10k files), this path works on the bytes of the
 * stat cache and of the last manifest: it finds the entries below the changed paths by binary
 * search, scans only those (with `scanWorkspace` over that slice of the index), and splices the
 * results into both files, copying the rest in runs.
 */

export interface DeltaScanOptions {
  excludes: readonly string[];
  maxFileBytes?: number;
  /** Where new contents go; without it they are only hashed. */
  store?: ObjectStore;
  /** The workspace's stat cache file. */
  statCachePath: string;
  /** The data directory the index's manifest file is relative to. */
  dataDir: string;
  clockDir?: string;
  onProgress?: ScanOptions["onProgress"];
  beforeRead?: ScanOptions["beforeRead"];
  /** The changed paths, when the caller knows them; else the watch daemon is asked. */
  changed?: readonly string[];
  /**
   * Only the text is wanted (`scanWorkspaceText`): an edited text is not hashed up front to
   * see whether it came back to the last manifest (`hash` is computed when read).
   */
  textOnly?: boolean;
  /**
   * Where the nodes of the spliced tree go (default: the workspace's node store). A scan that
   * must write nothing (a restore's or verify's comparison) passes one in memory.
   */
  nodes?: NodeStore;
}

/** What a scan counted over the whole workspace, and the paths it skipped. */
export interface ScanCounts {
  files: number;
  dirs: number;
  symlinks: number;
  bytes: number;
  skipped: SkippedPath[];
  rehashed: number;
  objects_written: number;
}

/** What a delta scan found; the counts are the whole workspace's. */
export interface DeltaScan extends ScanCounts {
  /** The manifest's hash. */
  hash: string;
  /**
   * Its canonical text, for `textOnly`; undefined when the workspace is as the last manifest
   * (`known`) or when a tree was made (`root`).
   */
  text?: Buffer;
  /** The root of the new manifest's tree (its nodes are stored already). */
  root?: Buffer;
  /** The stored manifest file this scan found unchanged, and its bytes. */
  known?: ManifestRef;
  stored?: Buffer;
  /** Nothing moved and the watch token is the same: the cache on disk needs no rewrite. */
  quiet: boolean;
  /** Record the scan in the stat cache, naming `manifest` as the file that holds its manifest. */
  writeCache(manifest: ManifestRef): void;
}

/** Why the delta path was not taken, and the daemon's answer when one was asked. */
export interface DeltaFallback {
  fallback: string;
  watched?: WatchedChanges;
}

/**
 * Scan the workspace at `root` by the delta path when it can vouch for the result: a stat cache
 * that is a complete index of the same scope (plain names) recording the manifest file of its
 * scan, and a list of changed paths (given, or the watch daemon's). Otherwise a
 * `DeltaFallback`, and the caller scans the usual way (with the daemon's answer, if one came).
 * Only the cache's segments holding a revisited path (and their directories) are read.
 */
export function deltaScan(root: string, options: DeltaScanOptions): DeltaScan | DeltaFallback {
  const parts = openParts(options.statCachePath);
  if (parts === null) return { fallback: "no stat cache" };
  try {
    return deltaScanParts(root, parts, options);
  } catch (error) {
    if (!(error instanceof DamagedCache)) throw error;
    discardStatCache(options.statCachePath, error.message);
    return { fallback: "the stat cache was damaged" };
  } finally {
    parts.close();
  }
}

function deltaScanParts(
  root: string,
  parts: StatCacheParts,
  options: DeltaScanOptions,
): DeltaScan | DeltaFallback {
  const scope = scanScope(options.excludes);
  const index = parts.index;
  if (index === undefined) return { fallback: "no stat cache index" };
  let changed = options.changed;
  let watched: WatchedChanges | undefined;
  if (changed === undefined) {
    if (process.env.TIMEWARP_WATCH === "0") return { fallback: "TIMEWARP_WATCH=0" };
    watched = watchedChanges(root, parts.watchToken, scope);
    changed = watched.changed;
  }
  const fallback = (why: string): DeltaFallback => ({ fallback: why, watched });
  if (changed === undefined) return fallback(watched?.reason ?? "no change list");
  if (index.scope !== scope) return fallback("the index has other excludes");
  if (index.manifest === undefined) return fallback("the index records no manifest file");
  if (!parts.plain) return fallback("names that are not plain UTF-8");
  const roots = revisitRoots({ ...index, others: [] }, changed, parts.racy);
  if (roots === undefined) return fallback("the root or a name that is not plain UTF-8 changed");
  const slice = sliceOf(parts, roots);
  const scan = scanWorkspace(root, {
    excludes: options.excludes,
    maxFileBytes: options.maxFileBytes,
    statCache: {
      scanStartMs: parts.scanStartMs,
      entries: slice.files,
      index: { ...index, others: slice.others },
    },
    store: options.store,
    changed,
    clockDir: options.clockDir,
    onProgress: options.onProgress,
    beforeRead: options.beforeRead,
  });
  // It could not go incremental after all (cannot happen after the checks above): its result
  // saw only the slice's cache, so the caller scans again with the whole one.
  if (!scan.incremental) return fallback("the scan walked");
  const found = editsOf(parts, slice, scan);
  if (found === null) return fallback("a new name that is not UTF-8");
  const token = scan.statCache.watchToken ?? watched?.token;
  return finish(parts, options, { scan, found, token, slice });
}

/**
 * What the scan must see of the cache: the file entries and the directories and symlinks at
 * and below each root, and every directory above one (the scan checks that a root's parents
 * are still there, and refreshes the mtime of each root's parent).
 */
function sliceOf(
  parts: StatCacheParts,
  roots: ReadonlySet<string>,
): { files: Map<string, CachedStat>; others: ManifestEntry[] } {
  const files = new Map<string, CachedStat>();
  const others = new Map<string, ManifestEntry>();
  for (const r of roots) {
    for (const [k, c] of parts.filesAt(r)) files.set(k, c);
    for (const e of parts.othersAt(r)) others.set(e.path, e);
    for (let slash = r.lastIndexOf("/"); slash > 0; slash = r.lastIndexOf("/", slash - 1)) {
      const up = r.slice(0, slash);
      if (others.has(up)) continue;
      const e = parts.otherAt(up);
      if (e !== undefined) others.set(up, e);
    }
  }
  const sorted = [...others.values()].sort((a, b) => byCodeUnits(a.path, b.path));
  return { files, others: sorted };
}

/** The changes a delta scan found: to the cache's entries, and to the manifest's lines. */
interface Found {
  files: Map<string, CachedStat | null>;
  others: Map<string, ManifestEntry | null>;
  edits: Map<string, ManifestEntry | null>;
  counts: { files: number; dirs: number; symlinks: number; bytes: number };
}

/**
 * Compare the scan's result with the slice it was given: every slice entry the scan did not
 * give back went, every one it gave back changed is an edit. A directory of the slice that is
 * no directory now takes everything below it (read from the cache) with it. Null when a new
 * name is not UTF-8.
 */
function editsOf(
  parts: StatCacheParts,
  slice: { files: Map<string, CachedStat>; others: ManifestEntry[] },
  scan: ReturnType<typeof scanWorkspace>,
): Found | null {
  const nextIndex = scan.statCache.index as ScanIndex;
  const counts = {
    files: parts.files,
    dirs: parts.dirs,
    symlinks: parts.symlinks,
    bytes: parts.bytes,
  };
  const files = new Map<string, CachedStat | null>();
  const others = new Map<string, ManifestEntry | null>();
  const edits = new Map<string, ManifestEntry | null>();
  const dropFile = (key: string, c: CachedStat) => {
    if (files.has(key)) return;
    files.set(key, null);
    edits.set(key, null);
    counts.files--;
    counts.bytes -= c.size;
  };
  const dropOther = (e: ManifestEntry) => {
    if (others.has(e.path)) return;
    others.set(e.path, null);
    edits.set(e.path, null);
    if (e.type === "dir") counts.dirs--;
    else counts.symlinks--;
  };
  for (const [key, c] of slice.files) dropFile(key, c);
  const after = new Map<string, ManifestEntry>();
  for (const e of nextIndex.others) after.set(e.path, e);
  const before = new Map<string, ManifestEntry>();
  for (const old of slice.others) {
    before.set(old.path, old);
    dropOther(old);
    if (old.type === "dir" && after.get(old.path)?.type !== "dir") {
      for (const [k, c] of parts.filesAt(old.path)) dropFile(k, c);
      for (const e of parts.othersAt(old.path)) dropOther(e);
    }
  }
  for (const e of nextIndex.others) {
    if (e.type === "dir") counts.dirs++;
    else counts.symlinks++;
    others.set(e.path, e);
    const old = before.get(e.path);
    if (old === undefined || !sameLine(old, e)) edits.set(e.path, e);
    else edits.delete(e.path);
  }
  const wasLinked = new Set(parts.index?.linked ?? []);
  if (!fileEdits(slice.files, wasLinked, scan, { files, edits, counts })) return null;
  return { files, others, edits, counts };
}

/** The scan's files into the changes (see `editsOf`); false when a name is not UTF-8. */
function fileEdits(
  sliceFiles: ReadonlyMap<string, CachedStat>,
  wasLinked: ReadonlySet<string>,
  scan: ReturnType<typeof scanWorkspace>,
  into: Pick<Found, "files" | "edits" | "counts">,
): boolean {
  // Hard links: the scan's entries say which file links to which (the stat cache does not); a
  // file with other links, now or at the last scan, always gets its line written anew.
  const linkOf = new Map<string, string>();
  for (const e of scan.manifest.entries) if (e.link !== undefined) linkOf.set(e.path, e.link);
  for (const [key, c] of scan.statCache.entries) {
    // A new name that is not UTF-8 (found below a new directory): its entry carries its bytes.
    if (key.charCodeAt(0) === 0) return false;
    into.counts.files++;
    into.counts.bytes += c.size;
    into.files.set(key, c);
    const old = sliceFiles.get(key);
    const mode = c.mode & 0o7777;
    const link = linkOf.get(key);
    // Seen again exactly as it was: no edit (a path cannot be a file and a directory at once).
    if (
      link === undefined &&
      !wasLinked.has(key) &&
      old !== undefined &&
      old.oid === c.oid &&
      old.size === c.size &&
      old.mtimeMs === c.mtimeMs &&
      (old.mode & 0o7777) === mode
    ) {
      into.edits.delete(key);
      continue;
    }
    into.edits.set(key, {
      path: key,
      type: "file",
      mode,
      size: c.size,
      mtime_ms: c.mtimeMs,
      oid: c.oid,
      ...(link === undefined ? {} : { link }),
    });
  }
  return true;
}

/** The delta scan's answer: the manifest spliced (or the last one, unchanged). */
function finish(
  parts: StatCacheParts,
  options: DeltaScanOptions,
  got: {
    scan: ReturnType<typeof scanWorkspace>;
    found: Found;
    token: string | undefined;
    slice: { files: Map<string, CachedStat> };
  },
): DeltaScan | DeltaFallback {
  const { scan, found, token } = got;
  const nextIndex = scan.statCache.index as ScanIndex;
  const racy: string[] = [];
  for (const [k, c] of scan.statCache.entries) {
    if (c.mtimeMs >= scan.statCache.scanStartMs) racy.push(k);
  }
  const writeCache = (manifest: ManifestRef) => {
    const { others: _others, ...index } = nextIndex;
    writeStatCacheUpdate(options.statCachePath, parts, {
      scanStartMs: scan.statCache.scanStartMs,
      ...(token === undefined ? {} : { watchToken: token }),
      plain: true,
      files: found.files,
      others: found.others,
      index: { ...index, manifest },
      racy,
      counts: found.counts,
    });
  };
  const common = {
    ...found.counts,
    skipped: scan.skipped,
    rehashed: scan.rehashed,
    objects_written: scan.objects_written,
    writeCache,
  };
  const edits = found.edits;
  const known = (parts.index as Omit<ScanIndex, "others">).manifest as ManifestRef;
  const file = join(options.dataDir, known.file);
  const fallback = (why: string): DeltaFallback => ({ fallback: why });
  if (edits.size === 0) {
    const stored = readManifestRef(options.dataDir, known);
    if (stored === null) return fallback("the last manifest file is gone or does not match");
    const quiet = token === parts.watchToken && sameCache(scan.statCache.entries, got.slice.files);
    return { ...common, hash: known.hash, known, stored, quiet };
  }
  if (options.textOnly === true) {
    const text = spliceBaseText(file, known.hash, edits);
    if (text === null) return fallback("the last manifest's text cannot be edited in place");
    let lazy: string | undefined;
    return {
      ...common,
      get hash() {
        lazy ??= gitBlobId(text);
        return lazy;
      },
      text,
      quiet: false,
    };
  }
  const nodes = options.nodes ?? nodeStoreOf(options.dataDir);
  const tree = spliceBaseTree(file, known.hash, edits, nodes);
  if (tree === null) return fallback("the last manifest cannot be edited in place");
  if (tree.hash === known.hash) {
    const stored = readManifestRef(options.dataDir, known);
    if (stored === null) return fallback("the last manifest file is gone or does not match");
    return { ...common, hash: tree.hash, known, stored, quiet: false };
  }
  return { ...common, hash: tree.hash, root: tree.root, quiet: false };
}

/** The base manifest's canonical text with `edits` spliced in; null when it cannot be. */
function spliceBaseText(
  file: string,
  hash: string,
  edits: ReadonlyMap<string, ManifestEntry | null>,
): Buffer | null {
  let old: Buffer;
  try {
    old = readManifestTextFile(file, hash);
  } catch {
    return null;
  }
  return spliceManifestText(old, edits);
}

/**
 * The tree of the base manifest with `edits` applied, its new nodes written: by `spliceTree`
 * when the base is a tree, else (a record written before trees) its text spliced and stored as
 * a tree once. Null when it cannot be (the file is gone or damaged, a name is not plain).
 */
function spliceBaseTree(
  file: string,
  hash: string,
  edits: ReadonlyMap<string, ManifestEntry | null>,
  nodes: NodeStore,
): TreeRoot | null {
  const lines: LineEdit[] = [];
  for (const path of [...edits.keys()].sort()) {
    const entry = edits.get(path);
    if (entry?.path_b64 !== undefined || entry?.target_b64 !== undefined) return null;
    lines.push({ path, line: entry == null ? null : Buffer.from(entryLine(entry), "utf8") });
  }
  let stored: ReturnType<typeof decodeStoredManifest>;
  try {
    stored = decodeStoredManifest(readFileSync(file), file, hash);
    if (stored.root !== undefined) return spliceTree(stored.root, lines, nodes, file);
  } catch {
    return null;
  }
  const text = spliceManifestText(stored.text, edits);
  return text === null ? null : buildTree(text, nodes);
}

/**
 * Would the two entries have the same manifest line (`entryLine`)? Field by field: every
 * directory of the index is compared on every delta scan, and building both lines was most of
 * that cost at 100k files (25k directories).
 */
function sameLine(a: ManifestEntry, b: ManifestEntry): boolean {
  return (
    a.path === b.path &&
    a.path_b64 === b.path_b64 &&
    a.type === b.type &&
    a.mode === b.mode &&
    a.size === b.size &&
    a.mtime_ms === b.mtime_ms &&
    a.oid === b.oid &&
    a.link === b.link &&
    a.link_b64 === b.link_b64 &&
    a.target === b.target &&
    a.target_b64 === b.target_b64
  );
}

/** Did the scan keep every entry of the slice as it was (so the table needs no rewrite)? */
function sameCache(
  entries: ReadonlyMap<string, CachedStat>,
  slice: ReadonlyMap<string, CachedStat>,
): boolean {
  if (entries.size !== slice.size) return false;
  for (const [key, c] of entries) {
    const o = slice.get(key);
    if (
      o === undefined ||
      o.oid !== c.oid ||
      o.size !== c.size ||
      o.mtimeMs !== c.mtimeMs ||
      o.ctimeMs !== c.ctimeMs ||
      o.ino !== c.ino ||
      o.mode !== c.mode
    ) {
      return false;
    }
  }
  return true;
}

/**
 * The workspace's manifest as its canonical text, by the delta path, with what the scan
 * skipped; nothing is written (the stat cache stays as it is, and the next scan is told the
 * same changes again). Null when the delta path cannot vouch (no watcher, no recorded
 * manifest, other excludes): the caller scans the usual way.
 */
export function scanWorkspaceText(
  root: string,
  options: Pick<DeltaScanOptions, "excludes" | "statCachePath" | "dataDir" | "maxFileBytes">,
): { text: Buffer; skipped: SkippedPath[] } | null {
  const delta = deltaScan(root, { ...options, textOnly: true });
  if ("fallback" in delta) return null;
  const known = delta.known;
  const text =
    delta.text ??
    (known === undefined
      ? undefined
      : readManifestTextFile(join(options.dataDir, known.file), known.hash));
  return text === undefined ? null : { text, skipped: delta.skipped };
}
