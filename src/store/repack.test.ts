import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { gitBlobId } from "../core/index.ts";
import { findInPack, forgetPackBases, loadPacks, parseEntry, readEntry } from "./object-packs.ts";
import { createObjectStore } from "./object-store.ts";
import { MAX_DELTA_DEPTH } from "./repack.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function storeDir(): string {
  const t = makeTempDir();
  cleanups.push(t.cleanup);
  return join(t.dir, "objects");
}

/** A source-like file: `n` numbered lines of code. */
function source(n: number, tag: string): string {
  let text = "";
  for (let i = 0; i < n; i++) text += `export function ${tag}${i}(a, b) { return a * ${i} + b; }\n`;
  return text;
}

/** `text` with a few lines changed (version `v`). */
function edited(text: string, v: number): string {
  const lines = text.split("\n");
  for (let k = 0; k < 3; k++) lines[(v * 7 + k * 13) % lines.length] = `// edit ${v}.${k}`;
  return lines.join("\n");
}

function packBytes(dir: string): number {
  return readdirSync(join(dir, "pack")).reduce(
    (n, f) => n + statSync(join(dir, "pack", f)).size,
    0,
  );
}

/** Each object's delta chain depth in the store's one pack (0: stored whole). */
function depths(dir: string): Map<string, number> {
  const [pack] = loadPacks(dir);
  const out = new Map<string, number>();
  for (const oid of createObjectStore(dir).list()) {
    const slot = findInPack(pack!, Buffer.from(oid, "hex"));
    const head = parseEntry(readEntry(pack!, slot!));
    out.set(oid, head!.depth);
  }
  return out;
}

