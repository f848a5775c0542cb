import { readFileSync, statSync, unlinkSync } from "node:fs";
import { basename, join } from "node:path";
import { brotliCompressSync, constants as zlibConstants } from "node:zlib";
import { errnoCode, faultPoint, fromSystemError } from "../core/index.ts";
import { createGitDelta } from "../diff/index.ts";
import {
  CODEC_BROTLI,
  CODEC_RAW,
  createPackWriter,
  DELTA_FLAG,
  entryHead,
  findInPack,
  MIN_PACK_OBJECTS,
  type Pack,
  type PackSlot,
  type PackWriter,
  packSlots,
  parseEntry,
  readEntry,
  readFromPack,
} from "./object-packs.ts";

/**
 * gc's repack: every live object (loose, or in any pack) into one version-2 pack, compressed,
 * many as deltas against a similar object, as git's pack-objects chooses them: objects sorted
 * by file name, then size (largest first), each tried against the ~10 before it (a window), the
 * smallest delta kept when it is under half the object; chains stay at most `MAX_DELTA_DEPTH`
 * deep so a read resolves a bounded number of bases. Entries of a version-2 pack whose whole
 * chain stays live are copied as they are (git's delta reuse): a repack costs what is new.
 */

/** Objects tried as a delta base for each new object (git's `pack.window`). */
export const REPACK_WINDOW = 10;
/** The longest delta chain written (git's default is 50; reads here resolve chains whole). */
export const MAX_DELTA_DEPTH = 10;
/**
 * Bytes of objects the window holds (git's `pack.windowMemory`): past it the oldest leave
 * first, the newest always stays: ten objects of up to 8 MiB each could hold 80 MiB.
 */
const WINDOW_BYTES = 32 * 1024 * 1024;
/** Brotli quality for pack entries: measured on node_modules (store README), ~4.8× on source. */
const BROTLI_QUALITY = 6;

/** Where a live object is now. */
export type ObjectSource =
  | { kind: "loose"; oid: string; size: number; read: () => Buffer }
  | { kind: "packed"; oid: string; size: number; pack: Pack; slot: PackSlot; read: () => Buffer };

export interface RepackStats {
  objects: number;
  /** Entries copied from a version-2 pack as they were. */
  reused: number;
  /** Entries that are deltas (new or reused). */
  deltas: number;
}

interface Item {
  source: ObjectSource;
  name: string;
  /** Copy the stored entry (its chain stays live); its depth in the new pack. */
  reuse: boolean;
  depth: number;
  bytes?: Buffer;
}

/** The entry's head (flags, depth, base) without its payload: a short read. */
function headOf(source: ObjectSource & { kind: "packed" }): ReturnType<typeof parseEntry> {
  const slot = { ...source.slot, stored: Math.min(source.slot.stored, 22) };
  return parseEntry(readEntry(source.pack, slot));
}

/**
 * Which packed objects can be copied as stored, and their chain depth: a version-2 entry whose
 * bases are all live (and found), within the depth bound.
 */
function planReuse(live: ReadonlyMap<string, ObjectSource>): Map<string, number | null> {
  const depth = new Map<string, number | null>();
  const visit = (oid: string, guard: number): number | null => {
    const known = depth.get(oid);
    if (known !== undefined) return known;
    const source = live.get(oid);
    let result: number | null = null;
    if (source?.kind === "packed" && source.pack.version === 2 && guard < 64) {
      const head = headOf(source);
      if (head !== null && head.base === null) result = 0;
      else if (head?.base != null) {
        const base = head.base.toString("hex");
        const baseSource = live.get(base);
        const below =
          baseSource?.kind === "packed" &&
          baseSource.pack === source.pack &&
          findInPack(source.pack, head.base) !== null
            ? visit(base, guard + 1)
            : null;
        if (below !== null && below + 1 <= MAX_DELTA_DEPTH) result = below + 1;
      }
    }
    depth.set(oid, result);
    return result;
  };
  for (const oid of live.keys()) visit(oid, 0);
  return depth;
}

