import { createHash } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { brotliCompressSync, brotliDecompressSync, constants } from "node:zlib";
import {
  DATA_DIR,
  ErrorCode,
  errnoCode,
  faultPoint,
  fromSystemError,
  fsyncDirectory,
  gitBlobId,
  isProcessAlive,
  isTempName,
  TimewarpError,
  tempPathFor,
  writeFileAtomic,
} from "../core/index.ts";
import { applyGitDelta, createGitDelta } from "../diff/index.ts";
import { createMergedNodeIndex, type NodeSlot } from "./manifest-node-index.ts";
import { ownedBytes } from "./owned-bytes.ts";

/**
 * The nodes of tree manifests (`manifest-tree.ts`), each named by the git blob id of its text,
 * in packs: `.timewarp/manifests/pack-<id>.twn`, one per snapshot that made new nodes
 * (creating one file costs what compressing a few dozen nodes does), written whole under a
 * temp name and renamed in, never changed after. A pack is a header (magic "TWN2", node and
 * block counts; per node its id, block, start and length in the block; per block its offset
 * and compressed length), then the blocks: the nodes' texts in tree order, ~16 KiB at a time,
 * each block brotli-compressed. An unchanged part of a tree is the same node in every snapshot. gc
 * (`manifest-sweep.ts`) rewrites the nodes a live record reaches into one pack of format
 * "TWN3", then removes the others: there a node may be stored as a git delta against another
 * node of the pack (an older version of a leaf against the newer one), and the table follows
 * the blocks, so the pack is streamed out (`keepOnly`).
 */
export interface NodeStore {
  readonly dir: string;
  /** The text of node `id`, checked against its id: CORRUPT_FILE naming the file otherwise. */
  read(id: string): Buffer;
  /**
   * The texts of `ids`, each checked as `read` does, as views into blocks decompressed once
   * for this call (no copy per node, nothing kept after): for reading a whole manifest.
   */
  readMany(ids: readonly string[]): Buffer[];
  /**
   * Hold `text` as node `id` (its git blob id) for the next `flush`, unless it is stored; once
   * 4 MiB are held they are written as a pack then and there.
   */
  write(id: string, text: Buffer): void;
  /** Store the held nodes, as one pack. */
  flush(): void;
  /** Every node id stored, and leftover temp files of dead writers. */
  listAll(): { ids: string[]; temps: string[] };
  /**
   * Keep only the nodes of `layout`: one new pack with them in that order (each whole or as a
   * delta against its `base`), renamed in, then the old packs go; the number of nodes dropped.
   */
  keepOnly(layout: readonly NodeLayout[]): number;
}

/**
 * A live node as gc lays it out: stored whole, or as a git delta against `base` (another node
 * of the layout, usually the newer version of the same leaf or group).
 */
export interface NodeLayout {
  id: string;
  base: string | null;
}

/** The node store beside the `.timewarp/` directory `dataDir`. */
export function nodeStoreOf(dataDir: string): NodeStore {
  return createNodeStore(join(dataDir, "manifests"));
}

/**
 * The node store of the data directory a stored manifest file lies in (a record's
 * `snapshots/<id>/manifest.json.br`, or `last-manifest.json.br`); null when it lies in none.
 */
export function nodeStoreFor(file: string): NodeStore | null {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (basename(dir) === DATA_DIR) return nodeStoreOf(dir);
    if (dirname(dir) === dir) return null;
  }
}

/**
 * Nodes read or written lately, by id, least recently used first: a delta snapshot reads the
 * leaves its edits fall in, and the next one often the same. Bounded by bytes, because the
 * processes that live long (the watch daemon's worker, the dashboard) must stay small at 100k
 * files (issue 22: the daemon <= 120 MiB): a whole manifest is read through `readMany`, which
 * keeps nothing.
 */
const KEPT_BYTES = 2 * 1024 * 1024;
/**
 * Groups are kept apart, up to 1 MiB: a delta snapshot reads one group per edit, and at 100k
 * files the ~420 groups (~0.5 MiB) were pushed out by the leaves each snapshot read, so a
 * long-lived process decompressed a 16 KiB block for each of them again (issue 22, item 1).
 */
const KEPT_GROUP_BYTES = 1024 * 1024;

