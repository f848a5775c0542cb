import { ErrorCode, TimewarpError } from "../core/index.ts";
import { parentOf } from "./entry-path.ts";
import {
  decodeStoredManifest,
  MANIFEST_SCHEMA_VERSION,
  type Manifest,
  type ManifestEntry,
  manifestBytes,
  manifestProblem,
} from "./manifest.ts";
import { type NodeStore, nodeStoreFor } from "./manifest-nodes.ts";
import { assembleText, buildTree, isTreeRoot, type NodeRef, parseRefs } from "./manifest-tree.ts";

/**
 * Two manifests compared as trees (issue 22): both roots are walked side by side and a group or
 * leaf whose id both sides hold at the same place is skipped unread, so only the leaves around
 * a difference are decoded. Lines are sorted by path on both sides, so what is left is a merge of
 * the differing ranges, line against line, with the answer `diffManifestTexts` gives for the
 * whole texts.
 */

/** A stored manifest tree: its root text and the store its nodes are read from. */
export interface ManifestTree {
  root: Buffer;
  nodes: NodeStore;
  /** Named in errors (a record's manifest file, "the workspace"). */
  source: string;
}

/** What differs between two trees: the `a`/`b`/`same` of `diffManifestTexts`. */
export interface TreeDifference {
  /** The entries of `a` whose line is not in `b`, in path order. */
  a: ManifestEntry[];
  /** The entries of `b` whose line is not in `a`, in path order. */
  b: ManifestEntry[];
  /** Lines both share. */
  same: number;
}

let leavesRead = 0;

/**
 * How many leaves tree comparisons have decoded in this process: the cost of a comparison
 * follows the leaves around its differences (tests count it; it is never reset).
 */
export function treeLeavesRead(): number {
  return leavesRead;
}

/**
 * A node store in memory over `base` (or over nothing): what a scan that is not to write
 * anything splices into its tree stays here, while its unchanged nodes are read from `base`.
 */
export function memoryNodeStore(base?: NodeStore): NodeStore {
  const held = new Map<string, Buffer>();
  const read = (id: string): Buffer => {
    const text = held.get(id);
    if (text !== undefined) return text;
    if (base === undefined) {
      throw new TimewarpError(ErrorCode.INTERNAL, `manifest node ${id} is not in memory`);
    }
    return base.read(id);
  };
  return {
    dir: base?.dir ?? "",
    read,
    readMany: (ids) => {
      // The base reads its own in one call (each block decompressed once), ours fill the gaps.
      if (base === undefined) return ids.map(read);
      const theirs = base.readMany(ids.filter((id) => !held.has(id)));
      let t = 0;
      return ids.map((id) => held.get(id) ?? (theirs[t++] as Buffer));
    },
    write: (id, text) => {
      held.set(id, text);
    },
    flush: () => {},
    listAll: () => ({ ids: [...held.keys()], temps: [] }),
    keepOnly: () => 0,
  };
}

/** A decoded manifest as a tree held in memory. */
export function treeOfManifest(manifest: Manifest, source: string): ManifestTree {
  return treeOfText(manifestBytes(manifest), source);
}

/**
 * A whole canonical text (a record written before trees, a scan's) as a tree held in memory:
 * its leaves are views of `text`, which the tree keeps.
 */
export function treeOfText(text: Buffer, source: string): ManifestTree {
  const nodes = memoryNodeStore();
  return { root: buildTree(text, nodes, { views: true }).root, nodes, source };
}

const PATH_AT = '{"path":'.length;
const TYPE_KEY = Buffer.from(',"type":"');

/** A line of a leaf, keyed by its path. */
interface Line {
  line: Buffer;
  key: string;
}

/** An unread group (level 2) or leaf (level 1), or a line. */
type Item = { level: 1 | 2; ref: NodeRef } | Line;

const isLine = (x: Item): x is Line => "line" in x;

/** Thrown inside the walk when a name is not plain UTF-8: the caller compares whole texts. */
class NotPlain extends Error {}

