import { statSync } from "node:fs";
import { relative } from "node:path";
import {
  acquireLockWaiting,
  ErrorCode,
  effectiveExcludes,
  faultPoint,
  isTimewarpError,
  type LockHandle,
  readConfig,
  workspacePaths,
  writeFileAtomic,
} from "../core/index.ts";
import { encodeManifestTree } from "./manifest.ts";
import { nodeStoreOf } from "./manifest-nodes.ts";
import { treeHashOfText } from "./manifest-tree.ts";
import { batchObjectWrites, createObjectStore } from "./object-store.ts";
import { scanScope, scanWorkspace } from "./scan-workspace.ts";
import {
  loadStatCache,
  type ManifestRef,
  manifestFileSum,
  readManifestRef,
  writeStatCache,
} from "./stat-cache.ts";
import { overlayPathOf } from "./stat-cache-parts.ts";
import { watchedChanges } from "./watch.ts";

/**
 * The prime of a new watch daemon (`timewarp watch prime`, which the daemon runs in a child
 * process once its watches are in place): the journal does not cover the time before the
 * daemon started, so the first scan that asks it would walk the whole tree, in the daemon's
 * worker when a served command asked (at 100k files that left the daemon at ~145 MiB for good:
 * issue 22, item 5). The prime walks instead, in its own short-lived process, and leaves the
 * snapshots' stat cache (and the last manifest it names) as of a token of the new daemon: the
 * next snapshot, status, travel or return goes by the delta path.
 *
 * - **The token before the walk.** A change made while the prime walks is in the journal after
 *   the token, so the next scan visits it; the walk itself needs no lock (it reads the tree and
 *   adds objects, as any scan does).
 * - **The commit under the workspace lock**, waited for a few seconds: the cache is written
 *   only when no one wrote it since the prime read it (a snapshot that ran meanwhile walked
 *   itself, and its cache is as good), and only when every object the walk read is still in
 *   the store (a gc meanwhile drops unreferenced ones). Otherwise nothing is written: scans
 *   walk, as without a prime.
 * - **The manifest.** When the tree is what the cache's manifest file holds (the usual case: a
 *   daemon that stopped idle), that file stays named; otherwise the walk's manifest is stored
 *   as `last-manifest.json.br`, the next snapshot's base, whose nodes gc keeps.
 */

export interface PrimeResult {
  /** `primed`: the cache now holds this daemon's token; `current`: it did already. */
  outcome: "primed" | "current" | "skipped";
  /** Why nothing was written, for `skipped`. */
  reason?: string;
  /** The files the walk found, and how many it read again (for `primed`). */
  files?: number;
  rehashed?: number;
  /** Whether the cache's manifest file was kept or the walk's manifest was written. */
  manifest?: "kept" | "written";
}

export interface PrimeOptions {
  /** How long to wait for the workspace lock before giving up (default 10 s). */
  lockWaitMs?: number;
}

/** A file's identity and last change, or null when absent. */
function stampOf(path: string): string | null {
  const st = statSync(path, { bigint: true, throwIfNoEntry: false });
  return st === undefined ? null : `${st.ino}:${st.size}:${st.ctimeNs}`;
}

/** The stat cache's base and overlay, as they are now. */
function cacheStamp(path: string): string {
  return `${stampOf(path)} ${stampOf(overlayPathOf(path))}`;
}

/** The lock at `path`, waited for up to `waitMs` while another process holds it; else null. */
function lockWaiting(path: string, waitMs: number): LockHandle | null {
  try {
    return acquireLockWaiting(path, { command: "timewarp watch prime", waitMs });
  } catch (error) {
    if (isTimewarpError(error, ErrorCode.LOCKED)) return null;
    throw error;
  }
}

/**
 * Bring the workspace's stat cache up to a token of the running watch daemon, walking once
 * (see above). Skipped, writing nothing, when there is no cache with an index yet (the first
 * snapshot walks and stores every file anyway), when no daemon answers, or when the commit
 * cannot vouch for the walk.
 */
export function primeWatchedCache(root: string, options: PrimeOptions = {}): PrimeResult {
  const paths = workspacePaths(root);
  const config = readConfig(paths.config);
  const excludes = effectiveExcludes(config);
  const scope = scanScope(excludes);
  const skipped = (reason: string): PrimeResult => ({ outcome: "skipped", reason });
  const stamp = cacheStamp(paths.statCache);
  const old = loadStatCache(paths.statCache);
  if (old?.index === undefined) return skipped("no stat cache with an index yet");
  // The token first: every change from this moment on is in the journal after it. (Patient: a
  // daemon that has just started is busy loading its worker, and this child waits for no one.)
  const answer = watchedChanges(root, old.watchToken, scope, { timeoutMs: 5_000 });
  if (answer.changed !== undefined) return { outcome: "current" };
  if (answer.token === undefined) return skipped(answer.reason ?? "no watch daemon answered");
  const store = batchObjectWrites(createObjectStore(paths.objects));
  const scan = scanWorkspace(paths.root, {
    excludes,
    maxFileBytes: config.max_file_bytes,
    statCache: old,
    store,
    clockDir: paths.tmp,
    watched: answer,
  });
  store.flush();
  // (the tests hold it here: a change made now must reach the next scan through the journal)
  faultPoint("prime:walked");
  const text = scan.manifestText();
  const hash = treeHashOfText(text);
  const oldRef = old.index.manifest;
  const lock = lockWaiting(paths.lock, options.lockWaitMs ?? 10_000);
  if (lock === null) return skipped("the workspace stayed locked");
  try {
    if (cacheStamp(paths.statCache) !== stamp)
      return skipped("the stat cache was written meanwhile");
    const objects = createObjectStore(paths.objects);
    for (const [key, c] of scan.statCache.entries) {
      if (old.entries.get(key)?.oid === c.oid) continue;
      if (!objects.has(c.oid)) return skipped(`object ${c.oid} went meanwhile (a gc)`);
    }
    let ref: ManifestRef;
    let manifest: PrimeResult["manifest"] = "kept";
    if (
      oldRef !== undefined &&
      oldRef.hash === hash &&
      readManifestRef(paths.data, oldRef) !== null
    ) {
      ref = oldRef;
    } else {
      const encoded = encodeManifestTree(text, nodeStoreOf(paths.data));
      // (a kill after this leaves the old cache naming this file: its sum no longer matches,
      // and the next snapshot scans the usual way)
      writeFileAtomic(paths.lastManifest, encoded.bytes, { durable: false });
      ref = {
        file: relative(paths.data, paths.lastManifest),
        hash: encoded.hash,
        sum: manifestFileSum(encoded.bytes),
      };
      manifest = "written";
    }
    const cache = scan.statCache;
    if (cache.index !== undefined) cache.index.manifest = ref;
    writeStatCache(paths.statCache, cache);
    return { outcome: "primed", files: scan.files, rehashed: scan.rehashed, manifest };
  } finally {
    lock.release();
  }
}