/**
 * A map of texts by id, least recently used first, bounded by bytes: the bytes it holds, since
 * a text kept is its own copy unless it already owns its memory (`ownedBytes`).
 */
function createKept(limit: number) {
  const map = new Map<string, Buffer>();
  let bytes = 0;
  return {
    get: (id: string) => map.get(id),
    get bytes() {
      return bytes;
    },
    /** The memory its texts hold alive (for the tests; `bytes` when each owns its memory). */
    held: () => heldMemory(map.values()),
    keep(id: string, text: Buffer): void {
      const had = map.get(id);
      if (had !== undefined) {
        map.delete(id);
        map.set(id, had);
        return;
      }
      map.set(id, ownedBytes(text));
      bytes += text.length;
      for (const [old, t] of map) {
        if (bytes <= limit) break;
        map.delete(old);
        bytes -= t.length;
      }
    },
    clear(): void {
      map.clear();
      bytes = 0;
    },
  };
}

const keptLeaves = createKept(KEPT_BYTES);
const keptGroups = createKept(KEPT_GROUP_BYTES);
/** A leaf's lines are JSON objects; a group's lines begin with a node id. */
const isLeafText = (text: Buffer) => text.length === 0 || text[0] === 0x7b;
const keptGet = (id: string) => keptGroups.get(id) ?? keptLeaves.get(id);

function keep(id: string, text: Buffer): void {
  (isLeafText(text) ? keptLeaves : keptGroups).keep(id, text);
}

function clearKept(): void {
  keptLeaves.clear();
  keptGroups.clear();
}

/** Blocks decompressed by this process, and their bytes (for the tests that count reads). */
const decompressed = { blocks: 0, bytes: 0 };

/** How many node blocks this process has decompressed, and how many bytes they held. */
export function nodeBlockReads(): { blocks: number; bytes: number } {
  return { ...decompressed };
}

/**
 * The memory the node caches hold alive now, in bytes: the buffers under their texts and blocks,
 * each once (for the test that holds them to their bounds).
 */
export function nodeCacheBytes(): { nodes: number; groups: number; blocks: number } {
  return {
    nodes: keptLeaves.held(),
    groups: keptGroups.held(),
    blocks: heldMemory(blockCache.values()),
  };
}

function heldMemory(buffers: Iterable<Buffer>): number {
  const under = new Set<ArrayBufferLike>();
  for (const b of buffers) under.add(b.buffer);
  let bytes = 0;
  for (const u of under) bytes += u.byteLength;
  return bytes;
}

/** Calls of the stores' `read` and `readMany` since the last `forgetNodeTexts`. */
const calls = { read: 0, readMany: 0 };

/**
 * How many nodes were asked of the node stores since the last `forgetNodeTexts` (for the tests
 * that hold gc's and fsck's walks to one read per distinct node and no whole manifest).
 */
export function nodeReadCounts(): { read: number; readMany: number } {
  return { ...calls };
}

/** New nodes this process wrote, and the packs they went into. */
const written = { nodes: 0, packs: 0 };

/**
 * How many new nodes this process has written to node stores, and in how many packs (for the
 * test that holds a delta snapshot's writes to what its edits touch: issue 22, item 1).
 */
export function nodeWriteCounts(): { nodes: number; packs: number } {
  return { ...written };
}

/** Forget the texts kept in memory (fsck reads every node from disk). */
export function forgetNodeTexts(): void {
  calls.read = 0;
  calls.readMany = 0;
  clearKept();
  blockCache.clear();
  blockCacheBytes = 0;
}

/**
 * Brotli with a 64 KiB window for one block of nodes. A snapshot's packs use quality 3: on
 * 16 KiB blocks of a real 100k-file manifest it compresses as well as quality 1 did on 64 KiB
 * ones (5.85× against 5.98×) for ~135 µs a block. gc's packs use a higher one (written once,
 * read as fast).
 */
function compressBlock(text: Buffer, quality = 3): Buffer {
  return brotliCompressSync(text, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: quality,
      [constants.BROTLI_PARAM_LGWIN]: 16,
      [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
    },
  });
}

