import { readFileSync, unlinkSync } from "node:fs";
import { basename, join } from "node:path";
import { crc32 } from "node:zlib";
import { writeFileAtomic } from "../core/index.ts";

/**
 * The merged index of the manifest node packs (`.timewarp/manifests/index.twi`), git's
 * multi-pack index for `manifest-nodes.ts`: without it a process that opens the store reads
 * every pack's header and builds a map of every node (~4,300 at 100k files, plus one pack per
 * snapshot since the last gc), which a one-shot command pays before its first read. The index
 * is one file read whole and searched in place (a binary search over sorted ids, nothing
 * decoded up front); packs it does not cover are read by header as before.
 *
 * Layout: magic "TWI2", pack count, node count (u32 LE each); per pack the 20 bytes of its name
 * (`pack-<40 hex>.twn`); per node, sorted by id: id (20 bytes), pack number, block offset, block
 * length, start and length in the block, and its delta base (the base's number in this sorted
 * list, or 0xffffffff for a whole text: gc's TWN3 packs) (u32 LE each); the CRC-32 of everything
 * before it. (TWI1, without bases, was never released: it no longer reads, and is rewritten.)
 *
 * It is a cache: written whole under a temp name and renamed in (never synced: a power cut
 * leaves an old or damaged one, which is ignored), and used only when its sum holds and every
 * pack it names is still there (a gc that replaced a pack makes it stale until the next one is
 * written). A node read through it is still checked against its id.
 */
export const NODE_INDEX_FILE = "index.twi";
const MAGIC = "TWI2";
const HEAD_BYTES = 12;
const ENTRY_BYTES = 20 + 6 * 4;
const NO_BASE = 0xffffffff;

/**
 * Where a node lies: its pack file, its block there (compressed), and its bytes in the block:
 * its text, or (`base` set) a git delta that makes it from the text of node `base`.
 */
export interface NodeSlot {
  pack: string;
  blockAt: number;
  blockLength: number;
  start: number;
  length: number;
  base: string | null;
}

/** An index read from disk: the packs it covers, and a lookup by node id. */
export interface NodeIndex {
  packs: readonly string[];
  nodes: number;
  find(id: string): NodeSlot | undefined;
  /** Every node it lists (for gc and `listAll`). */
  entries(): Iterable<[string, NodeSlot]>;
  /**
   * The bytes of an index of its nodes and `extra`'s (an id in both: `extra`'s slot), made by
   * merging: its own entries are copied, not decoded (see `persist`).
   */
  mergedWith(extra: ReadonlyMap<string, NodeSlot>): Buffer;
}

/**
 * The index in `dir`, when it reads, its sum holds and each pack it names is in `present`
 * (full paths); null otherwise.
 */
