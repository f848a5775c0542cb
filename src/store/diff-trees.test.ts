import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { manifestOf, manifestText, tempNodeStores } from "../../test/helpers/manifest-trees.ts";
import { diffManifests } from "./diff-manifests.ts";
import {
  ancestorsOf,
  diffTrees,
  entriesAt,
  type ManifestTree,
  treeLeavesRead,
  treeOfText,
} from "./diff-trees.ts";
import { diffManifestTexts, type ManifestEntry, manifestBytes } from "./manifest.ts";
import { forgetNodeTexts, type NodeStore } from "./manifest-nodes.ts";
import { buildTree } from "./manifest-tree.ts";

const { nodeStore: realStore } = tempNodeStores("tw-difftree-");

/** An entry of one of four kinds at `path`, its content picked by `n`. */
function entryAt(path: string, kind: number, n: number): ManifestEntry {
  if (kind === 0) return { path, type: "dir", mode: 0o755 - (n % 2) * 0o20, size: 0, mtime_ms: n };
  if (kind === 1)
    return { path, type: "symlink", mode: 0o777, size: 3, mtime_ms: n, target: `t${n % 5}` };
  return {
    path,
    type: "file",
    mode: kind === 2 ? 0o644 : 0o755,
    size: n % 7,
    mtime_ms: 1000 + (n % 3),
    oid: (n % 11).toString(16).padStart(40, "0"),
    ...(n % 13 === 0 ? { link: "d0/f-0.ts" } : {}),
  };
}

function stored(m: Map<string, ManifestEntry>, nodes: NodeStore): ManifestTree {
  return { root: buildTree(manifestText(m), nodes).root, nodes, source: "test" };
}

/** Paths in a few directories, so edits cluster, spread and cross leaf and group edges. */
const pathArb = fc
  .tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 300 }))
  .map(([d, f]) => `d${d}/f-${f}.ts`);
const editArb = fc.tuple(pathArb, fc.option(fc.tuple(fc.nat(3), fc.nat(1000)), { nil: null }));

/** A base manifest of `size` entries and the same with `edits` (a rename: one out, one in). */
function pair(size: number, seed: number, edits: [string, [number, number] | null][]) {
  const before = new Map<string, ManifestEntry>();
  for (let i = 0; i < size; i++) {
    const p = `d${(i + seed) % 31}/f-${Math.floor(i / 31)}.ts`;
    before.set(p, entryAt(p, (i + seed) % 4, i));
  }
  const after = new Map(before);
  for (const [p, e] of edits) {
    if (e === null) after.delete(p);
    else after.set(p, entryAt(p, e[0], e[1]));
  }
  return { before, after };
}

/** The tree difference agrees with the whole-text one and gives `diffManifests`' answer. */
function expectSameAsWhole(
  d: ReturnType<typeof diffTrees>,
  before: Map<string, ManifestEntry>,
  after: Map<string, ManifestEntry>,
): void {
  const a = manifestOf(before);
  const b = manifestOf(after);
  const whole = diffManifestTexts(manifestBytes(a), manifestBytes(b));
  expect(d).not.toBeNull();
  expect(whole).not.toBeNull();
  if (d === null || whole === null) return;
  expect(d.a).toEqual(whole.a);
  expect(d.b).toEqual(whole.b);
  expect(d.same).toBe(whole.same);
  const skipped = [{ path: "d3" }];
  expect(
    diffManifests({ schema_version: 1, entries: d.a }, { schema_version: 1, entries: d.b }),
  ).toEqual(diffManifests(a, b));
  expect(
    diffManifests(
      { schema_version: 1, entries: d.a },
      { schema_version: 1, entries: d.b },
      { skipped },
    ),
  ).toEqual(diffManifests(a, b, { skipped }));
}

describe("tree against tree", () => {
  it("equals the whole-text difference on random trees, both stored", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2500 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.array(editArb, { maxLength: 80 }),
        (size, seed, edits) => {
          const nodes = realStore();
          const { before, after } = pair(size, seed, edits);
          const ta = stored(before, nodes);
          const tb = stored(after, nodes);
          nodes.flush();
          forgetNodeTexts(); // read back from the packs on disk
          expectSameAsWhole(diffTrees(ta, tb), before, after);
          expectSameAsWhole(diffTrees(tb, ta), after, before);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("equals it with a single-blob (version 1) manifest on one side, and with empty trees", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1500 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.array(editArb, { maxLength: 40 }),
        (size, seed, edits) => {
          const nodes = realStore();
          const { before, after } = pair(size, seed, edits);
          const old = treeOfText(manifestText(before), "v1");
          const tb = stored(after, nodes);
          nodes.flush();
          expectSameAsWhole(diffTrees(old, tb), before, after);
          const empty = stored(new Map(), nodes);
          expectSameAsWhole(diffTrees(empty, tb), new Map(), after);
          expectSameAsWhole(diffTrees(tb, empty), after, new Map());
        },
      ),
      { numRuns: 30 },
    );
  });

  it("reads only the leaves around a few differences", () => {
    const nodes = realStore();
    const { before, after } = pair(20_000, 1, [
      ["d4/f-17.ts", [2, 5]],
      ["d20/f-200.ts", null],
      ["d29/f-3.ts", [3, 9]],
    ]);
    const ta = stored(before, nodes);
    const tb = stored(after, nodes);
    nodes.flush();
    const leaves = Math.round(20_000 / 32);
    const was = treeLeavesRead();
    const d = diffTrees(ta, tb);
    const read = treeLeavesRead() - was;
    expectSameAsWhole(d, before, after);
    expect(d?.same).toBeGreaterThan(19_990);
    // Each difference opens its own leaf on both sides, and maybe a neighbour.
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThanOrEqual(3 * 4);
    expect(read).toBeLessThan(leaves / 20);
    // Equal trees: nothing is read at all.
    const again = treeLeavesRead();
    expect(diffTrees(ta, stored(before, nodes))).toEqual({ a: [], b: [], same: before.size });
    expect(treeLeavesRead()).toBe(again);
  });

  it("finds entries by path, reading only the leaves that hold them", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2000 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.uniqueArray(
          fc.oneof(
            pathArb,
            pathArb.map((p) => p.slice(0, p.indexOf("/"))),
          ),
          {
            maxLength: 30,
          },
        ),
        (size, seed, wanted) => {
          const nodes = realStore();
          const { before } = pair(size, seed, []);
          const paths = [...wanted].sort();
          const got = entriesAt(stored(before, nodes), paths);
          expect(got).toEqual(paths.map((p) => before.get(p)).filter((e) => e !== undefined));
        },
      ),
      { numRuns: 40 },
    );
  });

  it("lists every directory above some paths once, sorted", () => {
    expect(ancestorsOf([{ path: "a/b/c" }, { path: "a/d" }, { path: "e" }])).toEqual(["a", "a/b"]);
  });
});