const stores = new Map<string, NodeStore>();
const MAGIC = "TWN2";
const HEAD_BYTES = 12;
const NODE_BYTES = 20 + 4 + 4 + 4;
const BLOCK_BYTES = 4 + 4;
/** gc's packs: the head also holds where the table is; a node also its base (index, or none). */
const MAGIC3 = "TWN3";
const HEAD3_BYTES = 16;
const NODE3_BYTES = NODE_BYTES + 4;
const NO_BASE = 0xffffffff;
/** A delta chain longer than this is a damaged table (gc writes at most `MAX_NODE_DEPTH`). */
const MAX_CHAIN = 64;
/**
 * Nodes are compressed together in blocks of about this many bytes: compressed one by one they
 * made reading a whole 10k-file manifest (~500 nodes) 7× slower than one text. A delta
 * snapshot reads one leaf and its group per edit, each in its own block: at 64 KiB a block cost
 * ~200 µs of CPU to decompress, 20 edits ~8 ms at 100k files (where, unlike 10k, the blocks
 * do not all fit the block cache); at 16 KiB ~40 µs, and a whole manifest reads as fast.
 */
const BLOCK_TARGET = 16 * 1024;
const PACK_NAME = /^pack-[0-9a-f]{40}\.twn$/;

/** A pack's table: node and block counts, the table's bytes, and the size of a node's row. */
interface PackTable {
  count: number;
  blocks: number;
  table: Buffer;
  row: number;
}

/** The table of the pack open as `fd` (TWN2: after the head; TWN3: where its head says). */
function readTable(fd: number): PackTable | null {
  const head = Buffer.alloc(HEAD3_BYTES);
  const got = readSync(fd, head, 0, HEAD3_BYTES, 0);
  if (got < HEAD_BYTES) return null;
  const magic = head.toString("latin1", 0, 4);
  const v3 = magic === MAGIC3 && got === HEAD3_BYTES;
  if (magic !== MAGIC && !v3) return null;
  const count = head.readUInt32LE(4);
  const blocks = head.readUInt32LE(8);
  const row = v3 ? NODE3_BYTES : NODE_BYTES;
  const table = Buffer.alloc(count * row + blocks * BLOCK_BYTES);
  const at = v3 ? head.readUInt32LE(12) : HEAD_BYTES;
  if (readSync(fd, table, 0, table.length, at) !== table.length) return null;
  return { count, blocks, table, row };
}

/** One pack's slots, from its table; false when the file is not a whole pack. */
function readPackIndex(file: string, into: Map<string, NodeSlot>): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const t = readTable(fd);
    if (t === null) return false;
    const { count, blocks, table, row } = t;
    const blockTable = count * row;
    for (let i = 0; i < count; i++) {
      const at = i * row;
      const b = table.readUInt32LE(at + 20);
      const baseIndex = row === NODE3_BYTES ? table.readUInt32LE(at + 32) : NO_BASE;
      if (b >= blocks || (baseIndex !== NO_BASE && baseIndex >= count)) return false;
      into.set(table.toString("hex", at, at + 20), {
        pack: file,
        blockAt: table.readUInt32LE(blockTable + b * BLOCK_BYTES),
        blockLength: table.readUInt32LE(blockTable + b * BLOCK_BYTES + 4),
        start: table.readUInt32LE(at + 24),
        length: table.readUInt32LE(at + 28),
        base:
          baseIndex === NO_BASE
            ? null
            : table.toString("hex", baseIndex * row, baseIndex * row + 20),
      });
    }
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** `texts` (id → node text) cut into blocks in their order, each block compressed. */
function packBlocks(texts: ReadonlyMap<string, Buffer>): {
  blocks: Buffer[];
  nodes: { id: string; block: number; start: number; length: number }[];
} {
  const blocks: Buffer[] = [];
  const nodes: { id: string; block: number; start: number; length: number }[] = [];
  let parts: Buffer[] = [];
  let size = 0;
  const close = () => {
    if (parts.length === 0) return;
    blocks.push(compressBlock(Buffer.concat(parts, size)));
    parts = [];
    size = 0;
  };
  for (const [id, text] of texts) {
    nodes.push({ id, block: blocks.length, start: size, length: text.length });
    parts.push(text);
    size += text.length;
    if (size >= BLOCK_TARGET) close();
  }
  close();
  return { blocks, nodes };
}

