import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import {
  type Manifest,
  type ManifestEntry,
  manifestBytes,
  sortEntries,
} from "../../src/store/manifest.ts";
import { createNodeStore, type NodeStore } from "../../src/store/manifest-nodes.ts";

/**
 * What the manifest tree tests share (src/store/manifest-tree, manifest-nodes,
 * manifest-node-index, diff-trees): node stores in temp folders, removed after each test, and
 * manifests made from a map of entries.
 */

/**
 * Node store folders for one test file, each `<temp>/manifests` (not made yet, as in a fresh
 * `.timewarp/`), all removed after each test. Call it once, at the top level of a test file.
 */
export function tempNodeStores(prefix: string): {
  /** A new store folder. */
  nodeDir: () => string;
  /** A node store in a new folder. */
  nodeStore: () => NodeStore;
} {
  const made: string[] = [];
  afterEach(() => {
    for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const nodeDir = () => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    made.push(d);
    return join(d, "manifests");
  };
  return { nodeDir, nodeStore: () => createNodeStore(nodeDir()) };
}

/** A file entry whose every field (size, time, id) is told apart by the counter `n`. */
export const fileEntry = (path: string, n: number): ManifestEntry => ({
  path,
  type: "file",
  mode: 0o644,
  size: n,
  mtime_ms: 1000 + n,
  oid: n.toString(16).padStart(40, "0"),
});

/** The manifest of the entries of `m`, sorted as a snapshot keeps them. */
export const manifestOf = (m: Map<string, ManifestEntry>): Manifest => ({
  schema_version: 1,
  entries: sortEntries([...m.values()]),
});

/** The manifest's text, as a tree is built from it. */
export const manifestText = (m: Map<string, ManifestEntry>): Buffer => manifestBytes(manifestOf(m));
