import {
  closeSync,
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
  fromSystemError,
  gitBlobId,
  isProcessAlive,
  isTempName,
  TimewarpError,
  tempPathFor,
} from "../core/index.ts";

/**
 * The nodes of tree manifests (`manifest-tree.ts`), each the brotli-compressed text of one
 * node, named by the git blob id of that text, in packs: `.timewarp/manifests/pack-<id>.twn`,
 * one per snapshot that made new nodes (creating one file costs what compressing a few dozen
 * nodes does), written whole under a temp name and renamed in, never changed after. A pack is
 * a header (magic, count, then per node its id, offset and length, sorted by id) and the
 * compressed nodes. An unchanged part of a tree is the same node in every snapshot. gc
 * (`manifest-sweep.ts`) rewrites the nodes a live record reaches into one pack, then removes
 * the others.
 */
export interface NodeStore {
  readonly dir: string;
  /** The text of node `id`, checked against its id: CORRUPT_FILE naming the file otherwise. */
  read(id: string): Buffer;
  /** Hold `text` as node `id` (its git blob id) for the next `flush`, unless it is stored. */
  write(id: string, text: Buffer): void;
  /** Store the held nodes, as one pack. */
  flush(): void;
  /** Every node id stored, and leftover temp files of dead writers. */
  listAll(): { ids: string[]; temps: string[] };
  /** Keep only the nodes in `live`: one new pack with them, then the old packs go. */
  keepOnly(live: ReadonlySet<string>): number;
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

/** Texts read or written lately, by id (a return reads the same manifest up to three times). */
const kept = new Map<string, Buffer>();
let keptBytes = 0;
const KEPT_BYTES = 32 * 1024 * 1024;

function keep(id: string, text: Buffer): void {
  if (kept.has(id)) return;
  kept.set(id, text);
  keptBytes += text.length;
  for (const [old, t] of kept) {
    if (keptBytes <= KEPT_BYTES) break;
    kept.delete(old);
    keptBytes -= t.length;
  }
}

/** Forget the texts kept in memory (fsck reads every node from disk). */
export function forgetNodeTexts(): void {
  kept.clear();
  keptBytes = 0;
}

/** Brotli at quality 1 with a 64 KiB window: nodes are a few KiB, compressed alone. */
export function compressNode(text: Buffer): Buffer {
  return brotliCompressSync(text, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 1,
      [constants.BROTLI_PARAM_LGWIN]: 16,
      [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
    },
  });
}

const stores = new Map<string, NodeStore>();
const MAGIC = "TWN1";
const ENTRY_BYTES = 20 + 4 + 4;
const PACK_NAME = /^pack-[0-9a-f]{40}\.twn$/;

/** Where a node lies: its pack file, and its compressed bytes' offset and length there. */
interface NodeSlot {
  pack: string;
  offset: number;
  length: number;
}

/** One pack's slots, from its header; null when the file is not a whole pack. */
function readPackIndex(file: string, into: Map<string, NodeSlot>): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const head = Buffer.alloc(8);
    if (readSync(fd, head, 0, 8, 0) !== 8 || head.toString("latin1", 0, 4) !== MAGIC) return false;
    const count = head.readUInt32LE(4);
    const table = Buffer.alloc(count * ENTRY_BYTES);
    if (readSync(fd, table, 0, table.length, 8) !== table.length) return false;
    for (let i = 0; i < count; i++) {
      const at = i * ENTRY_BYTES;
      const id = table.toString("hex", at, at + 20);
      into.set(id, {
        pack: file,
        offset: table.readUInt32LE(at + 20),
        length: table.readUInt32LE(at + 24),
      });
    }
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A pack of `nodes` (id → compressed bytes), written under a temp name and renamed in. */
function writePack(
  dir: string,
  nodes: ReadonlyMap<string, Buffer>,
  into: Map<string, NodeSlot>,
): string {
  const ids = [...nodes.keys()].sort();
  const table = Buffer.alloc(8 + ids.length * ENTRY_BYTES);
  table.write(MAGIC, 0, "latin1");
  table.writeUInt32LE(ids.length, 4);
  const parts: Buffer[] = [table];
  let offset = table.length;
  const slots: [string, number, number][] = [];
  for (const [i, id] of ids.entries()) {
    const bytes = nodes.get(id) as Buffer;
    const at = 8 + i * ENTRY_BYTES;
    table.write(id, at, "hex");
    table.writeUInt32LE(offset, at + 20);
    table.writeUInt32LE(bytes.length, at + 24);
    slots.push([id, offset, bytes.length]);
    parts.push(bytes);
    offset += bytes.length;
  }
  const data = Buffer.concat(parts);
  const file = join(dir, `pack-${gitBlobId(data)}.twn`);
  mkdirSync(dir, { recursive: true });
  const temp = tempPathFor(file);
  let fd: number | undefined;
  try {
    fd = openSync(temp, "wx", 0o444);
    for (let off = 0; off < data.length; ) off += writeSync(fd, data, off);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, file);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(temp);
    } catch {
      // never created
    }
    throw fromSystemError(error, `writing manifest nodes ${file}`);
  }
  for (const [id, off, length] of slots) into.set(id, { pack: file, offset: off, length });
  return file;
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