/** A pack of `texts` (id → node text), written under a temp name and renamed in. */
function writePack(
  dir: string,
  texts: ReadonlyMap<string, Buffer>,
  into: Map<string, NodeSlot>,
): string {
  const { blocks, nodes } = packBlocks(texts);
  const table = Buffer.alloc(HEAD_BYTES + nodes.length * NODE_BYTES + blocks.length * BLOCK_BYTES);
  table.write(MAGIC, 0, "latin1");
  table.writeUInt32LE(nodes.length, 4);
  table.writeUInt32LE(blocks.length, 8);
  for (const [i, n] of nodes.entries()) {
    const at = HEAD_BYTES + i * NODE_BYTES;
    table.write(n.id, at, "hex");
    table.writeUInt32LE(n.block, at + 20);
    table.writeUInt32LE(n.start, at + 24);
    table.writeUInt32LE(n.length, at + 28);
  }
  const blockAt: number[] = [];
  let offset = table.length;
  for (const [b, bytes] of blocks.entries()) {
    const at = HEAD_BYTES + nodes.length * NODE_BYTES + b * BLOCK_BYTES;
    table.writeUInt32LE(offset, at);
    table.writeUInt32LE(bytes.length, at + 4);
    blockAt.push(offset);
    offset += bytes.length;
  }
  const data = Buffer.concat([table, ...blocks]);
  const file = join(dir, `pack-${gitBlobId(data)}.twn`);
  writeWhole(dir, file, data);
  for (const n of nodes) {
    into.set(n.id, {
      pack: file,
      blockAt: blockAt[n.block] as number,
      blockLength: (blocks[n.block] as Buffer).length,
      start: n.start,
      length: n.length,
      base: null,
    });
  }
  return file;
}

/** `data` as `file`: a temp file in `dir`, renamed in (not synced, as objects are not). */
function writeWhole(dir: string, file: string, data: Buffer): void {
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(file, data, { durable: false, mode: 0o444 });
}

function packNames(dir: string): { packs: string[]; temps: string[] } {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return { packs: [], temps: [] };
  }
  const packs: string[] = [];
  const temps: string[] = [];
  for (const name of names) {
    if (PACK_NAME.test(name)) packs.push(join(dir, name));
    else if (isTempName(name)) {
      const m = /-(\d+)-[0-9a-f]+$/.exec(name);
      if (m === null || !isProcessAlive(Number(m[1]))) temps.push(join(dir, name));
    }
  }
  return { packs: packs.sort(), temps };
}

/** Blocks decompressed lately for `read`, by pack and offset (bounded as `kept` is). */
const blockCache = new Map<string, Buffer>();
let blockCacheBytes = 0;
const BLOCK_CACHE_BYTES = 2 * 1024 * 1024;
/** New nodes held before they are written as a pack of their own (see `write`). */
const HELD_MAX_BYTES = 4 * 1024 * 1024;

/** The decompressed block a slot lies in (empty when it does not read or decompress). */
function blockOf(slot: NodeSlot): Buffer {
  const key = `${slot.pack}#${slot.blockAt}`;
  const hit = blockCache.get(key);
  if (hit !== undefined) return hit;
  const block = decompressSlotBlock(slot);
  if (block.length === 0) return block;
  blockCache.set(key, block);
  blockCacheBytes += block.length;
  for (const [k, b] of blockCache) {
    if (blockCacheBytes <= BLOCK_CACHE_BYTES) break;
    blockCache.delete(k);
    blockCacheBytes -= b.length;
  }
  return block;
}

/** The decompressed block `slot` lies in (empty when it does not read or decompress). */
function decompressSlotBlock(slot: NodeSlot): Buffer {
  const bytes = Buffer.allocUnsafe(slot.blockLength);
  const fd = openSync(slot.pack, "r");
  try {
    if (readSync(fd, bytes, 0, slot.blockLength, slot.blockAt) !== slot.blockLength) {
      return Buffer.alloc(0);
    }
  } finally {
    closeSync(fd);
  }
  try {
    // One output chunk for a whole block (a block ends past its target, after its last node).
    const out = brotliDecompressSync(bytes, { chunkSize: BLOCK_TARGET + 32 * 1024 });
    // (a view into the output chunk: the block cache keeps its own copy)
    const block = ownedBytes(out);
    decompressed.blocks++;
    decompressed.bytes += block.length;
    return block;
  } catch {
    return Buffer.alloc(0);
  }
}