function compress(bytes: Uint8Array): { codec: number; payload: Uint8Array } {
  if (bytes.length < 32) return { codec: CODEC_RAW, payload: bytes };
  const packed = brotliCompressSync(bytes, {
    params: {
      [zlibConstants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [zlibConstants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
    },
  });
  return packed.length < bytes.length
    ? { codec: CODEC_BROTLI, payload: packed }
    : { codec: CODEC_RAW, payload: bytes };
}

/** The best delta of `item` against the window, or null (git's try_delta, in outline). */
function bestDelta(item: Item, window: readonly Item[]): { base: Item; delta: Uint8Array } | null {
  const size = item.source.size;
  let maxSize = Math.floor(size / 2) - 20;
  let best: { base: Item; delta: Uint8Array } | null = null;
  for (let k = window.length - 1; k >= 0; k--) {
    const base = window[k] as Item;
    if (maxSize <= 0) break;
    if (base.depth >= MAX_DELTA_DEPTH) continue;
    const baseSize = base.source.size;
    if (Math.abs(baseSize - size) >= maxSize || size < baseSize / 32) continue;
    base.bytes ??= base.source.read();
    const delta = createGitDelta(base.bytes, item.bytes as Buffer, { maxSize });
    if (delta === null) continue;
    best = { base, delta };
    maxSize = delta.length - 1;
  }
  return best;
}

function writeItem(
  writer: PackWriter,
  item: Item,
  window: readonly Item[],
): { reused: boolean; delta: boolean } {
  const { source } = item;
  if (item.reuse && source.kind === "packed") {
    const entry = readEntry(source.pack, source.slot);
    const delta = ((entry[0] as number) & DELTA_FLAG) !== 0;
    if (delta) entry[1] = item.depth;
    writer.add(source.oid, source.size, [entry]);
    return { reused: true, delta };
  }
  item.bytes ??= source.read();
  const found = bestDelta(item, window);
  if (found !== null) {
    item.depth = found.base.depth + 1;
    const { codec, payload } = compress(found.delta);
    const head = entryHead(codec, { base: found.base.source.oid, depth: item.depth });
    writer.add(source.oid, source.size, [head, payload]);
    return { reused: false, delta: true };
  }
  item.depth = 0;
  const { codec, payload } = compress(item.bytes);
  writer.add(source.oid, source.size, [entryHead(codec, null), payload]);
  return { reused: false, delta: false };
}

/** Drop the oldest objects from the window past its count or its bytes (the newest stays). */
function trimWindow(window: Item[]): void {
  let held = 0;
  for (const w of window) held += w.bytes?.length ?? 0;
  while (window.length > REPACK_WINDOW || (window.length > 1 && held > WINDOW_BYTES)) {
    const old = window.shift() as Item;
    held -= old.bytes?.length ?? 0;
    old.bytes = undefined;
  }
}

/**
 * Write every object of `live` into one new version-2 pack in the store at `dir` and return it
 * (renamed in and synced: the caller may then delete what it replaces). `names` (object id →
 * a path it had) orders similar objects side by side; without one an object sorts by size.
 */
export function repackObjects(
  dir: string,
  live: ReadonlyMap<string, ObjectSource>,
  names: ReadonlyMap<string, string> = new Map(),
): { pack: Pack; stats: RepackStats } {
  const reuse = planReuse(live);
  const items: Item[] = [...live.values()].map((source) => {
    const depth = reuse.get(source.oid) ?? null;
    const name = names.get(source.oid);
    return {
      source,
      name: name === undefined ? "" : basename(name),
      reuse: depth !== null,
      depth: depth ?? 0,
    };
  });
  items.sort(
    (a, b) =>
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) ||
      b.source.size - a.source.size ||
      (a.source.oid < b.source.oid ? -1 : 1),
  );
  const stats: RepackStats = { objects: items.length, reused: 0, deltas: 0 };
  const writer = createPackWriter(dir);
  try {
    const window: Item[] = [];
    for (const item of items) {
      faultPoint("gc:packing");
      const how = writeItem(writer, item, window);
      if (how.reused) stats.reused++;
      if (how.delta) stats.deltas++;
      window.push(item);
      trimWindow(window);
    }
    return { pack: writer.finish(), stats };
  } catch (error) {
    writer.abort();
    throw error;
  }
}

/** Loose objects larger than this stay loose: they are streamed, with holes for runs of zeros. */
const MAX_PACKED_BYTES = 8 * 1024 * 1024;

/** Remove `file` if it is there; the bytes it freed (0 when it was not). */
function unlinkIfThere(file: string): number {
  const size = statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  try {
    unlinkSync(file);
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw fromSystemError(error, `removing ${file}`);
  }
  return size;
}

/**
 * The store's side of a repack: which copy of each live object to read (a version-2 pack's
 * first, for reuse), the new pack, then the old packs and the loose copies removed, in that
 * order (fault points `gc:repacked`, `gc:pack-removed`: a crash between leaves duplicates).
 * Nothing is written when the store is one version-2 pack (or none) with nothing dead in it and
 * fewer than `MIN_PACK_OBJECTS` live loose objects.
 */
export function repackStore(options: {
  dir: string;
  packs: readonly Pack[];
  /** The loose object ids. */
  loose: readonly string[];
  keep: { has(oid: string): boolean };
  names?: ReadonlyMap<string, string>;
}): { packs: Pack[]; removed: string[]; freed: number; stats: RepackStats | null } {
  const { dir, packs, keep } = options;
  const live = new Map<string, ObjectSource>();
  const removed = new Set<string>();
  let before = 0;
  for (const pack of [...packs].sort((a, b) => b.version - a.version)) {
    before += statSync(pack.file).size;
    for (const { oid, slot } of packSlots(pack)) {
      if (!keep.has(oid)) removed.add(oid);
      else if (!live.has(oid)) {
        const read = () => readFromPack(pack, slot);
        live.set(oid, { kind: "packed", oid, size: slot.size, pack, slot, read });
      }
    }
  }
  const loosePacked: string[] = [];
  // Loose copies of packed objects (a gc killed after its new pack was renamed in): removed
  // whether or not this gc repacks.
  const duplicates: string[] = [];
  for (const oid of options.loose) {
    if (!keep.has(oid)) continue;
    const path = join(dir, oid.slice(0, 2), oid.slice(2));
    if (live.get(oid)?.kind === "packed") {
      duplicates.push(path);
      continue;
    }
    const size = statSync(path, { throwIfNoEntry: false })?.size;
    if (size === undefined || size > MAX_PACKED_BYTES) continue;
    loosePacked.push(path);
    before += size;
    if (!live.has(oid)) live.set(oid, { kind: "loose", oid, size, read: () => readFileSync(path) });
  }
  // Like git's gc --auto: a few loose objects wait (a pack for them would only add a lookup)
  // unless a pack is rewritten anyway.
  const settled =
    removed.size === 0 &&
    loosePacked.length < MIN_PACK_OBJECTS &&
    (packs.length === 0 || (packs.length === 1 && packs[0]?.version === 2));
  if (settled) {
    let freed = 0;
    for (const path of duplicates) freed += unlinkIfThere(path);
    return { packs: [...packs], removed: [], freed, stats: null };
  }
  let next: Pack[] = [];
  let stats: RepackStats | null = null;
  let after = 0;
  if (live.size > 0) {
    const made = repackObjects(dir, live, options.names);
    next = [made.pack];
    stats = made.stats;
    after = statSync(made.pack.file).size;
  }
  faultPoint("gc:repacked");
  for (const pack of packs) {
    // The new pack can have an old one's name (the same index): it stays.
    if (next.some((p) => p.file === pack.file)) continue;
    unlinkIfThere(pack.file);
    faultPoint("gc:pack-removed");
  }
  for (const path of loosePacked) unlinkIfThere(path);
  for (const path of duplicates) before += unlinkIfThere(path);
  return { packs: next, removed: [...removed], freed: Math.max(0, before - after), stats };
}