export function readNodeIndex(dir: string, present: ReadonlySet<string>): NodeIndex | null {
  let buf: Buffer;
  try {
    buf = readFileSync(join(dir, NODE_INDEX_FILE));
  } catch {
    return null;
  }
  if (buf.length < HEAD_BYTES + 4 || buf.toString("latin1", 0, 4) !== MAGIC) return null;
  const packCount = buf.readUInt32LE(4);
  const count = buf.readUInt32LE(8);
  const entriesAt = HEAD_BYTES + packCount * 20;
  const end = entriesAt + count * ENTRY_BYTES;
  if (buf.length !== end + 4 || crc32(buf.subarray(0, end)) !== buf.readUInt32LE(end)) return null;
  const packs: string[] = [];
  for (let p = 0; p < packCount; p++) {
    const at = HEAD_BYTES + p * 20;
    const pack = join(dir, `pack-${buf.toString("hex", at, at + 20)}.twn`);
    if (!present.has(pack)) return null;
    packs.push(pack);
  }
  const slotAt = (i: number): NodeSlot | undefined => {
    const at = entriesAt + i * ENTRY_BYTES + 20;
    const pack = packs[buf.readUInt32LE(at)];
    const base = buf.readUInt32LE(at + 20);
    if (pack === undefined || (base !== NO_BASE && base >= count)) return undefined;
    const baseAt = entriesAt + base * ENTRY_BYTES;
    return {
      pack,
      blockAt: buf.readUInt32LE(at + 4),
      blockLength: buf.readUInt32LE(at + 8),
      start: buf.readUInt32LE(at + 12),
      length: buf.readUInt32LE(at + 16),
      base: base === NO_BASE ? null : buf.toString("hex", baseAt, baseAt + 20),
    };
  };
  return {
    packs,
    nodes: count,
    find(id) {
      const key = Buffer.from(id, "hex");
      if (key.length !== 20) return undefined;
      let lo = 0;
      let hi = count;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const at = entriesAt + mid * ENTRY_BYTES;
        const c = buf.compare(key, 0, 20, at, at + 20);
        if (c === 0) return slotAt(mid);
        if (c < 0) lo = mid + 1;
        else hi = mid;
      }
      return undefined;
    },
    *entries() {
      for (let i = 0; i < count; i++) {
        const at = entriesAt + i * ENTRY_BYTES;
        const slot = slotAt(i);
        if (slot !== undefined) yield [buf.toString("hex", at, at + 20), slot];
      }
    },
    mergedWith(extra) {
      return mergeIndex({ buf, packs, count, entriesAt }, extra);
    },
  };
}

/**
 * An index read from disk (`old`) with `extra` merged in, as the bytes of a new one: the old
 * packs keep their numbers (the new ones follow), the old entries are copied as they are with
 * only their delta bases renumbered, and the extra ones are encoded. Decoding every old entry
 * and encoding it again (`encodeNodeIndex`) cost 25–90 ms at 100k files in a one-shot process
 * (~6,400 nodes), once every 16 snapshots (issue 22, item 1).
 */
function mergeIndex(
  old: { buf: Buffer; packs: readonly string[]; count: number; entriesAt: number },
  extra: ReadonlyMap<string, NodeSlot>,
): Buffer {
  const { buf, count, entriesAt } = old;
  const packNo = new Map<string, number>();
  for (const [i, pack] of old.packs.entries()) packNo.set(pack, i);
  for (const slot of extra.values()) {
    if (!packNo.has(slot.pack)) packNo.set(slot.pack, packNo.size);
  }
  const added = [...extra.keys()].sort();
  const addedIds = added.map((id) => Buffer.from(id, "hex"));
  const oldId = (i: number) => entriesAt + i * ENTRY_BYTES;
  // The merged order: per position, an old entry (its number) or an extra one (-1 - its number).
  const order: number[] = [];
  const newOfOld = new Uint32Array(count).fill(NO_BASE);
  const newOfAdded = new Map<string, number>();
  let i = 0;
  let j = 0;
  while (i < count || j < added.length) {
    // (buf.compare: the old entry's id against the added one's; below 0 when it comes first)
    const c =
      i >= count
        ? 1
        : j >= added.length
          ? -1
          : buf.compare(addedIds[j] as Buffer, 0, 20, oldId(i), oldId(i) + 20);
    if (c < 0) {
      newOfOld[i] = order.length;
      order.push(i);
      i++;
      continue;
    }
    // the same id in both: the extra slot stands at the old one's place
    if (c === 0) {
      newOfOld[i] = order.length;
      i++;
    }
    newOfAdded.set(added[j] as string, order.length);
    order.push(-1 - j);
    j++;
  }
  const positionOf = (id: string): number | undefined => {
    const mine = newOfAdded.get(id);
    if (mine !== undefined) return mine;
    const key = Buffer.from(id, "hex");
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = buf.compare(key, 0, 20, oldId(mid), oldId(mid) + 20);
      if (c === 0) return newOfOld[mid];
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return undefined;
  };
  const { out, entriesAt: outAt } = startIndex(packNo, order.length);
  for (const [n, from] of order.entries()) {
    const at = outAt + n * ENTRY_BYTES;
    if (from >= 0) {
      buf.copy(out, at, oldId(from), oldId(from) + ENTRY_BYTES);
      const base = buf.readUInt32LE(oldId(from) + 40);
      if (base !== NO_BASE) {
        const moved = base < count ? newOfOld[base] : undefined;
        if (moved === undefined || moved === NO_BASE)
          throw new Error(`index entry ${from}: its delta base ${base} is not listed`);
        out.writeUInt32LE(moved, at + 40);
      }
      continue;
    }
    const id = added[-1 - from] as string;
    writeEntry(out, at, id, extra.get(id) as NodeSlot, packNo, positionOf);
  }
  return sealIndex(out);
}

