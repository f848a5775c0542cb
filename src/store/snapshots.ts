import { randomBytes } from "node:crypto";
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import {
  appendEvent,
  BACKUP_ID_PATTERN,
  type Clock,
  createBackupId,
  createSnapshotId,
  ErrorCode,
  effectiveExcludes,
  errnoCode,
  fromSystemError,
  fsyncAll,
  fsyncDirectory,
  isProcessAlive,
  type Random,
  readConfig,
  readEachFlagged,
  readJsonFile,
  SNAPSHOT_ID_PATTERN,
  systemClock,
  systemRandom,
  TimewarpError,
  type WorkspacePaths,
  workspacePaths,
  writeFileAtomic,
} from "../core/index.ts";
import { type ManifestTree, storedTree } from "./diff-trees.ts";
import {
  compressManifest,
  decodeManifest,
  encodeManifestTree,
  type Manifest,
  parseManifestText,
  readManifestTextFile,
  rememberManifestText,
  storedManifestText,
} from "./manifest.ts";
import { nodeStoreOf } from "./manifest-nodes.ts";
import { assembleText } from "./manifest-tree.ts";
import { batchObjectWrites, createObjectStore } from "./object-store.ts";
import { type ScanOptions, type SkippedPath, scanWorkspace } from "./scan-workspace.ts";
import { deltaScan, type ScanCounts } from "./snapshot-delta.ts";
import {
  type RecordKind,
  recordId,
  SNAPSHOT_RECORD_SCHEMA_VERSION,
  type SnapshotRecord,
  SnapshotRecordSchema,
} from "./snapshot-record.ts";
import {
  type ManifestRef,
  manifestFileSum,
  readManifestRef,
  readStatCache,
  type StatCache,
  writeStatCache,
} from "./stat-cache.ts";
import { youngStoreFiles } from "./sync-young.ts";

export const RECORD_FILE = "snapshot.json";
export const MANIFEST_FILE = "manifest.json.br";
/** In `.timewarp/tmp/`: when the last backup's sweep of young store files began (ms). */
const SYNCED_AT_FILE = "store-synced-at";

export interface CreateSnapshotOptions {
  /** `snapshot` (default) writes `snapshots/<snapshot_id>/`; `present_backup` writes `present_backup/<backup_id>/`. */
  kind?: RecordKind;
  /** Excludes in force; default `effectiveExcludes` of `.timewarp/config.json`. */
  excludes?: readonly string[];
  /** Size cap for new files; default `max_file_bytes` of the config. */
  maxFileBytes?: number;
  sessionId?: string | null;
  /**
   * Who asked: `manual` for a snapshot the user made by hand (`timewarp snapshot create`), kept
   * by session-start cleanup until the user deletes it or the config's retention says so.
   */
  origin?: "manual" | "session" | "turn";
  /**
   * A record to stand for this snapshot when the scan finds exactly what it holds (the same
   * manifest, skipped paths and excludes): then no record is written, and the result names
   * that one (`reused: true`). A turn checkpoint passes the previous checkpoint: nothing is
   * stored when nothing changed.
   */
  reuse?: SnapshotRecord;
  envFingerprint?: Record<string, unknown>;
  initialTaskHint?: string;
  clock?: Clock;
  random?: Random;
  onProgress?: ScanOptions["onProgress"];
  /** Test hook passed to the scan (runs before each file read). */
  beforeRead?: ScanOptions["beforeRead"];
  /**
   * The paths changed since the last snapshot, when the caller knows them (tests; a watcher of
   * its own). Default: the watch daemon's answer, when one runs.
   */
  changed?: readonly string[];
  /**
   * Leave the stat cache's update to the caller (`result.writeCache`, to run under the
   * workspace lock): a session start served by the hook server answers first. Until it runs,
   * scans start from the old cache, which only costs them work.
   */
  deferCache?: boolean;
  /**
   * Scan now (new contents go to the object store at once), publish later: the record folder,
   * the stat cache and the event wait for `result.publish()`, which the caller runs while it
   * still holds the workspace lock (until then nothing names the new objects, so a gc must not
   * run). A turn checkpoint served by the hook server answers the agent in between: what the
   * snapshot holds is fixed by the scan.
   */
  deferRecord?: boolean;
}

