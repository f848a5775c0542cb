import { ErrorCode, gitBlobId, TimewarpError } from "../core/index.ts";
import type { NodeStore } from "./manifest-nodes.ts";

/**
 * A manifest stored as a tree (issue 22): the canonical text (`manifestBytes`) stays the logical
 * manifest, but it is kept in content-defined pieces, so an unchanged part is the same node in
 * every snapshot and a snapshot writes only the pieces that hold its changes.
 *
 * - A **leaf** is a run of the text's entry lines (joined by ",\n", as in the text). A leaf ends
 *   after a line whose path hashes to 0 mod `LEAF_SPLIT` once it has `LEAF_MIN` lines, or at
 *   `LEAF_MAX` lines: its end depends only on the lines since its start, so an edit changes
 *   its own leaf (and the next ones up to where the old and new cuts meet again, usually none).
 * - A **group** lists leaves, one line each: `<leaf id> <entries>[c] <first path as JSON>`
 *   (`c`: the leaf ended on a line whose path's hash also picks it as a group's end). A group
 *   ends after such a leaf once it has `GROUP_MIN` leaves, or at `GROUP_MAX`.
 * - The **root** is the record's manifest file: a head line, then one line per group in the same
 *   form. The manifest's hash is the root text's git blob id; node ids are their texts' blob
 *   ids, so the hash names the whole manifest (a Merkle tree), and equal manifests have equal
 *   roots whatever edits led to them.
 *
 * The sizes are set by measurement (issue 22: 20 random edits at 100k files write ≤ 50 KB):
 * the leaf holding a random line is longer than the mean (size-biased), so the minimum and
 * maximum keep leaves near ~32 lines and groups near ~12 leaves.
 */

export const LEAF_MIN = 16;
export const LEAF_SPLIT = 12;
export const LEAF_MAX = 64;
export const GROUP_MIN = 4;
export const GROUP_SPLIT = 8;
export const GROUP_MAX = 64;
const ROOT_HEAD = '{"manifest_tree":1,';
const ROOT_HEAD_BYTES = Buffer.from(ROOT_HEAD);
const SEP = Buffer.from(",\n");
const TYPE_KEY = Buffer.from(',"type":"');
const PATH_AT = '{"path":'.length;

/** A node named in a group or the root: its id, its entries, its first line's path key. */
export interface NodeRef {
  id: string;
  count: number;
  /** The first line's text between `{"path":` and `,"type"` (the path as JSON, for plain names). */
  first: string;
  /** A leaf that may end a group (see above). */
  cut?: boolean;
}

/** Is `text` (a decompressed manifest file) a tree root rather than a whole canonical text? */
export function isTreeRoot(text: Buffer): boolean {
  return (
    text.length >= ROOT_HEAD_BYTES.length &&
    text.compare(ROOT_HEAD_BYTES, 0, ROOT_HEAD_BYTES.length, 0, ROOT_HEAD_BYTES.length) === 0
  );
}

/** FNV-1a over a line's bytes up to its type key (the path, and the path_b64 if any). */
function lineHash(line: Buffer, end: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < end; i++) h = Math.imul(h ^ (line[i] as number), 0x01000193);
  return h >>> 0;
}

function keyEnd(line: Buffer): number {
  const at = line.indexOf(TYPE_KEY);
  return at < 0 ? line.length : at;
}

/**
 * Builds a tree from entry lines in order, writing each finished node to the store. Lines
 * come one by one, or (at a leaf boundary) whole leaves, or (at a group boundary) whole groups
 * kept as they are.
 */
class TreeBuilder {
  readonly groups: NodeRef[] = [];
  private leaves: NodeRef[] = [];
  private lines: Buffer[] = [];
  private readonly nodes: NodeStore;
  /** Lines are views of one text, each after the last and its ",\n": a leaf is their span. */
  private readonly views: boolean;
  constructor(nodes: NodeStore, views = false) {
    this.nodes = nodes;
    this.views = views;
  }

