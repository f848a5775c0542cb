import { readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { workspacePaths } from "../core/index.ts";
import { decodeStoredManifest } from "./manifest.ts";
import { nodeStoreOf } from "./manifest-nodes.ts";
import { treeNodeIds } from "./manifest-tree.ts";
import { recordId } from "./snapshot-record.ts";
import { listSnapshots } from "./snapshots.ts";

/**
 * gc's part for the manifest trees: remove every node in `.timewarp/manifests/` that no record
 * (snapshot or backup) and not the last manifest (the next delta snapshot's base) reaches, and
 * the temp files of dead writers. A record or root that does not read throws (gc must never
 * sweep from a partial set); the last manifest, a cache, only keeps what it names when it reads.
 * The caller holds the workspace lock. Returns the nodes removed.
 */
export function sweepManifestNodes(root: string): number {
  const paths = workspacePaths(root);
  const nodes = nodeStoreOf(paths.data);
  const { ids, temps } = nodes.listAll();
  if (ids.length === 0 && temps.length === 0) return 0;
  const live = new Set<string>();
  const addRoot = (file: string, hash: string | undefined) => {
    const stored = decodeStoredManifest(readFileSync(file), file, hash);
    if (stored.root !== undefined)
      for (const id of treeNodeIds(stored.root, nodes, file)) live.add(id);
  };
  for (const kind of ["snapshot", "present_backup"] as const) {
    const dir = kind === "snapshot" ? paths.snapshots : paths.backups;
    for (const record of listSnapshots(root, { kind })) {
      addRoot(join(dir, recordId(record), record.manifest.file), record.manifest.hash);
    }
  }
  try {
    addRoot(paths.lastManifest, undefined);
  } catch {
    // absent or damaged: a later delta snapshot falls back to a scan of the index
  }
  const removed = nodes.keepOnly(live);
  for (const temp of temps) {
    try {
      unlinkSync(temp);
    } catch {
      // gone already
    }
  }
  return removed;
}