export interface CreateSnapshotResult {
  record: SnapshotRecord;
  /** The record's id (`snapshot_id` or `backup_id`). */
  id: string;
  /** The record's folder. */
  dir: string;
  /** True when `options.reuse` stood for the snapshot: nothing new was written. */
  reused?: true;
  /** The manifest (decoded on first use when the delta path made only its text). */
  manifest: Manifest;
  /** The manifest's canonical text (`manifestBytes`), for comparing line by line. */
  manifestText: () => Buffer;
  /** Files read and hashed (stat-cache misses). */
  rehashed: number;
  objects_written: number;
  duration_ms: number;
  /**
   * How the workspace was scanned: `delta` (only what changed, spliced into the last manifest
   * and the stat cache), `index` (a change list applied to the whole index) or `walk`.
   */
  scan: ScanHow;
  /**
   * With `deferCache`: update the stat cache (and the last-manifest link) to this snapshot, if
   * the cache on disk is still the one this scan started from (a later writer, such as a
   * travel's backup, left a newer one).
   */
  writeCache?: () => void;
  /** With `deferRecord`: write the record (its folder is `dir`), the stat cache and the event. */
  publish?: () => void;
}

export type ScanHow = "delta" | "index" | "walk";

function kindDir(root: string, kind: RecordKind): string {
  const paths = workspacePaths(root);
  return kind === "snapshot" ? paths.snapshots : paths.backups;
}

const TMP_PREFIX = "rec-";

/**
 * Remove what a killed writer left in `.timewarp/tmp/` (only a dead process's): record folders
 * being built or deleted, and a link to the last manifest not yet renamed in.
 */
function cleanStaleTmp(tmp: string): void {
  let names: string[];
  try {
    names = readdirSync(tmp);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^(?:rec|del|last)-(\d+)-/.exec(name);
    if (m !== null && !isProcessAlive(Number(m[1]))) {
      rmSync(join(tmp, name), { recursive: true, force: true });
    }
  }
}

/**
 * Snapshot the workspace at `root`: scan (re-reading only what the stat cache cannot vouch for),
 * write new contents to the object store, then publish the record folder —
 * `snapshot.json` + `manifest.json.br`, built in `.timewarp/tmp/` and renamed into
 * `snapshots/<snapshot_id>/` (or `present_backup/<backup_id>/`), so a reader never sees half a
 * record, and a process killed at any point leaves a consistent store (at worst some unreferenced
 * objects, which `collectGarbage` removes). The stat cache is written last.
 *
 * The caller holds the workspace lock (the CLI and the time machine do). Throws NOT_A_DIRECTORY
 * when `root` is not a directory.
 *
 * @example
 * const { record } = createSnapshot("/work/repo", { sessionId: "sess_1" });
 * record.partial && console.warn(record.skipped);
 */
