import { join } from "node:path";
import { type ManifestTree, memoryNodeStore, storedTree } from "./diff-trees.ts";
import { nodeStoreOf } from "./manifest-nodes.ts";
import type { SkippedPath } from "./scan-workspace.ts";
import { type DeltaScanOptions, deltaScan } from "./snapshot-delta.ts";

/**
 * The workspace's manifest as a tree, by the delta path, with what the scan skipped: the last
 * manifest's tree with the changed paths spliced in, its new nodes held in memory (nothing is
 * written: not the node store, not the stat cache). Compared with a stored tree by `diffTrees`,
 * the cost follows the changes, not the workspace. Null when the delta path cannot vouch (no
 * watcher, no recorded manifest, other excludes, a name that is not plain): scan the usual way.
 */
export function scanWorkspaceTree(
  root: string,
  options: Pick<DeltaScanOptions, "excludes" | "statCachePath" | "dataDir" | "maxFileBytes">,
): { tree: ManifestTree; skipped: SkippedPath[] } | null {
  const nodes = memoryNodeStore(nodeStoreOf(options.dataDir));
  const delta = deltaScan(root, { ...options, nodes });
  if ("fallback" in delta) return null;
  if (delta.root !== undefined) {
    return { tree: { root: delta.root, nodes, source: "the workspace" }, skipped: delta.skipped };
  }
  if (delta.known === undefined || delta.stored === undefined) return null;
  const file = join(options.dataDir, delta.known.file);
  return { tree: storedTree(file, delta.stored, delta.known.hash), skipped: delta.skipped };
}
