import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fileEntry, manifestText, tempNodeStores } from "../../test/helpers/manifest-trees.ts";
import { gitBlobId, isTimewarpError } from "../core/index.ts";
import { entryLine, type ManifestEntry } from "./manifest.ts";
import {
  createNodeStore,
  forgetNodeTexts,
  nodeBlockReads,
  nodeCacheBytes,
} from "./manifest-nodes.ts";
import { assembleText, buildTree, type LineEdit, parseRefs, spliceTree } from "./manifest-tree.ts";

const { nodeDir } = tempNodeStores("tw-tree-");

const countFiles = (dir: string) =>
  readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;

describe("manifest trees", () => {
  it("splicing edits into a tree gives the tree of the edited text, node for node", () => {
    // Paths in a few directories, so edits cluster and spread; sizes past several groups.
    const pathArb = fc
      .tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 400 }))
      .map(([d, f]) => `d${d}/é-${f}.ts`);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3000 }),
        fc.array(fc.tuple(pathArb, fc.option(fc.nat(1000), { nil: null })), { maxLength: 120 }),
        fc.integer(),
        (size, editList, seed) => {
          const nodes = createNodeStore(nodeDir());
          const before = new Map<string, ManifestEntry>();
          for (let i = 0; i < size; i++) {
            const p = `d${(i * 7 + seed) % 41}/é-${(i * 13) % 401}.ts`;
            before.set(p, fileEntry(p, i));
          }
          const base = buildTree(manifestText(before), nodes);
          const after = new Map(before);
          const edits = new Map<string, ManifestEntry | null>();
          for (const [p, n] of editList) {
            const e = n === null ? null : fileEntry(p, n);
            edits.set(p, e);
            if (e === null) after.delete(p);
            else after.set(p, e);
          }
          const lines: LineEdit[] = [...edits.keys()].sort().map((p) => {
            const e = edits.get(p) ?? null;
            return { path: p, line: e === null ? null : Buffer.from(entryLine(e)) };
          });
          const spliced = spliceTree(base.root, lines, nodes, "test");
          const fresh = buildTree(manifestText(after), createNodeStore(nodeDir()));
          expect(spliced?.hash).toBe(fresh.hash);
          expect(spliced?.entries).toBe(after.size);
          expect(
            assembleText(spliced?.root as Buffer, nodes, "test").equals(manifestText(after)),
          ).toBe(true);
        },
      ),
      { numRuns: 30 },
    );
  });

  it("a few edits write a few nodes, and an unchanged part is the same node", () => {
    const dir = nodeDir();
    const nodes = createNodeStore(dir);
    const m = new Map<string, ManifestEntry>();
    for (let i = 0; i < 20_000; i++)
      m.set(`src/m${i % 97}/f${i}.js`, fileEntry(`src/m${i % 97}/f${i}.js`, i));
    const base = buildTree(manifestText(m), nodes);
    const groups = parseRefs(base.root, "test").length;
    expect(groups).toBeGreaterThan(20);
    const written = countFiles(dir);
    const lines: LineEdit[] = ["src/m1/f1.js", "src/m50/f50.js", "src/m96/f19982.js"]
      .sort()
      .map((p) => ({ path: p, line: Buffer.from(entryLine(fileEntry(p, 7))) }));
    const next = spliceTree(base.root, lines, nodes, "test");
    // one pack for the new nodes
    expect(countFiles(dir) - written).toBe(1);
    const a = new Set(parseRefs(base.root, "test").map((g) => g.id));
    const b = parseRefs(next?.root as Buffer, "test").map((g) => g.id);
    expect(b.filter((id) => a.has(id)).length).toBeGreaterThanOrEqual(groups - 3);
  });

  it("a tree built with views has the same nodes, each a view of the text, not a copy", () => {
    const m = new Map<string, ManifestEntry>();
    for (let i = 0; i < 5_000; i++)
      m.set(`d${i % 31}/f${i}.ts`, fileEntry(`d${i % 31}/f${i}.ts`, i));
    const text = manifestText(m);
    const held = (copies: Map<string, Buffer>) => ({
      ...createNodeStore(nodeDir()),
      write: (id: string, t: Buffer) => void copies.set(id, t),
      flush: () => {},
    });
    const copied = new Map<string, Buffer>();
    const viewed = new Map<string, Buffer>();
    const a = buildTree(text, held(copied));
    const b = buildTree(text, held(viewed), { views: true });
    expect(b.hash).toBe(a.hash);
    expect([...viewed.keys()].sort()).toEqual([...copied.keys()].sort());
    const leaves = parseRefs(a.root, "test").flatMap((g) =>
      parseRefs(copied.get(g.id) as Buffer, "test"),
    );
    expect(leaves.length).toBeGreaterThan(50);
    for (const leaf of leaves) {
      const v = viewed.get(leaf.id) as Buffer;
      expect(v.equals(copied.get(leaf.id) as Buffer)).toBe(true);
      expect(v.buffer).toBe(text.buffer);
      expect(copied.get(leaf.id)?.buffer).not.toBe(text.buffer);
    }
  });

  it("a damaged node is CORRUPT_FILE naming it", () => {
    const dir = nodeDir();
    const nodes = createNodeStore(dir);
    const m = new Map<string, ManifestEntry>();
    for (let i = 0; i < 500; i++) m.set(`f${i}`, fileEntry(`f${i}`, i));
    const base = buildTree(manifestText(m), nodes);
    const [pack] = readdirSync(dir).filter((n) => n.endsWith(".twn"));
    const path = join(dir, pack as string);
    const bytes = readFileSync(path);
    bytes.fill(0x41, bytes.length - 200); // the last nodes' bytes
    rmSync(path);
    writeFileSync(path, bytes);
    forgetNodeTexts();
    let error: unknown;
    try {
      assembleText(base.root, nodes, "test");
    } catch (e) {
      error = e;
    }
    expect(isTimewarpError(error) && error.code).toBe("CORRUPT_FILE");
    expect(isTimewarpError(error) && error.data?.file).toBe(path);
  });

  it("stores a node again when its pack went since this process listed the packs (a gc elsewhere)", () => {
    const dir = nodeDir();
    const nodes = createNodeStore(dir);
    const text = Buffer.from('{"path":"a","type":"dir","mode":493,"size":0,"mtime_ms":1}');
    const id = gitBlobId(text);
    nodes.write(id, text);
    nodes.flush();
    for (const n of readdirSync(dir)) rmSync(join(dir, n)); // another process's gc dropped it
    nodes.write(id, text);
    nodes.flush();
    forgetNodeTexts();
    expect(nodes.read(id).equals(text)).toBe(true);
  });
  it("keeps a few MiB of nodes in memory however large the manifests read", () => {
    // ~6 MiB of text: a long-lived process (the daemon's worker, the dashboard) reading whole
    // manifests and splicing edits must not hold them (issue 22: the daemon <= 120 MiB).
    const nodes = createNodeStore(nodeDir());
    const m = new Map<string, ManifestEntry>();
    for (let i = 0; i < 50_000; i++)
      m.set(`d${i % 50}/f-${i}.ts`, fileEntry(`d${i % 50}/f-${i}.ts`, i));
    const text = manifestText(m);
    const tree = buildTree(text, nodes);
    forgetNodeTexts();
    expect(assembleText(tree.root, nodes, "test").equals(text)).toBe(true);
    const edits: LineEdit[] = [];
    for (let i = 0; i < 40_000; i += 97) {
      const p = `d${i % 50}/f-${i}.ts`;
      edits.push({ path: p, line: Buffer.from(entryLine(fileEntry(p, i + 1))) });
    }
    edits.sort((a, b) => (a.path < b.path ? -1 : 1));
    const spliced = spliceTree(tree.root, edits, nodes, "test");
    expect(spliced).not.toBeNull();
    const held = nodeCacheBytes();
    expect(held.nodes).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(held.blocks).toBeLessThanOrEqual(2 * 1024 * 1024 + 128 * 1024);
    expect(text.length).toBeGreaterThan(5 * 1024 * 1024); // more than both bounds together
  });

  it("writes a large first tree in packs of a few MiB, every node read back", () => {
    // at 100k files a first snapshot makes ~20 MB of nodes: held whole, they were its peak
    const dir = nodeDir();
    const m = new Map<string, ManifestEntry>();
    for (let i = 0; i < 70_000; i++)
      m.set(`d${i % 70}/f-${i}.ts`, fileEntry(`d${i % 70}/f-${i}.ts`, i));
    const text = manifestText(m);
    expect(text.length).toBeGreaterThan(8 * 1024 * 1024);
    const tree = buildTree(text, createNodeStore(dir));
    expect(readdirSync(dir).filter((n) => n.endsWith(".twn")).length).toBeGreaterThanOrEqual(2);
    forgetNodeTexts();
    expect(assembleText(tree.root, createNodeStore(dir), "test").equals(text)).toBe(true);
  });

  it("reading one node decompresses only the block it lies in", () => {
    const dir = nodeDir();
    const m = new Map<string, ManifestEntry>();
    for (let i = 0; i < 20_000; i++)
      m.set(`d${i % 20}/f-${i}.ts`, fileEntry(`d${i % 20}/f-${i}.ts`, i));
    const text = manifestText(m);
    const tree = buildTree(text, createNodeStore(dir));
    const group = parseRefs(tree.root, "test")[3];
    const nodes = createNodeStore(dir);
    forgetNodeTexts();
    const before = nodeBlockReads();
    const leaves = parseRefs(nodes.read(group?.id as string), "test");
    const leaf = nodes.read((leaves[1] as (typeof leaves)[0]).id);
    const after = nodeBlockReads();
    expect(leaf.length).toBeGreaterThan(0);
    // the group's block and the leaf's (one when they share it), each a small part of the text
    expect(after.blocks - before.blocks).toBeGreaterThanOrEqual(1);
    expect(after.blocks - before.blocks).toBeLessThanOrEqual(2);
    // a block is ~16 KiB, ending after the node that crosses that (nodes here are < 8 KiB)
    expect((after.bytes - before.bytes) / (after.blocks - before.blocks)).toBeLessThan(24 * 1024);
    expect(text.length).toBeGreaterThan(50 * (after.bytes - before.bytes));
  });

  it("finds the nodes of packs written by other processes, and forgets the packs a gc removed", () => {
    const dir = nodeDir();
    const mine = createNodeStore(dir);
    const a = Buffer.from('{"path":"a","type":"dir","mode":493,"size":0,"mtime_ms":1}');
    mine.write(gitBlobId(a), a);
    mine.flush();
    forgetNodeTexts();
    expect(mine.read(gitBlobId(a)).equals(a)).toBe(true); // the merged index is loaded now
    // another process adds a pack: copied in under the name its bytes give, as a writer does
    const other = nodeDir();
    const b = Buffer.from('{"path":"b","type":"dir","mode":493,"size":0,"mtime_ms":2}');
    const theirs = createNodeStore(other);
    theirs.write(gitBlobId(b), b);
    theirs.flush();
    const [name] = readdirSync(other).filter((n) => n.endsWith(".twn"));
    writeFileSync(join(dir, name as string), readFileSync(join(other, name as string)));
    forgetNodeTexts();
    expect(mine.read(gitBlobId(b)).equals(b)).toBe(true);
    expect(mine.read(gitBlobId(a)).equals(a)).toBe(true);
    // a gc elsewhere keeps only b: a is gone for this process too, b still reads
    for (const n of readdirSync(dir)) if (n !== name) rmSync(join(dir, n));
    forgetNodeTexts();
    expect(mine.listAll().ids).toEqual([gitBlobId(b)]);
    expect(mine.read(gitBlobId(b)).equals(b)).toBe(true);
    expect(() => mine.read(gitBlobId(a))).toThrow(/missing/);
  });

  it("keeps groups apart from leaves, so reading many leaves does not push them out", () => {
    // At 100k files a delta snapshot reads one group per edit; the leaves it and others read
    // (each ~5 KiB) filled the shared 2 MiB and the groups were decompressed again each time.
    const nodes = createNodeStore(nodeDir());
    const m = new Map<string, ManifestEntry>();
    for (let i = 0; i < 50_000; i++)
      m.set(`d${i % 50}/f-${i}.ts`, fileEntry(`d${i % 50}/f-${i}.ts`, i));
    const tree = buildTree(manifestText(m), nodes);
    forgetNodeTexts();
    const groups = parseRefs(tree.root, "test");
    const leaves = groups.flatMap((g) => parseRefs(nodes.read(g.id), "test"));
    for (const leaf of leaves) nodes.read(leaf.id); // ~6 MiB of leaves through a 2 MiB cache
    const blocks = nodeBlockReads().blocks;
    for (const g of groups) nodes.read(g.id);
    expect(nodeBlockReads().blocks).toBe(blocks);
    const held = nodeCacheBytes();
    expect(held.groups).toBeGreaterThan(0);
    expect(held.groups).toBeLessThanOrEqual(1024 * 1024);
    expect(held.nodes).toBeLessThanOrEqual(2 * 1024 * 1024);
  });
});
