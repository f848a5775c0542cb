import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fileEntry, manifestText, tempNodeStores } from "../../test/helpers/manifest-trees.ts";
import { gitBlobId } from "../core/index.ts";
import { entryLine, type ManifestEntry } from "./manifest.ts";
import { createNodeStore, forgetNodeTexts, type NodeStore } from "./manifest-nodes.ts";
import { assembleText, buildTree, type LineEdit, spliceTree } from "./manifest-tree.ts";
import { type LiveNode, MAX_NODE_DEPTH, planNodeLayout, walkNewNodes } from "./manifest-walk.ts";

const { nodeDir } = tempNodeStores("tw-nodes-");

/** An entry whose id is a real hash (incompressible, as in a store), not a counter. */
const hashed = (path: string, n: number): ManifestEntry => ({
  ...fileEntry(path, n),
  oid: gitBlobId(Buffer.from(String(n))),
});
const packsIn = (dir: string) => readdirSync(dir).filter((n) => n.endsWith(".twn"));

/** gc's sweep over a node store: keep what `roots` (newest first) reach, laid out as gc does. */
function sweep(nodes: NodeStore, roots: readonly Buffer[]): number {
  const live = new Map<string, LiveNode>();
  for (const [rank, root] of roots.entries()) {
    walkNewNodes(
      root,
      nodes,
      "test",
      (id) => !live.has(id),
      (kind, ref) => live.set(ref.id, { kind, first: ref.first, rank }),
    );
  }
  return nodes.keepOnly(planNodeLayout(live));
}

describe("gc's node packs (TWN3): older versions as deltas", () => {
  it("every kept tree reads back equal after gc, over random edit histories and two gcs", () => {
    const pathArb = fc
      .tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 150 }))
      .map(([d, f]) => `d${d}/f-${f}.ts`);
    const roundArb = fc.array(fc.tuple(pathArb, fc.option(fc.nat(5000), { nil: null })), {
      maxLength: 30,
    });
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1500 }),
        fc.array(roundArb, { minLength: 1, maxLength: 16 }),
        fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
        fc.integer({ min: 1, max: 15 }),
        (size, rounds, keepMask, gcAfter) => {
          const dir = nodeDir();
          const nodes = createNodeStore(dir);
          const tree = new Map<string, ManifestEntry>();
          for (let i = 0; i < size; i++) {
            const p = `d${i % 13}/f-${(i * 7) % 151}.ts`;
            tree.set(p, fileEntry(p, i));
          }
          const versions: { root: Buffer; text: Buffer }[] = [];
          let current = buildTree(manifestText(tree), nodes);
          versions.push({ root: current.root, text: manifestText(tree) });
          // (a sweep that finds nothing dead in the one pack there is leaves it as it is)
          let removed = 0;
          const kept = () =>
            versions.filter((_, i) => i === versions.length - 1 || keepMask[i] === true);
          for (const [r, round] of rounds.entries()) {
            const edits = new Map<string, ManifestEntry | null>();
            for (const [p, n] of round) edits.set(p, n === null ? null : fileEntry(p, n));
            // one path edited every round: a chain longer than MAX_NODE_DEPTH
            edits.set("d0/f-0.ts", fileEntry("d0/f-0.ts", 9000 + r));
            for (const [p, e] of edits) {
              if (e === null) tree.delete(p);
              else tree.set(p, e);
            }
            const lines: LineEdit[] = [...edits.keys()].sort().map((p) => {
              const e = edits.get(p) ?? null;
              return { path: p, line: e === null ? null : Buffer.from(entryLine(e)) };
            });
            current = spliceTree(current.root, lines, nodes, "test") ?? current;
            versions.push({ root: current.root, text: manifestText(tree) });
            if (r + 1 === gcAfter)
              removed += sweep(
                nodes,
                kept()
                  .reverse()
                  .map((v) => v.root),
              );
          }
          removed += sweep(
            nodes,
            kept()
              .reverse()
              .map((v) => v.root),
          );
          forgetNodeTexts();
          for (const v of kept()) {
            expect(assembleText(v.root, nodes, "test").equals(v.text)).toBe(true);
          }
          const packs = packsIn(dir);
          expect(packs.length).toBeLessThanOrEqual(1);
          if (packs.length === 1 && removed > 0) {
            expect(readFileSync(join(dir, packs[0] as string)).toString("latin1", 0, 4)).toBe(
              "TWN3",
            );
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);

  it("old versions are stored as deltas: many versions cost little more than one", () => {
    const dir = nodeDir();
    const nodes = createNodeStore(dir);
    const tree = new Map<string, ManifestEntry>();
    for (let i = 0; i < 3000; i++)
      tree.set(`d${i % 30}/f${i}.ts`, hashed(`d${i % 30}/f${i}.ts`, i));
    let current = buildTree(manifestText(tree), nodes);
    const roots = [current.root];
    expect(sweep(nodes, roots)).toBe(0); // one pack, nothing dead: nothing written
    const one = packBytes(dir);
    for (let r = 0; r < 20; r++) {
      const lines: LineEdit[] = [];
      for (let k = 0; k < 30; k++) {
        const x = (r * 97 + k * 131) % 3000;
        const p = `d${x % 30}/f${x}.ts`;
        tree.set(p, hashed(p, 100_000 + r * 100 + k));
        lines.push({ path: p, line: Buffer.from(entryLine(tree.get(p) as ManifestEntry)) });
      }
      lines.sort((a, b) => (a.path < b.path ? -1 : 1));
      current = spliceTree(current.root, lines, nodes, "test") ?? current;
      roots.push(current.root);
    }
    const twn2 = packBytes(dir);
    sweep(nodes, [...roots].reverse());
    const twn3 = packBytes(dir);
    // 21 versions, each with ~30 leaves and their groups new: deltas keep the pack near one
    // version's size, where the snapshots' own packs hold every new leaf whole.
    expect(twn3).toBeLessThan(twn2 / 3);
    expect(twn3).toBeLessThan(one * 2);
    expect(MAX_NODE_DEPTH).toBeGreaterThan(1);
    forgetNodeTexts();
    expect(assembleText(current.root, nodes, "test").equals(manifestText(tree))).toBe(true);
  });
});

function packBytes(dir: string): number {
  let n = 0;
  for (const p of packsIn(dir)) n += readFileSync(join(dir, p)).length;
  return n;
}
