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

/** A live node as gc's sweep met it: its kind, its first line's path, its newest root. */
export interface LiveNode {
  kind: NodeKind;
  /** The first line's path key (`NodeRef.first`). */
  first: string;
  /** The index of the newest root reaching it (0: the newest tree). */
  rank: number;
}

/** Delta chains of gc's node packs stay this short: reading a node applies at most this many. */
export const MAX_NODE_DEPTH = 10;

/**
 * gc's layout of the live nodes, given in the order the walk met them (roots newest first, so
 * a node's versions come newest first): in tree order (by first path, a group before its first
 * leaf), each position's newest version whole, then its older versions (same kind and first
 * path), each a delta against the version after it in time, which differs by a line or two;
 * chains at most `MAX_NODE_DEPTH` deep. A position's versions lie side by side, so reading any
 * snapshot's tree goes through the blocks in order, and a chain stays in a block or two; a whole
 * read of the newest tree decompresses the older versions beside its nodes too (on the 100k
 * store test ~12% more bytes). Pure.
 */
export function planNodeLayout(live: ReadonlyMap<string, LiveNode>): NodeLayout[] {
  const byKey = new Map<string, { first: string; kind: NodeKind; ids: string[] }>();
  for (const [id, node] of live) {
    const key = `${node.kind} ${node.first}`;
    const versions = byKey.get(key);
    if (versions === undefined) byKey.set(key, { first: node.first, kind: node.kind, ids: [id] });
    else versions.ids.push(id);
  }
  const positions = [...byKey.values()].sort((a, b) =>
    a.first < b.first ? -1 : a.first > b.first ? 1 : a.kind < b.kind ? -1 : 1,
  );
  const layout: NodeLayout[] = [];
  for (const { ids } of positions) {
    let depth = 0;
    for (let i = 0; i < ids.length; i++) {
      depth = i === 0 || depth >= MAX_NODE_DEPTH ? 0 : depth + 1;
      layout.push({ id: ids[i] as string, base: depth === 0 ? null : (ids[i - 1] as string) });
    }
  }
  return layout;
}
