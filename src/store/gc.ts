import { existsSync, lstatSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import {
  appendEvent,
  type Clock,
  createProgressTick,
  ErrorCode,
  errnoCode,
  isProcessAlive,
  isTimewarpError,
  type OnProgress,
  systemClock,
  type WorkspacePaths,
  workspacePaths,
} from "../core/index.ts";
import {
  diffManifestTexts,
  type Manifest,
  type ManifestEntry,
  parseManifestText,
} from "./manifest.ts";
import { forgetNodeTexts, type NodeStore, nodeStoreOf } from "./manifest-nodes.ts";
import { sweepManifestNodes } from "./manifest-sweep.ts";
import { parseRefs } from "./manifest-tree.ts";
import {
  leafEntries,
  readStoredManifest,
  recordManifestFile,
  walkNewNodes,
} from "./manifest-walk.ts";
import { createObjectStore, OBJECT_CHUNK_BYTES, type ObjectStore } from "./object-store.ts";
import { hashStable } from "./read-stable.ts";
import { recordId } from "./snapshot-record.ts";
import { listSnapshots, listSnapshotsChecked } from "./snapshots.ts";
import {
  examineStatCache,
  type ManifestRef,
  manifestRefProblem,
  pruneStatCache,
  type StatCache,
} from "./stat-cache.ts";

/**
 * Every object id referenced by a record under `snapshots/` or `present_backup/`. Tree
 * manifests are walked node by node (`manifest-walk.ts`), each distinct node read once and
 * none kept, so memory holds the ids, not the manifests (issue 22 item 5); a record written
 * before trees is read whole. A corrupt record or manifest throws: gc must never run on a
 * partial root set.
 */
export function collectReferencedOids(
  root: string,
  options: {
    /** Manifests the caller holds already, by record id (a snapshot just taken): not re-read. */
    known?: ReadonlyMap<string, Manifest>;
    /** Filled with a path of each object (for gc's repack, which puts similar files together). */
    names?: Map<string, string>;
    /** Phase `mark`: records read of all. */
    onProgress?: OnProgress;
  } = {},
): Set<string> {
  const oids = new Set<string>();
  const records = [
    ...listSnapshots(root, { kind: "snapshot" }),
    ...listSnapshots(root, { kind: "present_backup" }),
  ];
  const report = createProgressTick(options.onProgress, { phase: "mark", total: records.length });
  const paths = workspacePaths(root);
  const nodes = nodeStoreOf(paths.data);
  const seen = new Set<string>();
  const isNew = (id: string) => !seen.has(id) && seen.add(id) !== undefined;
  for (const record of records) {
    const known = options.known?.get(recordId(record));
    if (known !== undefined) addManifest(oids, known, options.names);
    else {
      const file = recordManifestFile(paths, record);
      const stored = readStoredManifest(file, record.manifest.hash);
      if (stored.root === undefined) {
        addManifest(oids, parseManifestText(stored.text, file), options.names);
      } else {
        walkNewNodes(stored.root, nodes, file, isNew, (kind, ref) => {
          if (kind === "leaf")
            addEntries(oids, leafEntries(nodes.read(ref.id), file), options.names);
        });
      }
    }
    report();
  }
  return oids;
}

function addManifest(oids: Set<string>, manifest: Manifest, names?: Map<string, string>): void {
  addEntries(oids, manifest.entries, names);
}

function addEntries(
  oids: Set<string>,
  entries: readonly ManifestEntry[],
  names?: Map<string, string>,
): void {
  for (const e of entries) {
    if (e.type !== "file" || e.oid === undefined) continue;
    oids.add(e.oid);
    if (names !== undefined && !names.has(e.oid)) names.set(e.oid, e.path);
  }
}

export interface GcOptions {
  /** What must stay: manifests, or object ids. Usually `collectReferencedOids(root)`. */
  roots: Iterable<Manifest | string>;
  /**
   * A path of each object (`collectReferencedOids`' `names`): the repack tries objects of the
   * same file name as each other's delta bases. Without it, objects sort by size only.
   */
  names?: ReadonlyMap<string, string>;
  clock?: Clock;
  /** Phases `list objects`, `repack`, then `sweep` (objects looked at of all). */
  onProgress?: OnProgress;
}

export interface GcResult {
  removed_objects: number;
  freed_bytes: number;
  kept_objects: number;
  /** Temp files of dead writers removed. */
  removed_temp: number;
  /** Objects in the new pack (0 when the store was packed already), how many as deltas. */
  packed_objects: number;
  delta_objects: number;
}

/** Temp names are `.<name>.tw-tmp-<pid>-<hex>`; only a dead pid's leftovers are garbage. */
function tempOwnerAlive(path: string): boolean {
  const m = /\.tw-tmp-(\d+)-/.exec(basename(path));
  return m !== null && isProcessAlive(Number(m[1]));
}

/**
 * Remove every object not reachable from `roots`, and temp files left by dead writers, and
 * repack the live ones into one compressed pack with deltas (`ObjectStore.repack`; a crash
 * leaves duplicates, never a loss). Stat cache entries pointing at removed objects are dropped
 * too (else the next snapshot would reference them without re-reading). The caller holds the
 * workspace lock.
 */
export function collectGarbage(root: string, options: GcOptions): GcResult {
  const paths = workspacePaths(root);
  const keep = new Set<string>();
  for (const r of options.roots) {
    if (typeof r === "string") keep.add(r);
    else addManifest(keep, r);
  }
  const store = createObjectStore(paths.objects);
  const removed = new Set<string>();
  let freed = 0;
  let kept = 0;
  options.onProgress?.({ phase: "list objects" });
  const listed = store.listAll();
  options.onProgress?.({ phase: "repack" });
  const packed = store.repack(keep, options.names);
  freed += packed.freed;
  for (const oid of packed.removed) removed.add(oid);
  const tick = createProgressTick(options.onProgress, {
    phase: "sweep",
    total: listed.objects.length,
  });
  for (const oid of listed.objects) {
    tick();
    if (keep.has(oid)) {
      kept++;
      continue;
    }
    freed += store.remove(oid); // loose (a packed one went with its pack above)
    removed.add(oid);
  }
  let removedTemp = 0;
  for (const temp of listed.temps) {
    if (tempOwnerAlive(temp)) continue;
    try {
      unlinkSync(temp);
      removedTemp++;
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw error;
    }
  }
  recordRemoval(paths, removed, freed, options.clock ?? systemClock);
  sweepManifestNodes(root);
  try {
    writeFileSync(
      lastGcFile(root),
      `${new Date((options.clock ?? systemClock).now()).toISOString()}\n`,
    );
  } catch {
    // only a hint for when the next whole gc is due
  }
  return {
    removed_objects: removed.size,
    freed_bytes: freed,
    kept_objects: kept,
    removed_temp: removedTemp,
    packed_objects: packed.stats?.objects ?? 0,
    delta_objects: packed.stats?.deltas ?? 0,
  };
}

/** After a gc: forget the removed objects in the stat cache and say what went (`gc.completed`). */
function recordRemoval(
  paths: WorkspacePaths,
  removed: ReadonlySet<string>,
  freed: number,
  clock: Clock,
): void {
  if (removed.size > 0) pruneStatCache(paths.statCache, removed);
  appendEvent(
    paths.events,
    "gc.completed",
    { removed_objects: removed.size, freed_bytes: freed },
    clock,
  );
}

function lastGcFile(root: string): string {
  return join(workspacePaths(root).data, "last-gc");
}

/** When the last whole gc (`collectGarbage`) of this workspace finished (ms), or null. */
export function lastGarbageCollection(root: string): number | null {
  try {
    return statSync(lastGcFile(root)).mtimeMs;
  } catch {
    return null;
  }
}

export interface DroppedGcOptions {
  /** The canonical manifest texts (`readManifestText`) of the records just deleted. */
  dropped: readonly Buffer[];
  /** The text of the record they are compared with first: the newest one kept (a root too). */
  base: Buffer;
  /**
   * The texts of every other record kept (snapshots and backups), read one at a time so that
   * memory stays flat however many there are; an error stops the gc before anything is removed.
   */
  kept: Iterable<Buffer>;
  /** Object ids that stay besides those the kept manifests name (the ledger's images). */
  extraRoots: ReadonlySet<string>;
  clock?: Clock;
}

/**
 * The gc of a cleanup that deleted records: only objects those records named can have become
 * garbage, so only they are looked at, not every object of the store. The candidates are the
 * objects of the dropped manifests' lines that differ from `base` (a text diff: the cost of a
 * few memcmp over the texts); each one is kept if any kept text contains its id (a byte search,
 * which can only err towards keeping) or `extraRoots` has it. It removes the loose objects a
 * whole gc (`collectGarbage`) would remove for the deletion; the packed ones, and garbage from
 * anywhere else (a killed snapshot's objects, the ledger's pruned images), wait for a whole gc.
 * Packs are not read. Null when a text is not a canonical manifest text of UTF-8 names: run
 * `collectGarbage` then.
 */
export function collectDroppedObjects(
  root: string,
  options: DroppedGcOptions,
): Pick<GcResult, "removed_objects" | "freed_bytes"> | null {
  const candidates = new Set<string>();
  for (const text of options.dropped) {
    const d = diffManifestTexts(text, options.base);
    if (d === null) return null;
    for (const e of d.a) if (e.type === "file" && e.oid !== undefined) candidates.add(e.oid);
  }
  const dead = new Set<string>();
  for (const oid of candidates) {
    // The base too: another of its lines, one the dropped text shares, may name the same object.
    if (!options.extraRoots.has(oid) && !options.base.includes(oid)) dead.add(oid);
  }
  for (const text of dead.size > 0 ? options.kept : []) {
    for (const oid of dead) if (text.includes(oid)) dead.delete(oid);
    if (dead.size === 0) break;
  }
  const paths = workspacePaths(root);
  const store = createObjectStore(paths.objects);
  const gone = new Set<string>();
  let freed = 0;
  for (const oid of dead) {
    // Loose only, the usual case (a snapshot's later objects). A packed one stays until the
    // daily whole gc: dropping it means rewriting its whole pack (a first snapshot's holds the
    // workspace), ~17 ms at 10k files for the one old version an edit left behind.
    const size = store.remove(oid);
    if (size > 0) gone.add(oid);
    freed += size;
  }
  recordRemoval(paths, gone, freed, options.clock ?? systemClock);
  return { removed_objects: gone.size, freed_bytes: freed };
}

export interface FsckProblem {
  kind:
    | "corrupt_object"
    | "missing_object"
    | "bad_record"
    | "corrupt_cache"
    | "temp_file"
    /** The ledger's (`fsckLedger`): a line of history/index.tsv that is wrong. */
    | "corrupt_index"
    /** The ledger's: a record with no index line (a crash between them); only noted. */
    | "unindexed_record";
  /** Object id, record id or cache file, whichever applies. */
  subject: string;
  /** The file at fault (for a missing object, the manifest that names it). */
  path: string;
  /**
   * The code a read of it gives: OBJECT_CORRUPT, OBJECT_NOT_FOUND, CORRUPT_FILE (a record, a
   * manifest, a cache), or the file system's (PERMISSION_DENIED, …); IO_ERROR for a temp file.
   */
  code: ErrorCode;
  detail: string;
}

export interface FsckResult {
  /** True when nothing is corrupt or missing and every record reads (temp files are only noted). */
  ok: boolean;
  objects: number;
  records: number;
  /** Cache files checked (stat caches and the last manifest). */
  caches: number;
  problems: FsckProblem[];
}

/**
 * Check the store: every object re-hashed against its id, every record and manifest readable
 * with the hash it promises, every referenced object present, and every cache the store trusts
 * (the stat caches' checksums and, for the entries whose file still has the cached stat data,
 * the content id; `last-manifest.json.br` against the sum and hash the stat cache recorded).
 * One damaged record is reported and the others are still checked. Reads everything and changes
 * nothing (a bad cache is discarded by its next reader); run it on demand.
 */
export function fsck(root: string, options: { onProgress?: OnProgress } = {}): FsckResult {
  const paths = workspacePaths(root);
  const store = createObjectStore(paths.objects);
  const problems: FsckProblem[] = [];
  forgetNodeTexts(); // every manifest node is read from disk and checked
  const present = checkObjects(store, problems, options.onProgress);
  const check = createManifestCheck(nodeStoreOf(paths.data), present);
  let records = 0;
  for (const kind of ["snapshot", "present_backup"] as const) {
    const phase = kind === "snapshot" ? "check snapshots" : "check backups";
    options.onProgress?.({ phase });
    let list: ReturnType<typeof listSnapshotsChecked>;
    try {
      list = listSnapshotsChecked(root, { kind });
    } catch (error) {
      const dir = kind === "snapshot" ? paths.snapshots : paths.backups;
      problems.push(problemOf("bad_record", kind, dir, error));
      continue;
    }
    for (const bad of list.corrupt) {
      problems.push({
        kind: "bad_record",
        subject: bad.id,
        path: bad.file,
        code: bad.code,
        detail: bad.message,
      });
    }
    const tickRecord = createProgressTick(options.onProgress, {
      phase,
      total: list.records.length,
      every: 16,
    });
    for (const record of list.records) {
      tickRecord();
      records++;
      const file = recordManifestFile(paths, record);
      const found = check(file, record.manifest.hash);
      if (found.error !== undefined) {
        problems.push(problemOf("bad_record", recordId(record), file, found.error));
        continue;
      }
      for (const e of found.missing) {
        problems.push({
          kind: "missing_object",
          subject: e.oid,
          path: file,
          code: ErrorCode.OBJECT_NOT_FOUND,
          detail: `${recordId(record)}: ${e.path}`,
        });
      }
    }
  }
  options.onProgress?.({ phase: "check caches" });
  const caches = checkCaches(paths, problems, check);
  for (const temp of store.listTemp()) {
    problems.push({
      kind: "temp_file",
      subject: temp,
      path: temp,
      code: ErrorCode.IO_ERROR,
      detail: "left by an interrupted write",
    });
  }
  return {
    ok: problems.every((p) => p.kind === "temp_file"),
    objects: present.size,
    records,
    caches,
    problems,
  };
}

/** What fsck found in a manifest or one of its nodes: files whose object is absent, or an error. */
interface ManifestFinding {
  missing: readonly { oid: string; path: string }[];
  error?: unknown;
}

const NOTHING: ManifestFinding = { missing: [] };

/** The files of `entries` whose object is not in `present`. */
function missingOf(entries: readonly ManifestEntry[], present: ReadonlySet<string>) {
  const missing: { oid: string; path: string }[] = [];
  for (const e of entries) {
    if (e.type === "file" && e.oid !== undefined && !present.has(e.oid)) {
      missing.push({ oid: e.oid, path: e.path });
    }
  }
  return missing.length > 0 ? { missing } : NOTHING;
}

/**
 * fsck's check of stored manifest files: `(file, hash)` reads one (checked against `hash` when
 * given) and what it names. A tree is walked node by node, each node read from the packs once
 * (its id checked) and its finding remembered for the next record that reaches it, so memory
 * holds findings, not manifests (issue 22 item 5).
 */
function createManifestCheck(
  nodes: NodeStore,
  present: ReadonlySet<string>,
): (file: string, hash: string | undefined) => ManifestFinding {
  const found = new Map<string, ManifestFinding>();
  const remember = (id: string, f: ManifestFinding) => {
    found.set(id, f);
    return f;
  };
  const leaf = (id: string, file: string): ManifestFinding => {
    try {
      return remember(id, missingOf(leafEntries(nodes.read(id), file), present));
    } catch (error) {
      return remember(id, { missing: [], error });
    }
  };
  const group = (id: string, file: string): ManifestFinding => {
    const missing: { oid: string; path: string }[] = [];
    try {
      for (const ref of parseRefs(nodes.read(id), file)) {
        const f = found.get(ref.id) ?? leaf(ref.id, file);
        if (f.error !== undefined) return remember(id, f);
        missing.push(...f.missing);
      }
    } catch (error) {
      return remember(id, { missing: [], error });
    }
    return remember(id, missing.length > 0 ? { missing } : NOTHING);
  };
  return (file, hash) => {
    const missing: { oid: string; path: string }[] = [];
    try {
      const stored = readStoredManifest(file, hash);
      if (stored.root === undefined) {
        return missingOf(parseManifestText(stored.text, file).entries, present);
      }
      for (const ref of parseRefs(stored.root, file)) {
        const f = found.get(ref.id) ?? group(ref.id, file);
        if (f.error !== undefined) return f;
        missing.push(...f.missing);
      }
    } catch (error) {
      return { missing: [], error };
    }
    return { missing };
  };
}

/** Every object re-hashed against its id; the ids present. */
function checkObjects(
  store: ObjectStore,
  problems: FsckProblem[],
  onProgress: OnProgress | undefined,
): Set<string> {
  const present = new Set<string>();
  onProgress?.({ phase: "list objects" });
  const oids = store.list();
  const tick = createProgressTick(onProgress, {
    phase: "check objects",
    total: oids.length,
  });
  for (const oid of oids) {
    tick();
    present.add(oid);
    try {
      store.read(oid, { verify: true });
    } catch (error) {
      problems.push({
        kind: "corrupt_object",
        subject: oid,
        path: store.pathOf(oid),
        code: isTimewarpError(error) ? error.code : ErrorCode.IO_ERROR,
        detail: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return present;
}

function problemOf(
  kind: FsckProblem["kind"],
  subject: string,
  path: string,
  error: unknown,
): FsckProblem {
  return {
    kind,
    subject,
    path: isTimewarpError(error) && typeof error.data?.file === "string" ? error.data.file : path,
    code: isTimewarpError(error) ? error.code : ErrorCode.IO_ERROR,
    detail: error instanceof Error ? error.message : String(error),
  };
}

/**
 * The caches the store trusts: the workspace's stat cache, the hooks' (the baseline a shell
 * command's changes are diffed against; same format, kept in `.timewarp/hooks/`), and the last
 * manifest the stat cache names. Returns how many files were checked.
 */
function checkCaches(
  paths: WorkspacePaths,
  problems: FsckProblem[],
  check: (file: string, hash: string | undefined) => ManifestFinding,
): number {
  let checked = 0;
  const cacheProblem = (file: string, detail: string) =>
    problems.push({
      kind: "corrupt_cache",
      subject: file,
      path: file,
      code: ErrorCode.CORRUPT_FILE,
      detail,
    });
  let ref: ManifestRef | undefined;
  for (const file of [paths.statCache, join(paths.data, "hooks", "stat-cache.bin")]) {
    if (!existsSync(file)) continue;
    checked++;
    const found = examineStatCache(file);
    if ("problem" in found) {
      cacheProblem(file, `${file}: ${found.problem}`);
      continue;
    }
    const cache = found.cache;
    if (cache === null) continue; // of another format version: ignored by every reader
    for (const detail of cacheEntryProblems(paths.root, cache)) {
      cacheProblem(file, `${file}: ${detail}`);
    }
    if (file === paths.statCache) ref = cache.index?.manifest;
  }
  if (existsSync(paths.lastManifest)) {
    checked++;
    const problem = lastManifestProblem(paths, ref, check);
    if (problem !== null) cacheProblem(paths.lastManifest, `${paths.lastManifest}: ${problem}`);
  }
  return checked;
}

/**
 * Entries of a sound cache that still lie: the file has exactly the cached stat data (size,
 * mtime, ctime, inode, mode; older than the scan, so not racy) but other bytes. A scan would
 * trust such an entry, so it is re-hashed here. ctime cannot be set back by hand: a match with
 * other bytes means the cache itself is wrong.
 */
function cacheEntryProblems(root: string, cache: StatCache): string[] {
  const out: string[] = [];
  const chunk = Buffer.allocUnsafe(OBJECT_CHUNK_BYTES);
  for (const [key, c] of cache.entries) {
    if (key.charCodeAt(0) === 0 || c.mtimeMs >= cache.scanStartMs) continue; // byte names; racy
    const file = join(root, key);
    const st = lstatSync(file, { throwIfNoEntry: false });
    if (
      st === undefined ||
      st.size !== c.size ||
      st.mtimeMs !== c.mtimeMs ||
      st.ctimeMs !== c.ctimeMs ||
      st.ino !== c.ino ||
      st.mode !== c.mode
    ) {
      continue; // changed since: a scan re-reads it anyway
    }
    // In chunks through one buffer, never a whole file at a time: at 100k files the allocation
    // of each whole file left fsck's heap fragmented and over 150 MiB (issue 22, item 5), and a
    // buffer per file made V8 collect after every few (5× the CPU).
    let read: ReturnType<typeof hashStable>;
    try {
      read = hashStable(file, st, undefined, undefined, chunk);
    } catch {
      continue;
    }
    if (read === undefined || "skip" in read) continue; // gone, or changed while read
    const got = read.oid;
    if (got !== c.oid) out.push(`${key}: the file hashes to ${got}, the cache says ${c.oid}`);
  }
  return out;
}

/** What is wrong with `last-manifest.json.br` (null: nothing). */
function lastManifestProblem(
  paths: WorkspacePaths,
  ref: ManifestRef | undefined,
  check: (file: string, hash: string | undefined) => ManifestFinding,
): string | null {
  let bytes: Buffer;
  try {
    bytes = readFileSync(paths.lastManifest);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  const named = ref !== undefined && join(paths.data, ref.file) === paths.lastManifest;
  if (named) {
    const problem = manifestRefProblem(bytes, ref);
    if (problem !== null) return problem;
  }
  const { error } = check(paths.lastManifest, named ? ref.hash : undefined);
  if (error === undefined) return null;
  return error instanceof Error ? error.message : String(error);
}