/** The bytes `slot` stores, a view into `block` (empty when the block is too short). */
function storedIn(slot: NodeSlot, block: Buffer): Buffer {
  return slot.start + slot.length <= block.length
    ? block.subarray(slot.start, slot.start + slot.length)
    : Buffer.alloc(0);
}

/**
 * Node `id`'s text from what its slot stores (the text, or a delta applied to the text of its
 * base, which `baseText` reads), checked against the id (CORRUPT_FILE naming the pack).
 */
function textOf(
  id: string,
  slot: NodeSlot,
  stored: Buffer,
  baseText: (base: string) => Buffer,
): Buffer {
  let text = stored;
  if (slot.base !== null) {
    const made = applyGitDelta(baseText(slot.base), stored);
    text = made.ok
      ? Buffer.from(made.result.buffer, made.result.byteOffset, made.result.byteLength)
      : Buffer.alloc(0);
  }
  if (gitBlobId(text) !== id) throw corruptNode(slot, id);
  return text;
}

/** Node `id`'s text at `slot`, a copy (kept texts must not pin their blocks), checked. */
function readSlot(id: string, slot: NodeSlot, baseText: (base: string) => Buffer): Buffer {
  const stored = storedIn(slot, blockOf(slot));
  return textOf(id, slot, slot.base === null ? ownedBytes(stored) : stored, baseText);
}

/**
 * Brotli quality of gc's blocks: on the 100k store test (bench:store) quality 4 made them 6%
 * smaller than quality 1 (5.6 against 5.9 MiB); 5 to 9 were no smaller and took 2-2.5x as long.
 */
const GC_BLOCK_QUALITY = 4;

/** Blocks streamed into the pack open as `fd` from byte `at`: `add` places bytes in the current one. */
function createBlockStream(fd: number, at: number) {
  const table: number[] = [];
  let parts: Buffer[] = [];
  let size = 0;
  const flush = () => {
    if (parts.length === 0) return;
    const bytes = compressBlock(Buffer.concat(parts, size), GC_BLOCK_QUALITY);
    for (let off = 0; off < bytes.length; )
      off += writeSync(fd, bytes, off, bytes.length - off, at + off);
    table.push(at, bytes.length);
    at += bytes.length;
    parts = [];
    size = 0;
    faultPoint("gc:nodes-packing");
  };
  return {
    add(bytes: Buffer): { block: number; start: number } {
      const place = { block: table.length / 2, start: size };
      parts.push(bytes);
      size += bytes.length;
      if (size >= BLOCK_TARGET) flush();
      return place;
    },
    /** The last block written; the block table and where it goes (the end of the blocks). */
    finish(): { blocks: Buffer; end: number } {
      flush();
      const blocks = Buffer.alloc(table.length * 4);
      for (const [i, v] of table.entries()) blocks.writeUInt32LE(v, i * 4);
      return { blocks, end: at };
    },
  };
}

/** What gc stores for `node`: a delta against its base when one is under half the text. */
function storedForm(
  node: NodeLayout,
  read: (id: string) => Buffer,
  index: ReadonlyMap<string, number>,
): { stored: Buffer; base: number } {
  const text = read(node.id);
  const base = node.base === null ? undefined : index.get(node.base);
  if (base === undefined || node.base === null) return { stored: text, base: NO_BASE };
  const delta = createGitDelta(read(node.base), text, { maxSize: Math.floor(text.length / 2) });
  if (delta === null) return { stored: text, base: NO_BASE };
  return { stored: Buffer.from(delta.buffer, delta.byteOffset, delta.byteLength), base };
}

/**
 * gc's pack (TWN3) of `layout`'s nodes in order, read through `read`: streamed into a temp
 * file (blocks, then the table, then the head), fsynced and renamed in (fault points
 * `gc:nodes-packing` per block). Returns its file.
 */