/** The plain path a ref's first line holds (NotPlain when it has none). */
function refKey(ref: NodeRef): string {
  if (!ref.first.endsWith('"')) throw new NotPlain();
  try {
    const p = JSON.parse(ref.first) as unknown;
    if (typeof p === "string") return p;
  } catch {
    // below
  }
  throw new NotPlain();
}

function keyOf(x: Item): string {
  return isLine(x) ? x.key : refKey(x.ref);
}

/** The lines of a leaf's text, each with its path. */
function leafLines(text: Buffer, source: string): Line[] {
  const out: Line[] = [];
  for (let at = 0; at < text.length; ) {
    const nl = text.indexOf(0x0a, at);
    const end = nl < 0 ? text.length : nl - 1;
    const line = text.subarray(at, end);
    const close = line.indexOf(TYPE_KEY);
    if (close < 0) {
      throw new TimewarpError(ErrorCode.CORRUPT_FILE, `${source}: not a manifest line`, {
        data: { file: source },
      });
    }
    let key: unknown;
    try {
      key = JSON.parse(line.toString("utf8", PATH_AT, close));
    } catch {
      throw new NotPlain(); // a byte name's path_b64 follows its path
    }
    if (typeof key !== "string") throw new NotPlain();
    out.push({ line, key });
    at = nl < 0 ? text.length : nl + 1;
  }
  return out;
}

function entryOf(line: Buffer, source: string): ManifestEntry {
  let e: unknown;
  try {
    e = JSON.parse(line.toString("utf8"));
  } catch {
    e = null;
  }
  if (manifestProblem({ schema_version: MANIFEST_SCHEMA_VERSION, entries: [e] }) !== null) {
    throw new TimewarpError(ErrorCode.CORRUPT_FILE, `${source}: not a manifest line`, {
      data: { file: source },
    });
  }
  return e as ManifestEntry;
}

/** One side of the walk: its items as a stack (the next one last). */
class Side {
  readonly stack: Item[];
  readonly tree: ManifestTree;
  constructor(tree: ManifestTree) {
    this.tree = tree;
    const groups = isTreeRoot(tree.root) ? parseRefs(tree.root, tree.source) : [];
    this.stack = groups.reverse().map((ref) => ({ level: 2 as const, ref }));
  }
  get top(): Item | undefined {
    return this.stack[this.stack.length - 1];
  }
  /** Replace the node on top by what it holds. */
  expand(): void {
    const x = this.stack.pop() as { level: 1 | 2; ref: NodeRef };
    const text = this.tree.nodes.read(x.ref.id);
    if (x.level === 2) {
      const leaves = parseRefs(text, this.tree.source);
      for (let i = leaves.length - 1; i >= 0; i--)
        this.stack.push({ level: 1, ref: leaves[i] as NodeRef });
      return;
    }
    leavesRead++;
    const lines = leafLines(text, this.tree.source);
    for (let i = lines.length - 1; i >= 0; i--) this.stack.push(lines[i] as Line);
  }
  /** Take the line on top into `into`. */
  take(into: ManifestEntry[]): void {
    into.push(entryOf((this.stack.pop() as Line).line, this.tree.source));
  }
  /** Every line left into `into`. */
  drain(into: ManifestEntry[]): void {
    for (let x = this.top; x !== undefined; x = this.top) {
      if (isLine(x)) this.take(into);
      else this.expand();
    }
  }
}

/**
 * What differs from tree `a` to tree `b`, reading only the nodes the two do not share. Null when
 * a name on the way is not plain UTF-8 (compare whole texts then); CORRUPT_FILE when a node is
 * damaged or missing.
 */
export function diffTrees(a: ManifestTree, b: ManifestTree): TreeDifference | null {
  const out: TreeDifference = { a: [], b: [], same: 0 };
  const sa = new Side(a);
  const sb = new Side(b);
  try {
    for (let x = sa.top, y = sb.top; x !== undefined && y !== undefined; x = sa.top, y = sb.top) {
      step(sa, sb, x, y, out);
    }
    sa.drain(out.a);
    sb.drain(out.b);
  } catch (error) {
    if (error instanceof NotPlain) return null;
    throw error;
  }
  return out;
}