/** An index's buffer for `count` entries, its head and pack names written; where entries go. */
function startIndex(
  packNo: ReadonlyMap<string, number>,
  count: number,
): { out: Buffer; entriesAt: number } {
  const entriesAt = HEAD_BYTES + packNo.size * 20;
  const out = Buffer.alloc(entriesAt + count * ENTRY_BYTES + 4);
  out.write(MAGIC, 0, "latin1");
  out.writeUInt32LE(packNo.size, 4);
  out.writeUInt32LE(count, 8);
  for (const [pack, n] of packNo)
    out.write(basename(pack).slice(5, 45), HEAD_BYTES + n * 20, "hex");
  return { out, entriesAt };
}

/** The index with its trailing crc32 written (over everything before it). */
function sealIndex(out: Buffer): Buffer {
  const end = out.length - 4;
  out.writeUInt32LE(crc32(out.subarray(0, end)), end);
  return out;
}

/** One entry of an index at `at`: `id`'s slot, its pack and delta base by number. */
function writeEntry(
  out: Buffer,
  at: number,
  id: string,
  slot: NodeSlot,
  packNo: ReadonlyMap<string, number>,
  positionOf: (id: string) => number | undefined,
): void {
  out.write(id, at, "hex");
  out.writeUInt32LE(packNo.get(slot.pack) as number, at + 20);
  out.writeUInt32LE(slot.blockAt, at + 24);
  out.writeUInt32LE(slot.blockLength, at + 28);
  out.writeUInt32LE(slot.start, at + 32);
  out.writeUInt32LE(slot.length, at + 36);
  const base = slot.base === null ? NO_BASE : positionOf(slot.base);
  // A delta's base is in its own pack, so in `slots`; if not, no index (the caller's catch).
  if (base === undefined) throw new Error(`node ${id}: its delta base ${slot.base} is not listed`);
  out.writeUInt32LE(base, at + 40);
}

/** The bytes of an index of `slots` (id → slot; each slot's pack named `pack-<hex>.twn`). */
function encodeNodeIndex(slots: ReadonlyMap<string, NodeSlot>): Buffer {
  nodeIndexEncodes.whole++;
  const packNo = new Map<string, number>();
  for (const slot of slots.values()) {
    if (!packNo.has(slot.pack)) packNo.set(slot.pack, packNo.size);
  }
  const ids = [...slots.keys()].sort();
  const number = new Map<string, number>();
  for (const [i, id] of ids.entries()) number.set(id, i);
  const { out, entriesAt } = startIndex(packNo, ids.length);
  for (const [i, id] of ids.entries()) {
    const at = entriesAt + i * ENTRY_BYTES;
    writeEntry(out, at, id, slots.get(id) as NodeSlot, packNo, (base) => number.get(base));
  }
  return sealIndex(out);
}

/** How many indexes this process encoded whole (for the test that holds a rewrite to a merge). */
export const nodeIndexEncodes = { whole: 0 };

/**
 * Write the index of `slots` (or its bytes) into `dir`: a temp file, then renamed over the old
 * one (fault point `nodes:index-written` between the two, for the kill -9 test).
 */
export function writeNodeIndex(dir: string, slots: ReadonlyMap<string, NodeSlot> | Buffer): void {
  const bytes = Buffer.isBuffer(slots) ? slots : encodeNodeIndex(slots);
  writeFileAtomic(join(dir, NODE_INDEX_FILE), bytes, {
    durable: false,
    faultPoint: "nodes:index-written",
  });
}