function writeLayoutPack(
  dir: string,
  layout: readonly NodeLayout[],
  read: (id: string) => Buffer,
): string {
  mkdirSync(dir, { recursive: true });
  const index = new Map<string, number>();
  for (const [i, n] of layout.entries()) index.set(n.id, i);
  const temp = tempPathFor(join(dir, "pack-new.twn"));
  let fd: number | undefined = openSync(temp, "wx", 0o444);
  try {
    const out = createBlockStream(fd, HEAD3_BYTES);
    const table = Buffer.alloc(layout.length * NODE3_BYTES);
    for (const [i, n] of layout.entries()) {
      const { stored, base } = storedForm(n, read, index);
      const { block, start } = out.add(stored);
      const at = i * NODE3_BYTES;
      table.write(n.id, at, "hex");
      table.writeUInt32LE(block, at + 20);
      table.writeUInt32LE(start, at + 24);
      table.writeUInt32LE(stored.length, at + 28);
      table.writeUInt32LE(base, at + 32);
    }
    const { blocks, end } = out.finish();
    const head = Buffer.alloc(HEAD3_BYTES);
    head.write(MAGIC3, 0, "latin1");
    head.writeUInt32LE(layout.length, 4);
    head.writeUInt32LE(blocks.length / BLOCK_BYTES, 8);
    head.writeUInt32LE(end, 12);
    for (const [bytes, at] of [
      [table, end],
      [blocks, end + table.length],
      [head, 0],
    ] as const) {
      for (let off = 0; off < bytes.length; )
        off += writeSync(fd, bytes, off, bytes.length - off, at + off);
    }
    // Durable before the packs it replaces are deleted: a power cut must not take both.
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    const name = createHash("sha1").update(head).update(table).update(blocks).digest("hex");
    const file = join(dir, `pack-${name}.twn`);
    renameSync(temp, file);
    fsyncDirectory(dir);
    return file;
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(temp);
    } catch {
      // never created
    }
    throw fromSystemError(error, `writing manifest nodes in ${dir}`);
  }
}

/**
 * Keep only `layout`'s nodes of `all`: they are written as one new pack (renamed in, fault
 * point `gc:nodes-repacked` after) before the old packs go, so a crash leaves duplicates, never
 * a loss. Returns how many nodes went, and whether anything was written (nothing when there is
 * one pack and nothing dead in it).
 */
function repackNodes(
  dir: string,
  all: ReadonlyMap<string, NodeSlot>,
  layout: readonly NodeLayout[],
  read: (id: string) => Buffer,
): { changed: boolean; dead: number } {
  const live = new Set<string>();
  for (const n of layout) live.add(n.id);
  // Every pack on disk: one whose nodes all lie in a later pack too (a gc killed before it
  // removed the packs it replaced) holds no slot, and still goes.
  const packs = packNames(dir).packs;
  let dead = 0;
  for (const id of all.keys()) if (!live.has(id)) dead++;
  if (dead === 0 && packs.length <= 1) return { changed: false, dead: 0 };
  const made = layout.length > 0 ? writeLayoutPack(dir, layout, read) : undefined;
  faultPoint("gc:nodes-repacked");
  for (const pack of packs) {
    if (pack === made) continue;
    try {
      unlinkSync(pack);
    } catch {
      // gone already
    }
  }
  return { changed: true, dead };
}

function missingNode(dir: string, id: string): TimewarpError {
  return new TimewarpError(ErrorCode.CORRUPT_FILE, `manifest node ${id} is missing from ${dir}`, {
    data: { file: dir, node: id },
  });
}

/**
 * Node `id`'s text at `slot` as a view into its block (decompressed once into `blocks`); a
 * delta's text is made from its base's, which `baseText` reads.
 */
function viewOf(
  id: string,
  slot: NodeSlot,
  blocks: Map<string, Buffer>,
  baseText: (base: string) => Buffer,
): Buffer {
  const key = `${slot.pack}#${slot.blockAt}`;
  let block = blocks.get(key);
  if (block === undefined) {
    block = decompressSlotBlock(slot);
    // Nodes are read in tree order, as they were packed: the last two blocks are enough, and
    // holding no more keeps a whole read's memory near one text.
    if (blocks.size >= 2) blocks.delete(blocks.keys().next().value as string);
    blocks.set(key, block);
  }
  return textOf(id, slot, storedIn(slot, block), baseText);
}

function corruptNode(slot: NodeSlot, id: string): TimewarpError {
  return new TimewarpError(
    ErrorCode.CORRUPT_FILE,
    `${slot.pack}: manifest node ${id} does not hold the text its id promises`,
    { data: { file: slot.pack, node: id } },
  );
}