export function createSnapshot(
  root: string,
  options: CreateSnapshotOptions = {},
): CreateSnapshotResult {
  const started = performance.now();
  const paths = workspacePaths(root);
  const kind = options.kind ?? "snapshot";
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  let excludes = options.excludes;
  let maxFileBytes = options.maxFileBytes;
  if (excludes === undefined || maxFileBytes === undefined) {
    const config = readConfig(paths.config);
    excludes ??= effectiveExcludes(config);
    maxFileBytes ??= config.max_file_bytes;
  }
  const recordsDir = kindDir(root, kind);
  try {
    statSync(paths.root);
  } catch (error) {
    throw new TimewarpError(
      ErrorCode.NOT_A_DIRECTORY,
      `workspace root ${paths.root} does not exist`,
      {
        data: { path: paths.root },
        cause: error,
      },
    );
  }
  try {
    mkdirSync(paths.tmp, { recursive: true });
    mkdirSync(recordsDir, { recursive: true });
  } catch (error) {
    throw fromSystemError(error, `creating ${paths.data}`);
  }
  cleanStaleTmp(paths.tmp);
  const scanned = scanForSnapshot(paths, {
    packed: kind === "present_backup",
    excludes,
    maxFileBytes,
    changed: options.changed,
    onProgress: options.onProgress,
    beforeRead: options.beforeRead,
  });
  const reuse = options.reuse;
  if (reuse !== undefined && holdsTheSame(reuse, kind, scanned, excludes)) {
    const dir = join(recordsDir, recordId(reuse));
    if (existsSync(join(dir, RECORD_FILE))) {
      const file = join(dir, reuse.manifest.file);
      const writeCache = () =>
        scanned.writeCache(() => {
          const sum = manifestFileSum(readFileSync(file));
          try {
            linkLastManifest(paths, file);
            return { file: relative(paths.data, paths.lastManifest), hash: scanned.hash, sum };
          } catch {
            return { file: relative(paths.data, file), hash: scanned.hash, sum };
          }
        });
      if (options.deferRecord !== true) writeCache();
      return resultOf(scanned, started, {
        record: reuse,
        id: recordId(reuse),
        dir,
        reused: true,
        ...(options.deferRecord === true ? { publish: once(writeCache) } : {}),
      });
    }
  }
  const createdAt = clock.now();
  let id = "";
  // The id's time stamp and created_at are the same instant.
  const at: Clock = { now: () => createdAt };
  for (let attempt = 0; attempt < 10; attempt++) {
    id = kind === "snapshot" ? createSnapshotId(at, random) : createBackupId(at, random);
    if (!existsSync(join(recordsDir, id))) break;
  }
  const finalDir = join(recordsDir, id);
  const record: SnapshotRecord = {
    schema_version: SNAPSHOT_RECORD_SCHEMA_VERSION,
    kind,
    ...(kind === "snapshot" ? { snapshot_id: id } : { backup_id: id }),
    created_at: createdAt.toISOString().replace(/\.\d{3}Z$/, "Z"),
    session_id: options.sessionId ?? null,
    ...(options.origin === undefined ? {} : { origin: options.origin }),
    workspace_root: paths.root,
    exclude_globs: [...excludes],
    ...(options.envFingerprint === undefined ? {} : { env_fingerprint: options.envFingerprint }),
    ...(options.initialTaskHint === undefined
      ? {}
      : { initial_task_hint: options.initialTaskHint }),
    files: scanned.files,
    dirs: scanned.dirs,
    symlinks: scanned.symlinks,
    bytes: scanned.bytes,
    partial: scanned.skipped.length > 0,
    skipped: scanned.skipped,
    manifest: { file: MANIFEST_FILE, hash: scanned.hash, entries: scanned.entries },
  };
  /** The checksum of the manifest file's bytes, which the stat cache records beside its name. */
  let storedSum = "";
  const writeRecord = () => {
    const building = join(
      paths.tmp,
      `${TMP_PREFIX}${process.pid}-${randomBytes(4).toString("hex")}`,
    );
    try {
      mkdirSync(building);
      // An unchanged workspace has the manifest a stored record already holds: that file is
      // linked instead of written again (and written when it cannot be, say on another device).
      // The folder is private until it is renamed in whole, so its files are written in place.
      let linked = false;
      if (scanned.known !== undefined) {
        try {
          linkSync(join(paths.data, scanned.known.file), join(building, MANIFEST_FILE));
          linked = true;
          storedSum = scanned.known.sum;
        } catch {
          // written below
        }
      }
      if (!linked) {
        const bytes = scanned.stored();
        writeFileSync(join(building, MANIFEST_FILE), bytes, { flag: "wx", mode: 0o644 });
        storedSum = manifestFileSum(bytes);
      }
      writeFileSync(join(building, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`, {
        flag: "wx",
        mode: 0o644,
      });
      // A travel's backup must outlive a power cut after the restore, which removes the
      // workspace's copy: what it names in the store is on disk before its record is. Its new
      // objects went into packs (the scan's `packed` batch), not synced, like the store files
      // and manifest nodes written in the last minute (by its scan, or by earlier commands:
      // edit images, a turn checkpoint); young loose objects are copied into one pack.
      const young =
        kind === "present_backup"
          ? youngStoreFiles(
              [paths.objects, nodeStoreOf(paths.data).dir],
              join(paths.tmp, SYNCED_AT_FILE),
              paths.objects,
            )
          : undefined;
      // Written first, synced after, all at once (`fsyncAll`): the files and their names can go
      // in one journal commit instead of one per file; then the rename, and a commit for it and
      // the store's directories. (A linked manifest is a record's, synced then, or one the
      // watch prime wrote unsynced.)
      fsyncAll({
        files: [
          ...(!linked || kind === "present_backup" ? [join(building, MANIFEST_FILE)] : []),
          join(building, RECORD_FILE),
        ],
        filesIfPresent: young?.files ?? [],
        dirs: [building],
      });
      renameSync(building, finalDir);
      fsyncAll({ dirs: [recordsDir, ...(young?.dirs ?? [])] });
      young?.done();
    } catch (error) {
      rmSync(building, { recursive: true, force: true });
      throw fromSystemError(error, `writing record ${finalDir}`);
    }
  };
  // Last: a cache that names the new manifest (a crash before this only costs the next scan
  // some work), through a link of its own that outlives the record.
  const writeCache = () =>
    scanned.writeCache(() => {
      const file = join(finalDir, MANIFEST_FILE);
      try {
        linkLastManifest(paths, file);
        const text = scanned.madeText();
        if (text !== undefined) rememberManifestText(paths.lastManifest, scanned.hash, text);
        return {
          file: relative(paths.data, paths.lastManifest),
          hash: scanned.hash,
          sum: storedSum,
        };
      } catch {
        // the record went meanwhile (a deferred write), or links fail: the file itself, which
        // a later scan finds, or finds gone and falls back
        return { file: relative(paths.data, file), hash: scanned.hash, sum: storedSum };
      }
    });
  const stamp = options.deferCache === true ? fileStamp(paths.statCache) : null;
  const writeCacheLater = () => {
    if (fileStamp(paths.statCache) === stamp) writeCache();
  };
  const publish = () => {
    writeRecord();
    if (options.deferCache !== true) writeCache();
    if (kind === "snapshot") {
      appendEvent(
        paths.events,
        "snapshot.created",
        { snapshot_id: id, files: scanned.files, bytes: scanned.bytes, partial: record.partial },
        clock,
      );
    }
  };
  if (options.deferRecord !== true) publish();
  return resultOf(scanned, started, {
    record,
    id,
    dir: finalDir,
    ...(options.deferCache === true ? { writeCache: writeCacheLater } : {}),
    ...(options.deferRecord === true ? { publish: once(publish) } : {}),
  });
}

/** `fn` run at most once, however often it is called. */
function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

/** A file's identity and last change (inode, size, change time), or null when it is absent. */
function fileStamp(path: string): string | null {
  const st = statSync(path, { bigint: true, throwIfNoEntry: false });
  return st === undefined ? null : `${st.ino}:${st.size}:${st.ctimeNs}`;
}

/** Point `paths.lastManifest` at `file` (a hard link, swapped in by rename; a copy where links fail). */
function linkLastManifest(paths: WorkspacePaths, file: string): void {
  const temp = join(paths.tmp, `last-${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    linkSync(file, temp);
  } catch {
    writeFileAtomic(temp, readFileSync(file), { durable: false });
  }
  renameSync(temp, paths.lastManifest);
}

/** What `createSnapshot` needs of a scan, by whichever path it ran. */
/**
 * A created (or reused) snapshot's result: `own` plus what the scan reports, the manifest decoded
 * on first use. Callers pass their own fields in; spreading this result would decode the manifest.
 */
function resultOf(
  scanned: Scanned,
  started: number,
  own: Pick<CreateSnapshotResult, "record" | "id" | "dir" | "reused" | "writeCache" | "publish">,
): CreateSnapshotResult {
  let manifest: Manifest | undefined;
  return {
    ...own,
    get manifest() {
      manifest ??= scanned.manifest();
      return manifest;
    },
    manifestText: scanned.text,
    rehashed: scanned.rehashed,
    objects_written: scanned.objects_written,
    duration_ms: Math.round(performance.now() - started),
    scan: scanned.how,
  };
}

interface Scanned extends ScanCounts {
  how: ScanHow;
  /** The manifest's hash and its number of entries. */
  hash: string;
  entries: number;
  /** A stored manifest file with exactly this manifest, to link instead of writing a copy. */
  known?: ManifestRef;
  /** The manifest's stored bytes. */
  stored: () => Buffer;
  /** The manifest itself (decoded on demand when the delta path made only its text). */
  manifest: () => Manifest;
  /** Its canonical text. */
  text: () => Buffer;
  /** The text, when the scan made it anyway (to keep for the next read of the same file). */
  madeText: () => Buffer | undefined;
  /**
   * Write the new stat cache (when it changed), naming the manifest file `ref()` makes as this
   * manifest's (called only when the cache will name it).
   */
  writeCache: (ref: () => ManifestRef) => void;
}

/**
 * Scan for a snapshot: by the delta path (`deltaScan`: only what changed, spliced into the
 * stat cache and the last manifest) when it can vouch for the result, else by `scanWorkspace`
 * (an incremental update of the whole index, or a walk of the tree).
 */
function scanForSnapshot(
  paths: WorkspacePaths,
  options: {
    /** A travel's backup: new objects go into packs, however few (synced with its record). */
    packed: boolean;
    excludes: readonly string[];
    maxFileBytes: number;
    changed?: readonly string[];
    onProgress?: ScanOptions["onProgress"];
    beforeRead?: ScanOptions["beforeRead"];
  },
): Scanned {
  // New contents are held and stored in bulk: a first snapshot writes a few packs instead of
  // one file per object. Flushed below, before any record can refer to them.
  const store = batchObjectWrites(createObjectStore(paths.objects), undefined, {
    packed: options.packed,
  });
  const hooks = {
    onProgress: options.onProgress,
    beforeRead: options.beforeRead,
  };
  const delta = deltaScan(paths.root, {
    excludes: options.excludes,
    maxFileBytes: options.maxFileBytes,
    store,
    statCachePath: paths.statCache,
    dataDir: paths.data,
    clockDir: paths.tmp,
    changed: options.changed,
    ...hooks,
  });
  const nodes = nodeStoreOf(paths.data);
  if (!("fallback" in delta)) {
    store.flush();
    const root = delta.root;
    // Compressed when the record is written (after the answer, for a deferred record).
    let compressed: Buffer | undefined;
    const stored = () =>
      (compressed ??= root === undefined ? (delta.stored as Buffer) : compressManifest(root));
    const source = join(paths.data, "last-manifest (a delta scan)");
    let text: Buffer | undefined;
    const textOf = () => {
      text ??=
        root === undefined
          ? storedManifestText(stored(), source, nodes)
          : assembleText(root, nodes, source);
      return text;
    };
    return {
      ...delta,
      how: "delta",
      entries: delta.files + delta.dirs + delta.symlinks,
      stored,
      manifest: () => parseManifestText(textOf(), source),
      text: textOf,
      madeText: () => text,
      writeCache: (ref) => {
        if (!delta.quiet) {
          delta.writeCache(ref());
        }
      },
    };
  }
  let oldCache: StatCache | undefined = readStatCache(paths.statCache);
  const oldCacheSize = oldCache.entries.size;
  const scan = scanWorkspace(paths.root, {
    excludes: options.excludes,
    maxFileBytes: options.maxFileBytes,
    statCache: oldCache,
    store,
    clockDir: paths.tmp,
    ...(options.changed === undefined
      ? { useWatcher: true, watched: delta.watched }
      : { changed: options.changed }),
    ...hooks,
  });
  store.flush();
  // Not kept alive while the manifest is encoded and written (at 100k files it is ~20 MB).
  oldCache = undefined;
  // Unchanged (the watcher saw nothing): the manifest of the index's stored file, if it still
  // holds the bytes the index recorded (else it is encoded anew, and the index forgets it).
  let known = scan.unchanged ? scan.statCache.index?.manifest : undefined;
  const forgotten = known !== undefined && readManifestRef(paths.data, known) === null;
  if (forgotten) {
    known = undefined;
    delete scan.statCache.index?.manifest;
  }
  let text: Buffer | undefined;
  const textOf = () => {
    text ??= scan.manifestText();
    return text;
  };
  const encoded = known === undefined ? encodeManifestTree(textOf(), nodes) : undefined;
  return {
    how: scan.incremental ? "index" : "walk",
    files: scan.files,
    dirs: scan.dirs,
    symlinks: scan.symlinks,
    bytes: scan.bytes,
    skipped: scan.skipped,
    rehashed: scan.rehashed,
    objects_written: scan.objects_written,
    hash: encoded?.hash ?? (known?.hash as string),
    entries: scan.files + scan.dirs + scan.symlinks,
    known,
    stored: () => encoded?.bytes ?? encodeManifestTree(textOf(), nodes).bytes,
    manifest: () => scan.manifest,
    text: textOf,
    madeText: () => undefined,
    writeCache: (ref) => {
      // The manifest file is worth recording only where a later scan can update the index from
      // a change list (a watcher's token, or changes given): a walk never links or splices.
      const updatable = scan.statCache.watchToken !== undefined || options.changed !== undefined;
      const index = scan.statCache.index;
      if (updatable && index !== undefined && known === undefined) index.manifest = ref();
      // Nothing re-read, the same files, the watcher (if any) reported nothing, and no new
      // manifest to record: every entry carried over unchanged, and the old scan start, watch
      // token and manifest file stay valid (the first two only make the next scan look at
      // more), so the file need not be rewritten.
      if (
        (updatable && known === undefined) ||
        forgotten ||
        scan.rehashed > 0 ||
        scan.statCache.entries.size !== oldCacheSize ||
        !scan.watchQuiet
      ) {
        writeStatCache(paths.statCache, scan.statCache);
      }
    },
  };
}

export interface RecordQuery {
  /** Which records: `snapshot` (default) or `present_backup`. */
  kind?: RecordKind;
}

function listIds(dir: string, kind: RecordKind): string[] {
  const pattern = kind === "snapshot" ? SNAPSHOT_ID_PATTERN : BACKUP_ID_PATTERN;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return [];
    throw fromSystemError(error, `listing ${dir}`);
  }
  return names.filter((n) => pattern.test(n)).sort();
}

/**
 * The ids of every record folder of a kind, oldest first, by name only (no record is read): for
 * removing records, where one that does not read must not keep the others.
 */
export function listSnapshotIds(root: string, query: RecordQuery = {}): string[] {
  const kind = query.kind ?? "snapshot";
  return listIds(kindDir(root, kind), kind);
}

/**
 * Every record of a kind, oldest first. A record folder whose snapshot.json is corrupt throws
 * CORRUPT_FILE naming it (it is never silently ignored: gc must not drop what it references).
 * A listing for people uses `listSnapshotsChecked`, which lists the others.
 */
export function listSnapshots(root: string, query: RecordQuery = {}): SnapshotRecord[] {
  const kind = query.kind ?? "snapshot";
  const dir = kindDir(root, kind);
  return listIds(dir, kind).map((id) => readRecordFile(dir, id, kind));
}

/** A record folder whose snapshot.json cannot be read, as a listing flags it. */
export interface CorruptRecord {
  id: string;
  kind: RecordKind;
  /** CORRUPT_FILE (truncated, not JSON, wrong shape, another id), or the file system's code. */
  code: ErrorCode;
  message: string;
  /** The snapshot.json at fault. */
  file: string;
}

/**
 * Every record of a kind that reads, oldest first, and the folders whose snapshot.json does not
 * (`corrupt`): one damaged record must not hide the others from a listing (issue 16). Not for
 * gc, which must stop on any (`listSnapshots`).
 */
export function listSnapshotsChecked(
  root: string,
  query: RecordQuery = {},
): { records: SnapshotRecord[]; corrupt: CorruptRecord[] } {
  const kind = query.kind ?? "snapshot";
  const dir = kindDir(root, kind);
  const { read, failed } = readEachFlagged(listIds(dir, kind), (id) =>
    readRecordFile(dir, id, kind),
  );
  const corrupt = failed.map(({ key: id, error }) => ({
    id,
    kind,
    code: error.code,
    message: error.message,
    file: join(dir, id, RECORD_FILE),
  }));
  return { records: read, corrupt };
}

/**
 * `<dir>/<id>/snapshot.json`, which must name the folder it lies in (CORRUPT_FILE otherwise: its
 * manifest is looked up by the id inside, so a record copied or edited into another folder would
 * be read with another record's manifest).
 */
function readRecordFile(dir: string, id: string, kind: RecordKind): SnapshotRecord {
  const file = join(dir, id, RECORD_FILE);
  const record = readJsonFile(file, SnapshotRecordSchema);
  if (record.kind !== kind || recordId(record) !== id) {
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${file}: names ${record.kind} ${JSON.stringify(recordId(record))}, expected ${kind} ${JSON.stringify(id)} (its folder)`,
      { data: { file } },
    );
  }
  return record;
}

/** One record. SNAPSHOT_NOT_FOUND (with `data.available`) when there is no such id. */
export function readSnapshot(root: string, id: string, query: RecordQuery = {}): SnapshotRecord {
  const kind = query.kind ?? "snapshot";
  const dir = kindDir(root, kind);
  const pattern = kind === "snapshot" ? SNAPSHOT_ID_PATTERN : BACKUP_ID_PATTERN;
  const file = join(dir, id, RECORD_FILE);
  if (!pattern.test(id) || !existsSync(file)) {
    const available = listIds(dir, kind);
    const shown = available.length <= 10 ? available : [...available.slice(-10), "…"];
    throw new TimewarpError(
      ErrorCode.SNAPSHOT_NOT_FOUND,
      `${kind === "snapshot" ? "snapshot" : "backup"} ${JSON.stringify(id)} not found in ${dir}` +
        ` (have ${available.length}${available.length > 0 ? `: ${shown.join(", ")}` : ""})`,
      { data: { id, kind, available } },
    );
  }
  return readRecordFile(dir, id, kind);
}

/** The manifest of a record (by id or record), verified against the hash in its snapshot.json. */
export function readManifest(
  root: string,
  idOrRecord: string | SnapshotRecord,
  query: RecordQuery = {},
): Manifest {
  const { file, bytes, record } = readManifestFile(root, idOrRecord, query);
  return decodeManifest(bytes, { source: file, hash: record.manifest.hash });
}

/**
 * The canonical text of a record's manifest (`manifestBytes`), verified against its hash, not
 * decoded: for comparing with another text line by line (`diffManifestTexts`).
 */
export function readManifestText(
  root: string,
  idOrRecord: string | SnapshotRecord,
  query: RecordQuery = {},
): Buffer {
  const record =
    typeof idOrRecord === "string" ? readSnapshot(root, idOrRecord, query) : idOrRecord;
  const file = join(kindDir(root, record.kind), recordId(record), record.manifest.file);
  try {
    return readManifestTextFile(file, record.manifest.hash);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") {
      throw new TimewarpError(ErrorCode.CORRUPT_FILE, `${file} is missing`, { data: { file } });
    }
    throw fromSystemError(error, `reading ${file}`);
  }
}

/**
 * A record's manifest as a tree (its root checked against the record's hash, its nodes as they
 * are read), for comparing two manifests by their differing nodes (`diffTrees`).
 */
export function readManifestTree(
  root: string,
  idOrRecord: string | SnapshotRecord,
  query: RecordQuery = {},
): ManifestTree {
  const { file, bytes, record } = readManifestFile(root, idOrRecord, query);
  return storedTree(file, bytes, record.manifest.hash);
}

function readManifestFile(
  root: string,
  idOrRecord: string | SnapshotRecord,
  query: RecordQuery,
): { file: string; bytes: Buffer; record: SnapshotRecord } {
  const record =
    typeof idOrRecord === "string" ? readSnapshot(root, idOrRecord, query) : idOrRecord;
  const file = join(kindDir(root, record.kind), recordId(record), record.manifest.file);
  try {
    return { file, bytes: readFileSync(file), record };
  } catch (error) {
    if (errnoCode(error) === "ENOENT") {
      throw new TimewarpError(ErrorCode.CORRUPT_FILE, `${file} is missing`, { data: { file } });
    }
    throw fromSystemError(error, `reading ${file}`);
  }
}

/**
 * Delete a record: its folder is first renamed into `.timewarp/tmp/` (so it disappears at once),
 * then removed. Objects stay until `collectGarbage`. SNAPSHOT_NOT_FOUND when absent. With
 * `durable: false` the rename is not synced: for a record nothing refers to (an old backup),
 * which a power cut may bring back, to be removed again by the next cleanup.
 */
export function deleteSnapshot(
  root: string,
  id: string,
  options: RecordQuery & { clock?: Clock; durable?: boolean } = {},
): void {
  const kind = options.kind ?? "snapshot";
  readSnapshot(root, id, { kind });
  const paths = workspacePaths(root);
  const from = join(kindDir(root, kind), id);
  const aside = join(paths.tmp, `del-${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    mkdirSync(paths.tmp, { recursive: true });
    renameSync(from, aside);
    if (options.durable !== false) fsyncDirectory(kindDir(root, kind));
    rmSync(aside, { recursive: true, force: true });
  } catch (error) {
    throw fromSystemError(error, `deleting ${from}`);
  }
  if (kind === "snapshot") {
    appendEvent(
      paths.events,
      "snapshot.deleted",
      { snapshot_id: id },
      options.clock ?? systemClock,
    );
  }
}

/** Whether `record` holds exactly what a scan found: same kind, manifest, skipped paths and excludes. */
function holdsTheSame(
  record: SnapshotRecord,
  kind: RecordKind,
  scanned: Scanned,
  excludes: readonly string[],
): boolean {
  const skippedKey = (list: readonly SkippedPath[]) =>
    JSON.stringify(list.map((s) => [s.path, s.path_b64 ?? null, s.reason]));
  return (
    record.kind === kind &&
    record.manifest.hash === scanned.hash &&
    skippedKey(record.skipped) === skippedKey(scanned.skipped) &&
    JSON.stringify(record.exclude_globs) === JSON.stringify(excludes)
  );
}