  get atLeafEdge(): boolean {
    return this.lines.length === 0;
  }
  get atGroupEdge(): boolean {
    return this.lines.length === 0 && this.leaves.length === 0;
  }
  addLine(line: Buffer): void {
    this.lines.push(line);
    const n = this.lines.length;
    const h = lineHash(line, keyEnd(line));
    if (n >= LEAF_MIN && h % LEAF_SPLIT === 0) this.closeLeaf((h >>> 16) % GROUP_SPLIT === 0);
    else if (n >= LEAF_MAX) this.closeLeaf(false);
  }
  addLeaf(ref: NodeRef): void {
    this.leaves.push(ref);
    this.maybeCloseGroup(ref.cut === true);
  }
  addGroup(ref: NodeRef): void {
    this.groups.push(ref);
  }
  finish(): void {
    this.closeGroup();
  }
  private maybeCloseGroup(cut: boolean): void {
    const n = this.leaves.length;
    if ((cut && n >= GROUP_MIN) || n >= GROUP_MAX) this.closeGroup();
  }
  private closeLeaf(cut: boolean): void {
    if (this.lines.length === 0) return;
    const first = this.lines[0] as Buffer;
    const text = this.views ? spanOf(first, this.lines.at(-1) as Buffer) : joinLines(this.lines);
    const count = this.lines.length;
    this.lines = [];
    const ref = this.store(text, count, first.toString("utf8", PATH_AT, keyEnd(first)));
    this.leaves.push(cut ? { ...ref, cut } : ref);
    this.maybeCloseGroup(cut);
  }
  private closeGroup(): void {
    this.closeLeaf(false);
    if (this.leaves.length === 0) return;
    let count = 0;
    for (const r of this.leaves) count += r.count;
    const text = Buffer.from(refLines(this.leaves), "utf8");
    this.groups.push(this.store(text, count, (this.leaves[0] as NodeRef).first));
    this.leaves = [];
  }
  private store(text: Buffer, count: number, first: string): NodeRef {
    const id = gitBlobId(text);
    this.nodes.write(id, text);
    return { id, count, first };
  }
}

function joinLines(lines: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (const l of lines) {
    if (parts.length > 0) parts.push(SEP);
    parts.push(l);
  }
  return Buffer.concat(parts);
}

/** The bytes from `first`'s start to `last`'s end, both views of one buffer: no copy. */
function spanOf(first: Buffer, last: Buffer): Buffer {
  const end = last.byteOffset + last.length;
  if (last.buffer !== first.buffer || end < first.byteOffset) {
    throw new TimewarpError(ErrorCode.INTERNAL, "manifest lines are not views of one text");
  }
  return Buffer.from(first.buffer, first.byteOffset, end - first.byteOffset);
}

const refLines = (refs: readonly NodeRef[]) =>
  refs.map((r) => `${r.id} ${r.count}${r.cut === true ? "c" : ""} ${r.first}\n`).join("");

/** The root text for these groups. */
function rootText(groups: readonly NodeRef[]): Buffer {
  let entries = 0;
  for (const g of groups) entries += g.count;
  return Buffer.from(`${ROOT_HEAD}"entries":${entries}}\n${refLines(groups)}`, "utf8");
}

/** A stored tree: its root text, hash and number of entries. */
export interface TreeRoot {
  root: Buffer;
  hash: string;
  entries: number;
}

function finishRoot(b: TreeBuilder, nodes: NodeStore): TreeRoot {
  b.finish();
  nodes.flush();
  const root = rootText(b.groups);
  let entries = 0;
  for (const g of b.groups) entries += g.count;
  return { root, hash: gitBlobId(root), entries };
}

/** The body of a canonical text: from after its head line to before its tail. */
function bodyOf(text: Buffer): { start: number; end: number } {
  const start = text.indexOf(0x0a) + 1;
  const tail = Buffer.from("\n]}\n");
  const end = text.length - tail.length;
  if (start <= 0 || end < start - 1 || text.compare(tail, 0, tail.length, end) !== 0) {
    throw new TimewarpError(ErrorCode.INTERNAL, "not a canonical manifest text");
  }
  return { start, end: Math.max(start, end) };
}

/**
 * Store the canonical manifest text `text` as a tree; its root. With `views`, the leaves given
 * to `nodes` are views of `text`, not copies: a tree kept in memory then holds the text once
 * (at 100k files ~20 MB) instead of the text and its copy while it is built.
 */
