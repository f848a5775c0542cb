import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  TimewarpError,
  type WorkspacePaths,
} from "../core/index.ts";
import {
  decodeStoredManifest,
  MANIFEST_SCHEMA_VERSION,
  type ManifestEntry,
  manifestProblem,
} from "./manifest.ts";
import type { NodeLayout, NodeStore } from "./manifest-nodes.ts";
import { type NodeRef, parseRefs } from "./manifest-tree.ts";
import { recordId, type SnapshotRecord } from "./snapshot-record.ts";

/**
 * gc's and fsck's walks over the manifest trees (issue 22 item 5: at 100k files a whole
 * manifest is ~20 MB of text and ~100k objects decoded; 21 of them held gc at 488 MiB). A walk
 * goes node by node, skips a node it has seen (a node's id fixes everything below it, so a
 * group seen before is skipped with its leaves) and keeps no text: the cost follows the
 * distinct nodes, not the records times their size.
 */

export type NodeKind = "group" | "leaf";

/**
 * Visit every group and leaf `root` (a tree root's text) reaches for which `isNew` says yes, in
 * tree order; a group it declines is skipped with its leaves. Only group texts are read here.
 */
export function walkNewNodes(
  root: Buffer,
  nodes: NodeStore,
  source: string,
  isNew: (id: string) => boolean,
  visit: (kind: NodeKind, ref: NodeRef) => void,
): void {
  for (const group of parseRefs(root, source)) {
    if (!isNew(group.id)) continue;
    visit("group", group);
    for (const leaf of parseRefs(nodes.read(group.id), source)) {
      if (isNew(leaf.id)) visit("leaf", leaf);
    }
  }
}

/** A leaf's entries (its lines, a JSON array's body), checked as `ManifestSchema` would. */
export function leafEntries(text: Buffer, source: string): ManifestEntry[] {
  let entries: unknown;
  try {
    entries = JSON.parse(`[${text.toString("utf8")}]`);
  } catch (error) {
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${source}: a manifest leaf is not valid JSON (${error instanceof Error ? error.message : String(error)})`,
      { data: { file: source } },
    );
  }
  const problem = manifestProblem({ schema_version: MANIFEST_SCHEMA_VERSION, entries });
  if (problem !== null) {
    throw new TimewarpError(ErrorCode.CORRUPT_FILE, `${source}: a manifest leaf: ${problem}`, {
      data: { file: source },
    });
  }
  return entries as ManifestEntry[];
}

/** A record's manifest file. */
export function recordManifestFile(paths: WorkspacePaths, record: SnapshotRecord): string {
  const dir = record.kind === "snapshot" ? paths.snapshots : paths.backups;
  return join(dir, recordId(record), record.manifest.file);
}

/**
 * The stored manifest in `file` (a tree's root, or a whole text of a record written before
 * trees), checked against `hash` when given; a missing file is CORRUPT_FILE.
 */
export function readStoredManifest(
  file: string,
  hash: string | undefined,
): ReturnType<typeof decodeStoredManifest> {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") {
      throw new TimewarpError(ErrorCode.CORRUPT_FILE, `${file} is missing`, { data: { file } });
    }
    throw fromSystemError(error, `reading ${file}`);
  }
  return decodeStoredManifest(bytes, file, hash);
}

/** A live node as gc's sweep met it: its kind and first path (`key`), and its newest root. */
export interface LiveNode {
  key: string;
  /** The index of the newest root reaching it (0: the newest tree). */
  rank: number;
}

/** Delta chains of gc's node packs stay this short: reading a node applies at most this many. */
export const MAX_NODE_DEPTH = 10;

/**
 * gc's layout of the live nodes, given in the order the walk met them (roots newest first):
 * the newest tree's nodes whole, in tree order, so a whole read of the newest manifest reads
 * them as it read a snapshot's own pack; then the older versions of each leaf or group (same
 * kind and first path), newest first, each a delta against the version after it in time (which
 * differs by a line or two), chains at most `MAX_NODE_DEPTH` deep. Pure.
 */
export function planNodeLayout(live: ReadonlyMap<string, LiveNode>): NodeLayout[] {
  const whole: NodeLayout[] = [];
  const byKey = new Map<string, string[]>();
  for (const [id, node] of live) {
    if (node.rank === 0) whole.push({ id, base: null });
    const versions = byKey.get(node.key);
    if (versions === undefined) byKey.set(node.key, [id]);
    else versions.push(id);
  }
  const older: NodeLayout[] = [];
  for (const versions of byKey.values()) {
    let depth = 0;
    for (let i = 0; i < versions.length; i++) {
      const id = versions[i] as string;
      if (i === 0) {
        if ((live.get(id) as LiveNode).rank !== 0) older.push({ id, base: null });
        continue;
      }
      depth = depth >= MAX_NODE_DEPTH ? 0 : depth + 1;
      older.push({ id, base: depth === 0 ? null : (versions[i - 1] as string) });
    }
  }
  return [...whole, ...older];
}