export function createNodeStore(dir: string): NodeStore {
  const known = stores.get(dir);
  if (known !== undefined) return known;
  const index = createMergedNodeIndex(dir, {
    list: () => packNames(dir).packs,
    readHeader: readPackIndex,
  });
  const held = new Map<string, Buffer>();
  let heldBytes = 0;
  const writeHeld = (): void => {
    fresh = false;
    if (held.size === 0) return;
    const own = new Map<string, NodeSlot>();
    index.added(writePack(dir, held, own), own);
    written.nodes += held.size;
    written.packs++;
    held.clear();
    heldBytes = 0;
  };
  let fresh = false;
  const slotOf = (id: string): NodeSlot | undefined => {
    const slot = index.find(id);
    if (slot !== undefined) return slot;
    index.reload();
    return index.find(id);
  };
  const again = (id: string): NodeSlot | undefined => {
    index.reload();
    return index.find(id);
  };
  /** Node `id` from the packs (its base first, for a delta), kept; `depth` bounds a chain. */
  const readNode = (id: string, depth: number): Buffer => {
    const hit = keptGet(id);
    if (hit !== undefined) {
      keep(id, hit);
      return hit;
    }
    let slot = slotOf(id);
    if (depth > MAX_CHAIN && slot !== undefined) throw corruptNode(slot, id);
    const baseText = (base: string) => readNode(base, depth + 1);
    let text: Buffer | undefined;
    try {
      if (slot !== undefined) text = readSlot(id, slot, baseText);
    } catch (error) {
      // a gc in another process may have replaced the pack: look again once
      if (errnoCode(error) !== "ENOENT") throw error;
      slot = again(id);
      if (slot !== undefined) text = readSlot(id, slot, baseText);
    }
    if (text === undefined) throw missingNode(dir, id);
    keep(id, text);
    return text;
  };
  /** Node `id` for `readMany`: a view into its block, or (a delta) made from its base. */
  const viewNode = (id: string, slot: NodeSlot, blocks: Map<string, Buffer>): Buffer =>
    slot.base === null ? viewOf(id, slot, blocks, (base) => readNode(base, 1)) : readNode(id, 0);
  const store: NodeStore = {
    dir,
    read(id) {
      calls.read++;
      return readNode(id, 0);
    },
    readMany(ids) {
      calls.readMany++;
      const blocks = new Map<string, Buffer>();
      const out: Buffer[] = [];
      for (const id of ids) {
        const hit = keptGet(id);
        if (hit !== undefined) {
          out.push(hit);
          continue;
        }
        const slot = slotOf(id);
        if (slot === undefined) throw missingNode(dir, id);
        try {
          out.push(viewNode(id, slot, blocks));
        } catch (error) {
          // a gc in another process may have replaced the pack: look again once
          if (errnoCode(error) !== "ENOENT") throw error;
          const slot2 = again(id);
          if (slot2 === undefined) throw missingNode(dir, id);
          out.push(viewNode(id, slot2, blocks));
        }
      }
      return out;
    },
    write(id, text) {
      keep(id, text);
      // The packs as they are now, once per batch: a gc in another process may have dropped a
      // node this process still lists, which a new tree must not name without storing it.
      if (!fresh) {
        index.reload();
        fresh = true;
      }
      if (held.has(id) || index.find(id) !== undefined) return;
      held.set(id, text);
      heldBytes += text.length;
      // A first snapshot at 100k files makes ~20 MB of nodes: written in parts, not held whole.
      if (heldBytes >= HELD_MAX_BYTES) writeHeld();
    },
    flush() {
      writeHeld();
      index.persist();
    },
    listAll() {
      const { temps } = packNames(dir);
      index.reload();
      return { ids: [...index.all().keys()], temps };
    },
    keepOnly(layout) {
      index.reload();
      const done = repackNodes(dir, index.all(), layout, (id) => readNode(id, 0));
      if (done.changed) {
        clearKept();
        blockCache.clear();
        blockCacheBytes = 0;
        // Listed again on the next use: the new pack (the index file names packs now gone).
        index.reset();
      }
      return done.dead;
    },
  };
  stores.set(dir, store);
  return store;
}