export function buildTree(
  text: Buffer,
  nodes: NodeStore,
  options: { views?: boolean } = {},
): TreeRoot {
  const views = options.views === true;
  const b = new TreeBuilder(nodes, views);
  const { start, end } = bodyOf(text);
  for (let at = start; at < end; ) {
    const nl = text.indexOf(0x0a, at);
    const lineEnd = nl < 0 || nl >= end ? end : nl - 1; // before the ","
    const line = text.subarray(at, lineEnd);
    b.addLine(views ? line : Buffer.from(line));
    at = nl < 0 || nl >= end ? end : nl + 1;
  }
  return finishRoot(b, nodes);
}

/** The tree root of a canonical text without storing anything: `hashManifest`'s answer. */
export function treeHashOfText(text: Buffer): string {
  const none: NodeStore = {
    dir: "",
    read: () => {
      throw new TimewarpError(ErrorCode.INTERNAL, "no node store");
    },
    readMany: () => {
      throw new TimewarpError(ErrorCode.INTERNAL, "no node store");
    },
    write: () => {},
    flush: () => {},
    listAll: () => ({ ids: [], temps: [] }),
    keepOnly: () => 0,
  };
  return buildTree(text, none).hash;
}

/** The node refs in a group's or root's text (after the root's head line). */
export function parseRefs(text: Buffer, source: string): NodeRef[] {
  const s = text.toString("utf8");
  const refs: NodeRef[] = [];
  let at = isTreeRoot(text) ? s.indexOf("\n") + 1 : 0;
  while (at < s.length) {
    const nl = s.indexOf("\n", at);
    const line = s.slice(at, nl < 0 ? s.length : nl);
    const m = /^([0-9a-f]{40}) (\d+)(c?) (.+)$/.exec(line);
    if (m === null) {
      throw new TimewarpError(ErrorCode.CORRUPT_FILE, `${source}: not a manifest tree node`, {
        data: { file: source },
      });
    }
    const ref: NodeRef = { id: m[1] as string, count: Number(m[2]), first: m[4] as string };
    refs.push(m[3] === "c" ? { ...ref, cut: true } : ref);
    at = nl < 0 ? s.length : nl + 1;
  }
  return refs;
}

const TEXT_HEAD = Buffer.from('{"schema_version":1,"entries":[\n');
const TEXT_TAIL = Buffer.from("\n]}\n");

/** The canonical text a tree root stands for, every node read (and checked) from the store. */
export function assembleText(root: Buffer, nodes: NodeStore, source: string): Buffer {
  const leafIds: string[] = [];
  const groups = parseRefs(root, source);
  const groupTexts = nodes.readMany(groups.map((g) => g.id));
  for (const text of groupTexts) for (const leaf of parseRefs(text, source)) leafIds.push(leaf.id);
  // Leaves are views into their blocks, each block decompressed once; the text is one copy.
  const leaves = nodes.readMany(leafIds);
  let size = TEXT_HEAD.length + TEXT_TAIL.length + SEP.length * Math.max(0, leaves.length - 1);
  for (const l of leaves) size += l.length;
  const out = Buffer.allocUnsafe(size);
  let at = TEXT_HEAD.copy(out, 0);
  for (let i = 0; i < leaves.length; i++) {
    if (i > 0) at += SEP.copy(out, at);
    at += (leaves[i] as Buffer).copy(out, at);
  }
  TEXT_TAIL.copy(out, at);
  return out;
}

/** Is `s` a JSON string with nothing escaped (no quote, backslash or control character inside)? */
function isPlainJsonString(s: string): boolean {
  if (s.length < 2 || s.charCodeAt(0) !== 34 || s.charCodeAt(s.length - 1) !== 34) return false;
  for (let i = 1; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c === 34 || c === 92 || c < 32) return false;
  }
  return true;
}

/** The path a ref's first line holds; null when it is not a plain name. */
function keyOf(first: string): string | null {
  if (!first.endsWith('"')) return null;
  // Most paths need no unescaping: a splice asks this of every line of the leaves it edits.
  if (isPlainJsonString(first)) return first.slice(1, -1);
  try {
    const p = JSON.parse(first) as unknown;
    return typeof p === "string" ? p : null;
  } catch {
    return null;
  }
}

/** One edit: a path and its new line (null: the path goes). */
export interface LineEdit {
  path: string;
  line: Buffer | null;
}

/**
 * The tree of the manifest `root` stands for with `edits` applied (sorted by path, one per
 * path): only the groups and leaves that hold an edited path (and a neighbour whose boundary
 * line went) are read and written anew, the rest kept by id. Null when a name on the way is not
 * plain UTF-8 (those sort by their bytes): the caller encodes the whole text.
 */