describe("repack", () => {
  it("stores versions of a file as deltas, compressed, and reads every one back exactly", () => {
    const dir = storeDir();
    const store = createObjectStore(dir);
    const names = new Map<string, string>();
    const versions: Buffer[] = [];
    let text = source(400, "f");
    for (let v = 0; v < 30; v++) {
      text = edited(text, v);
      const bytes = Buffer.from(text);
      versions.push(bytes);
      names.set(store.write(bytes), "src/lib/f.ts");
    }
    for (let k = 0; k < 40; k++)
      names.set(store.write(Buffer.from(source(50, `g${k}_`))), `g${k}.ts`);
    const raw = [...names.keys()].reduce((n, oid) => n + (store.sizeOf(oid) ?? 0), 0);
    const result = store.repack(new Set(names.keys()), names);
    expect(result.removed).toEqual([]);
    expect(result.stats?.objects).toBe(70);
    expect(result.stats?.deltas).toBeGreaterThanOrEqual(29);
    // loose copies gone (fan-out folders stay: a writer elsewhere may hold one), one small pack
    const fans = readdirSync(dir).filter((n) => n !== "pack");
    expect(fans.flatMap((f) => readdirSync(join(dir, f)))).toEqual([]);
    expect(packBytes(dir)).toBeLessThan(raw / 10);
    const again = createObjectStore(dir);
    for (const bytes of versions) {
      expect(again.read(gitBlobId(bytes), { verify: true }).equals(bytes)).toBe(true);
      expect(again.sizeOf(gitBlobId(bytes))).toBe(bytes.length);
    }
    const chains = depths(dir);
    expect(Math.max(...chains.values())).toBeLessThanOrEqual(MAX_DELTA_DEPTH);
    expect(Math.max(...chains.values())).toBeGreaterThan(0);
  });

  it("caches what it read in memory of its own, bounded by its bytes, and forgets it on demand", () => {
    // A small object decompressed is a view into a 16 KiB output chunk: kept as such, the cache
    // held several times what it counted (the daemon's worker at 100k files).
    const dir = storeDir();
    const store = createObjectStore(dir);
    const oids = new Map<string, string>();
    for (let k = 0; k < 80; k++)
      oids.set(store.write(Buffer.from(source(20, `s${k}_`))), `s${k}.ts`);
    expect(store.repack(new Set(oids.keys()), oids).stats?.objects).toBe(80);
    const again = createObjectStore(dir);
    for (const oid of oids.keys()) again.read(oid, { verify: true });
    const [pack] = loadPacks(dir);
    const cached = [...pack!.bases.values()];
    expect(cached.length).toBe(80);
    const under = new Set(cached.map((b) => b.buffer));
    const held = [...under].reduce((n, u) => n + u.byteLength, 0);
    expect(held).toBe(pack!.cached);
    forgetPackBases();
    expect(pack!.bases.size).toBe(0);
    expect(pack!.cached).toBe(0);
    // and it reads on as before
    for (const oid of oids.keys()) expect(gitBlobId(again.read(oid))).toBe(oid);
  });

  it("copies a packed entry whose chain stays live, re-encodes one whose base died", () => {
    const dir = storeDir();
    const store = createObjectStore(dir);
    const names = new Map<string, string>();
    const ids: string[] = [];
    let text = source(300, "h");
    for (let v = 0; v < 8; v++) {
      text = edited(text, v);
      const oid = store.write(Buffer.from(text));
      ids.push(oid);
      names.set(oid, "h.ts");
    }
    const fillers: string[] = [];
    for (let k = 0; k < 60; k++) fillers.push(store.write(Buffer.from(source(10, `z${k}_`))));
    store.repack(new Set([...ids, ...fillers]), names);
    // a second gc with nothing new and nothing dead writes nothing
    const again = createObjectStore(dir).repack(new Set([...ids, ...fillers]), names);
    expect(again.stats).toBeNull();
    // a few new objects wait loose until something must be rewritten anyway
    text = edited(text, 99);
    const newest = createObjectStore(dir).write(Buffer.from(text));
    names.set(newest, "h.ts");
    const live = new Set([...ids, ...fillers, newest]);
    expect(createObjectStore(dir).repack(live, names).stats).toBeNull();
    // a filler dies: the pack is rewritten, its live entries copied, the new one a delta
    live.delete(fillers[0] as string);
    const next = createObjectStore(dir).repack(live, names);
    expect(next.removed).toEqual([fillers[0]]);
    // (fillers based on the dead one are made anew; the rest is copied)
    expect(next.stats?.objects).toBe(68);
    expect(next.stats?.reused).toBeGreaterThanOrEqual(50);
    expect(next.stats?.deltas).toBeGreaterThanOrEqual(8);
    // every other version dies: whatever was based on them is made anew and still reads
    const kept = ids.filter((_, i) => i % 2 === 0);
    for (const oid of ids) if (!kept.includes(oid)) live.delete(oid);
    const pruned = createObjectStore(dir).repack(live, names);
    expect(pruned.removed.sort()).toEqual(ids.filter((_, i) => i % 2 === 1).sort());
    const after = createObjectStore(dir);
    expect(after.list().sort()).toEqual([...live].sort());
    for (const oid of live) expect(gitBlobId(after.read(oid))).toBe(oid);
    expect(loadPacks(dir)).toHaveLength(1);
  });

  it("reads and repacks an old store: raw loose objects and version-1 packs", () => {
    const dir = storeDir();
    const store = createObjectStore(dir);
    const many = new Map<string, Buffer>();
    for (let i = 0; i < 100; i++) {
      const bytes = Buffer.from(source(20 + (i % 5), `m${i}_`));
      many.set(gitBlobId(bytes), bytes);
    }
    store.writeMany(many); // a version-1 pack, as a first snapshot writes it
    const loose = Buffer.from(source(30, "loose"));
    const looseId = store.write(loose);
    expect(readFileSync(store.pathOf(looseId)).equals(loose)).toBe(true); // stored raw
    const [v1] = loadPacks(dir);
    expect(v1?.version).toBe(1);
    const all = new Map([...many, [looseId, loose]]);
    for (const [oid, bytes] of all)
      expect(store.read(oid, { verify: true }).equals(bytes)).toBe(true);
    createObjectStore(dir).repack(new Set(all.keys()));
    const packs = loadPacks(dir);
    expect(packs.map((p) => p.version)).toEqual([2]);
    const after = createObjectStore(dir);
    for (const [oid, bytes] of all)
      expect(after.read(oid, { verify: true }).equals(bytes)).toBe(true);
  });

  it("leaves objects over 8 MiB loose and raw, streamed as before", () => {
    const dir = storeDir();
    const store = createObjectStore(dir);
    const big = Buffer.alloc(9 * 1024 * 1024, 7);
    const bigId = store.write(big);
    const small: string[] = [];
    for (let k = 0; k < 64; k++) small.push(store.write(Buffer.from(source(5, `s${k}_`))));
    const result = store.repack(new Set([bigId, ...small]));
    expect(result.stats?.objects).toBe(64);
    expect(statSync(store.pathOf(bigId)).size).toBe(big.length);
    expect(createObjectStore(dir).read(bigId, { verify: true }).length).toBe(big.length);
  });
});