/** The compressed bytes at a slot (zeros when the pack is shorter than its index says). */
function slotBytes(slot: NodeSlot): Buffer {
  const bytes = Buffer.alloc(slot.length);
  const fd = openSync(slot.pack, "r");
  try {
    if (readSync(fd, bytes, 0, slot.length, slot.offset) !== slot.length) bytes.fill(0);
  } finally {
    closeSync(fd);
  }
  return bytes;
}

/** Node `id`'s text at `slot`, checked against the id (CORRUPT_FILE naming the pack). */
function readSlot(id: string, slot: NodeSlot): Buffer {
  let text: Buffer;
  try {
    text = brotliDecompressSync(slotBytes(slot));
  } catch {
    text = Buffer.alloc(0);
  }
  if (gitBlobId(text) !== id) {
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${slot.pack}: manifest node ${id} does not hold the text its id promises`,
      { data: { file: slot.pack, node: id } },
    );
  }
  return text;
}

/**
 * Keep only the nodes of `all` in `live`: they are written as one new pack (renamed in) before
 * the old packs go, so a crash leaves duplicates, never a loss. Returns the new slots (null when
 * nothing had to change: one pack, nothing dead) and how many nodes went.
 */
function repackNodes(
  dir: string,
  all: ReadonlyMap<string, NodeSlot>,
  live: ReadonlySet<string>,
): { slots: Map<string, NodeSlot> | null; dead: number } {
  const packs = new Set<string>();
  const keepBytes = new Map<string, Buffer>();
  let dead = 0;
  for (const [id, slot] of all) {
    packs.add(slot.pack);
    if (live.has(id)) keepBytes.set(id, slotBytes(slot));
    else dead++;
  }
  if (dead === 0 && packs.size <= 1) return { slots: null, dead: 0 };
  const next = new Map<string, NodeSlot>();
  const made = keepBytes.size > 0 ? writePack(dir, keepBytes, next) : undefined;
  for (const pack of packs) {
    if (pack === made) continue;
    try {
      unlinkSync(pack);
    } catch {
      // gone already
    }
  }
  for (const id of all.keys()) if (!live.has(id)) kept.delete(id);
  return { slots: next, dead };
}

export function createNodeStore(dir: string): NodeStore {
  const known = stores.get(dir);
  if (known !== undefined) return known;
  let slots: Map<string, NodeSlot> | undefined;
  const load = () => {
    const next = new Map<string, NodeSlot>();
    for (const pack of packNames(dir).packs) readPackIndex(pack, next);
    slots = next;
    return next;
  };
  const held = new Map<string, Buffer>();
  let fresh = false;
  const slotOf = (id: string): NodeSlot | undefined => (slots ?? load()).get(id) ?? load().get(id);
  const store: NodeStore = {
    dir,
    read(id) {
      const hit = kept.get(id);
      if (hit !== undefined) return hit;
      let slot = slotOf(id);
      let text: Buffer | undefined;
      try {
        if (slot !== undefined) text = readSlot(id, slot);
      } catch (error) {
        // a gc in another process may have replaced the pack: look again once
        if (errnoCode(error) !== "ENOENT") throw error;
        slot = load().get(id);
        if (slot !== undefined) text = readSlot(id, slot);
      }
      if (text === undefined) {
        throw new TimewarpError(
          ErrorCode.CORRUPT_FILE,
          `manifest node ${id} is missing from ${dir}`,
          {
            data: { file: dir, node: id },
          },
        );
      }
      keep(id, text);
      return text;
    },
    write(id, text) {
      keep(id, text);
      // The packs as they are now, once per batch: a gc in another process may have dropped a
      // node this process still lists, which a new tree must not name without storing it.
      if (!fresh) {
        load();
        fresh = true;
      }
      if (held.has(id) || (slots as Map<string, NodeSlot>).has(id)) return;
      held.set(id, compressNode(text));
    },
    flush() {
      fresh = false;
      if (held.size === 0) return;
      writePack(dir, held, slots ?? load());
      held.clear();
    },
    listAll() {
      const { temps } = packNames(dir);
      return { ids: [...load().keys()], temps };
    },
    keepOnly(live) {
      const done = repackNodes(dir, load(), live);
      if (done.slots !== null) slots = done.slots;
      return done.dead;
    },
  };
  stores.set(dir, store);
  return store;
}