export function spliceTree(
  root: Buffer,
  edits: readonly LineEdit[],
  nodes: NodeStore,
  source: string,
): TreeRoot | null {
  const { groups, keys } = rootRefs(root, source);
  const b = new TreeBuilder(nodes);
  let e = 0; // the next edit
  if (keys.some((k) => k === null)) return null;
  for (let gi = 0; gi < groups.length; gi++) {
    const g = groups[gi] as NodeRef;
    const nextKey = keys[gi + 1] ?? null;
    const last = gi === groups.length - 1;
    const touched = e < edits.length && (last || (edits[e] as LineEdit).path < (nextKey as string));
    if (!touched && b.atGroupEdge) {
      b.addGroup(g);
      continue;
    }
    const leaves = parseRefs(nodes.read(g.id), source);
    for (let li = 0; li < leaves.length; li++) {
      const leaf = leaves[li] as NodeRef;
      const after = li + 1 < leaves.length ? keyOf((leaves[li + 1] as NodeRef).first) : nextKey;
      if (li + 1 < leaves.length && after === null) return null;
      const lastLeaf = last && li === leaves.length - 1;
      const mine =
        e < edits.length && (lastLeaf || (edits[e] as LineEdit).path < (after as string));
      if (!mine && b.atLeafEdge) {
        b.addLeaf(leaf);
        continue;
      }
      const done = mergeLeaf(b, nodes.read(leaf.id), edits, e, lastLeaf ? null : after);
      if (done === null) return null;
      e = done;
    }
  }
  // Edits past the end of an empty manifest (or of everything): new lines at the end.
  for (; e < edits.length; e++) {
    const line = (edits[e] as LineEdit).line;
    if (line !== null) b.addLine(line);
  }
  const made = finishRoot(b, nodes);
  lastRoot = { text: made.root, groups: Object.freeze(b.groups), keys: undefined };
  return made;
}

/**
 * The root this process spliced last, its groups and their first paths: the next delta
 * snapshot starts from it, and at 100k files parsing its ~400 lines again (and each first
 * path's JSON) cost ~1 ms (issue 22, item 1). Used only for a root of the same bytes.
 */
let lastRoot:
  | { text: Buffer; groups: readonly NodeRef[]; keys: (string | null)[] | undefined }
  | undefined;

/** A root's groups and their first paths (null: not a plain name), parsed or remembered. */
function rootRefs(
  root: Buffer,
  source: string,
): { groups: readonly NodeRef[]; keys: (string | null)[] } {
  const memo =
    lastRoot?.text.equals(root) === true
      ? lastRoot
      : { text: root, groups: Object.freeze(parseRefs(root, source)), keys: undefined };
  memo.keys ??= memo.groups.map((g) => keyOf(g.first));
  lastRoot = memo;
  return { groups: memo.groups, keys: memo.keys };
}

/**
 * Feed the lines of one leaf, merged with the edits from `e` whose path sorts before `until`
 * (all of them when null), to the builder; the next edit's index, or null when a line's path
 * is not plain.
 */
function mergeLeaf(
  b: TreeBuilder,
  text: Buffer,
  edits: readonly LineEdit[],
  e: number,
  until: string | null,
): number | null {
  for (let at = 0; at <= text.length; ) {
    if (text.length === 0) break;
    const nl = text.indexOf(0x0a, at);
    const end = nl < 0 ? text.length : nl - 1;
    const line = text.subarray(at, end);
    const key = keyOf(line.toString("utf8", PATH_AT, keyEnd(line)));
    if (key === null) return null;
    for (; e < edits.length && (edits[e] as LineEdit).path < key; e++) {
      const l = (edits[e] as LineEdit).line;
      if (l !== null) b.addLine(l);
    }
    if (e < edits.length && (edits[e] as LineEdit).path === key) {
      const l = (edits[e] as LineEdit).line;
      if (l !== null) b.addLine(l);
      e++;
    } else {
      // A view: the leaf's text is its own copy (`NodeStore.read`), never written to.
      b.addLine(line);
    }
    if (nl < 0) break;
    at = nl + 1;
  }
  for (; e < edits.length && (until === null || (edits[e] as LineEdit).path < until); e++) {
    const l = (edits[e] as LineEdit).line;
    if (l !== null) b.addLine(l);
  }
  return e;
}
