import { unlinkSync } from "node:fs";
import { type WorkspacePaths, workspacePaths } from "../core/index.ts";
import { nodeStoreOf } from "./manifest-nodes.ts";
import {
  type LiveNode,
  planNodeLayout,
  readStoredManifest,
  recordManifestFile,
  walkNewNodes,
} from "./manifest-walk.ts";
import { listSnapshots } from "./snapshots.ts";

/**
 * gc's part for the manifest trees: keep every node in `.timewarp/manifests/` that a record
 * (snapshot or backup) or the last manifest (the next delta snapshot's base) reaches, in one new
 * pack laid out by `planNodeLayout` (older versions of a leaf as deltas against newer ones), and
 * remove the rest and the temp files of dead writers. A record or root that does not read throws
 * (gc must never sweep from a partial set); the last manifest, a cache, only keeps what it names
 * when it reads. Only group texts are read to plan; the writer reads each node once more. The
 * caller holds the workspace lock. Returns the nodes removed.
 */
export function sweepManifestNodes(root: string): number {
  const paths = workspacePaths(root);
  const nodes = nodeStoreOf(paths.data);
  const { ids, temps } = nodes.listAll();
  if (ids.length === 0 && temps.length === 0) return 0;
  const live = new Map<string, LiveNode>();
  // Counted over the roots that read: the newest tree is rank 0 without a last manifest too.
  let rank = 0;
  for (const r of liveRoots(paths)) {
    let stored: ReturnType<typeof readStoredManifest>;
    try {
      stored = readStoredManifest(r.file, r.hash);
      if (stored.root === undefined) continue;
      walkNewNodes(
        stored.root,
        nodes,
        r.file,
        (id) => !live.has(id),
        (kind, ref) => live.set(ref.id, { kind, first: ref.first, rank }),
      );
      rank++;
    } catch (error) {
      // absent or damaged last manifest: a later delta snapshot falls back to a scan of the index
      if (!r.optional) throw error;
    }
  }
  const removed = nodes.keepOnly(planNodeLayout(live));
  for (const temp of temps) {
    try {
      unlinkSync(temp);
    } catch {
      // gone already
    }
  }
  return removed;
}

/**
 * The roots to keep, newest first: the last manifest (the next snapshot's base), then the
 * records by creation time, newest first (the ones travel and return read most).
 */
function liveRoots(
  paths: WorkspacePaths,
): { file: string; hash: string | undefined; optional: boolean }[] {
  const records = [
    ...listSnapshots(paths.root, { kind: "snapshot" }),
    ...listSnapshots(paths.root, { kind: "present_backup" }),
  ].sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0));
  return [
    { file: paths.lastManifest, hash: undefined, optional: true },
    ...records.map((r) => ({
      file: recordManifestFile(paths, r),
      hash: r.manifest.hash,
      optional: false,
    })),
  ];
}