/** One move of the walk: skip a shared node, open one, or compare two lines. */
function step(sa: Side, sb: Side, x: Item, y: Item, out: TreeDifference): void {
  if (!isLine(x) && !isLine(y)) {
    if (x.ref.id === y.ref.id) {
      sa.stack.pop();
      sb.stack.pop();
      out.same += x.ref.count;
    } else if (x.level !== y.level) (x.level > y.level ? sa : sb).expand();
    else {
      const kx = refKey(x.ref);
      const ky = refKey(y.ref);
      if (kx <= ky) sa.expand();
      if (ky <= kx) sb.expand();
    }
    return;
  }
  const kx = keyOf(x);
  const ky = keyOf(y);
  if (!isLine(x)) {
    // Everything left of `a` sorts at or after the node's first line: a line before it is b's alone.
    if (ky < kx) sb.take(out.b);
    else sa.expand();
    return;
  }
  if (!isLine(y)) {
    if (kx < ky) sa.take(out.a);
    else sb.expand();
    return;
  }
  if (kx === ky && x.line.equals(y.line)) {
    sa.stack.pop();
    sb.stack.pop();
    out.same++;
    return;
  }
  if (kx <= ky) sa.take(out.a);
  if (ky <= kx) sb.take(out.b);
}

/**
 * The entries of `tree` at `paths` (sorted, each once), reading only the groups and leaves
 * whose range holds one of them; a path the tree lacks is absent from the answer. Null when a
 * name on the way is not plain UTF-8.
 */
export function entriesAt(tree: ManifestTree, paths: readonly string[]): ManifestEntry[] | null {
  const out: ManifestEntry[] = [];
  if (paths.length === 0 || !isTreeRoot(tree.root)) return out;
  try {
    let p = 0;
    const visit = (refs: NodeRef[], level: 1 | 2, bound: string | null): void => {
      for (let i = 0; i < refs.length && p < paths.length; i++) {
        const next = refs[i + 1];
        const until = next === undefined ? bound : refKey(next);
        while (p < paths.length && (paths[p] as string) < refKey(refs[i] as NodeRef)) p++;
        if (p >= paths.length || (until !== null && (paths[p] as string) >= until)) continue;
        const text = tree.nodes.read((refs[i] as NodeRef).id);
        if (level === 2) visit(parseRefs(text, tree.source), 1, until);
        else {
          leavesRead++;
          for (const l of leafLines(text, tree.source)) {
            while (p < paths.length && (paths[p] as string) < l.key) p++;
            if (p < paths.length && paths[p] === l.key) out.push(entryOf(l.line, tree.source));
          }
        }
      }
    };
    visit(parseRefs(tree.root, tree.source), 2, null);
  } catch (error) {
    if (error instanceof NotPlain) return null;
    throw error;
  }
  return out;
}

/** Every directory above `entries`' paths, sorted, each once. */
export function ancestorsOf(entries: readonly { path: string }[]): string[] {
  const dirs = new Set<string>();
  for (const e of entries) {
    for (let p = parentOf(e.path); p !== "" && !dirs.has(p); p = parentOf(p)) dirs.add(p);
  }
  return [...dirs].sort();
}

/**
 * The tree in a stored manifest file's bytes, checked against `hash` (CORRUPT_FILE naming `file`
 * otherwise): its root and the node store beside it, or, for a record written before trees, its
 * whole text as a tree in memory.
 */
export function storedTree(file: string, bytes: Buffer, hash: string | undefined): ManifestTree {
  const stored = decodeStoredManifest(bytes, file, hash);
  if (stored.root === undefined) return treeOfText(stored.text, file);
  const nodes = nodeStoreFor(file);
  if (nodes === null) {
    throw new TimewarpError(ErrorCode.CORRUPT_FILE, `${file}: a manifest tree outside a store`, {
      data: { file },
    });
  }
  return { root: stored.root, nodes, source: file };
}

/** The whole canonical text a tree stands for (when it must be decoded whole after all). */
export function treeText(tree: ManifestTree): Buffer {
  return assembleText(tree.root, tree.nodes, tree.source);
}