/** Packs not covered by the index file before it is written anew (each is one header read). */
const INDEX_AFTER_PACKS = 16;
/** Nodes not covered by it before it is written anew (a first snapshot of a large tree). */
const INDEX_AFTER_NODES = 2048;

/**
 * A process's view of where every node lies: the index file, plus the packs it does not cover
 * read by header. `reload` lists the packs again and reads only the headers of new ones; a pack
 * gone (a gc elsewhere) starts over.
 */
export interface MergedNodeIndex {
  /** Node `id`'s slot (the packs are listed on first use); undefined when none holds it. */
  find(id: string): NodeSlot | undefined;
  reload(): void;
  /** A pack this process wrote, with its slots. */
  added(pack: string, slots: ReadonlyMap<string, NodeSlot>): void;
  /** Every node's slot (gc). */
  all(): Map<string, NodeSlot>;
  /**
   * Forget everything and remove the index file, which names packs now gone: the next use lists
   * the packs again (after gc replaced them; the next flush writes a new index).
   */
  reset(): void;
  /** Write the index file anew when enough packs or nodes are outside it (after a flush). */
  persist(): void;
}

export function createMergedNodeIndex(
  dir: string,
  packs: { list(): string[]; readHeader(pack: string, into: Map<string, NodeSlot>): boolean },
): MergedNodeIndex {
  let index: NodeIndex | null = null;
  let loaded = false;
  // The packs outside the index, by file, and their slots merged.
  let byPack = new Map<string, Map<string, NodeSlot>>();
  let extra = new Map<string, NodeSlot>();
  const reload = (): void => {
    const list = packs.list();
    const present = new Set(list);
    if (!loaded || index?.packs.some((p) => !present.has(p))) {
      index = readNodeIndex(dir, present);
      byPack = new Map();
      extra = new Map();
      loaded = true;
    }
    const covered = new Set(index?.packs ?? []);
    let gone = false;
    for (const pack of byPack.keys()) if (!present.has(pack)) gone = true;
    const next = gone ? new Map<string, NodeSlot>() : extra;
    const seen = new Map<string, Map<string, NodeSlot>>();
    for (const pack of list) {
      if (covered.has(pack)) continue;
      let own = byPack.get(pack);
      const isNew = own === undefined;
      if (own === undefined) {
        own = new Map();
        if (!packs.readHeader(pack, own)) continue;
      }
      seen.set(pack, own);
      if (gone || isNew) for (const [id, slot] of own) next.set(id, slot);
    }
    byPack = seen;
    extra = next;
  };
  const all = (): Map<string, NodeSlot> => {
    if (!loaded) reload();
    const out = new Map<string, NodeSlot>(index?.entries() ?? []);
    for (const [id, slot] of extra) out.set(id, slot);
    return out;
  };
  return {
    find(id) {
      if (!loaded) reload();
      return extra.get(id) ?? index?.find(id);
    },
    reload,
    added(pack, slots) {
      if (!loaded) reload();
      byPack.set(pack, new Map(slots));
      for (const [id, slot] of slots) extra.set(id, slot);
    },
    all,
    reset() {
      loaded = false;
      index = null;
      byPack = new Map();
      extra = new Map();
      try {
        unlinkSync(join(dir, NODE_INDEX_FILE));
      } catch {
        // none
      }
    },
    persist() {
      if (byPack.size < INDEX_AFTER_PACKS && extra.size < INDEX_AFTER_NODES) return;
      if (!loaded) reload();
      try {
        // With an index in place only the nodes outside it are encoded (`mergedWith`).
        const current = index as NodeIndex | null;
        writeNodeIndex(dir, current === null ? all() : current.mergedWith(extra));
      } catch {
        // a cache: without it the next process reads the packs' headers
        return;
      }
      loaded = false;
    },
  };
}
