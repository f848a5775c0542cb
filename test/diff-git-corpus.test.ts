import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applyFilePatch,
  createPatch,
  type FilePatch,
  parsePatch,
  reverseFilePatch,
  reversePatches,
  reversePatchText,
} from "../src/diff/index.ts";
import { buildHistory, type GitRepo, readTree, type Tree } from "./fixtures/diff/git-history.ts";
import { makeTempDir } from "./helpers/cli.ts";

/**
 * Replays a real git history: every commit pair's `git diff --binary --full-index -M -C` is
 * applied by our library to tree A and must give tree B byte for byte (modes too), and its
 * reverse must give A back. Patches we create must be accepted by `git apply` and give the same.
 */

const key = (bytes: Uint8Array) => Buffer.from(bytes).toString("latin1");

/** Apply a multi-file diff to a tree the way `git apply` does: every source is read from `tree`. */
function applyToTree(tree: Tree, patches: FilePatch[]): Tree {
  const result: Tree = new Map(tree);
  const removes: string[] = [];
  const writes: [string, { mode: string; data: Buffer }][] = [];
  for (const p of patches) {
    // parsePatch always sets the byte names.
    const oldB = p.oldPathBytes ?? null;
    const newB = p.newPathBytes ?? null;
    const src = oldB === null ? undefined : tree.get(key(oldB));
    const before = oldB === null ? null : (src?.data ?? null);
    const out = applyFilePatch(before, p);
    if (oldB !== null && (newB === null || p.isRename)) removes.push(key(oldB));
    if (newB !== null) {
      if (out === null) throw new Error("apply returned null for a file that stays");
      const mode = p.newMode ?? src?.mode;
      if (mode === undefined) throw new Error(`no mode for ${p.newPath}`);
      writes.push([key(newB), { mode, data: Buffer.from(out) }]);
    }
  }
  for (const r of removes) result.delete(r);
  for (const [k, v] of writes) result.set(k, v);
  return result;
}

function expectSameTree(actual: Tree, expected: Tree): void {
  expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [k, v] of expected) {
    const a = actual.get(k);
    expect(a?.mode, `mode of ${k}`).toBe(v.mode);
    expect(a?.data.equals(v.data), `content of ${JSON.stringify(k)}`).toBe(true);
  }
}

let tmp: { dir: string; cleanup: () => void };
let repo: GitRepo;
let trees: Tree[];
let pairs: [number, number][];

beforeAll(() => {
  tmp = makeTempDir("tw-diff-corpus-");
  repo = buildHistory(tmp.dir);
  trees = repo.commits.map((c) => readTree(repo, c));
  pairs = [
    [0, 1],
    [1, 2],
    [2, 3],
    [0, 3],
  ];
});
afterAll(() => tmp.cleanup());

function gitDiff(a: number, b: number, find = ["-M", "-C"]): Buffer {
  return repo.git([
    "diff",
    "--binary",
    "--full-index",
    ...find,
    repo.commits[a] ?? "",
    repo.commits[b] ?? "",
  ]);
}

describe("git's own diffs, replayed", () => {
  it("cover the kinds of change the corpus is meant to have", () => {
    const all = pairs.flatMap(([a, b]) => parsePatch(gitDiff(a, b)));
    expect(all.some((p) => p.isRename)).toBe(true);
    expect(all.some((p) => p.isCopy)).toBe(true);
    expect(all.some((p) => p.binary?.forward.kind === "literal")).toBe(true);
    expect(all.some((p) => p.binary?.forward.kind === "delta")).toBe(true);
    expect(
      all.some(
        (p) => p.oldMode !== undefined && p.newMode !== undefined && p.oldMode !== p.newMode,
      ),
    ).toBe(true);
    expect(all.some((p) => p.newMode === "120000")).toBe(true);
    expect(all.some((p) => p.noNewlineOld || p.noNewlineNew)).toBe(true);
    expect(all.some((p) => p.hunks.some((h) => h.lines.some((l) => l.endsWith("\r"))))).toBe(true);
    expect(all.some((p) => p.encoding === "latin1")).toBe(true);
    expect(all.some((p) => p.oldPath === null && p.hunks.length === 0 && !p.isBinary)).toBe(true);
    expect(all.some((p) => p.newPath === null)).toBe(true);
    const names = all
      .flatMap((p) => [p.oldPathBytes, p.newPathBytes])
      .filter((b): b is Uint8Array => b !== null && b !== undefined);
    expect(names.some((b) => key(b) === "tab\there.txt")).toBe(true);
    expect(names.some((b) => key(b) === 'quote"name.txt')).toBe(true);
    expect(names.some((b) => key(b) === "back\\slash.txt")).toBe(true);
    expect(names.some((b) => key(b) === "with space.txt")).toBe(true);
    expect(names.some((b) => b.includes(0xe9) && !key(b).includes("\u00c3"))).toBe(true);
    expect(names.some((b) => Buffer.from(b).toString("utf8") === "é-utf8.txt")).toBe(true);
  });

  for (const [a, b] of [
    [0, 1],
    [1, 2],
    [2, 3],
    [0, 3],
  ] as const) {
    it(`C${a}→C${b}: forward gives C${b}, reverse gives C${a}, and the record is kept byte-exact`, () => {
      const raw = gitDiff(a, b);
      const patches = parsePatch(raw);
      expect(patches.length).toBeGreaterThan(2);
      const enc = patches[0]?.encoding ?? "utf8";
      expect(Buffer.from(patches.map((p) => p.text).join(""), enc).equals(raw)).toBe(true);
      expectSameTree(applyToTree(trees[a] as Tree, patches), trees[b] as Tree);
      const reversed = patches.map(reverseFilePatch);
      expectSameTree(applyToTree(trees[b] as Tree, reversed), trees[a] as Tree);
      // The reversed text is itself a diff git accepts. (git cannot reverse a copy, even with
      // `git apply -R`: the reverse would need the whole copy to delete it. So this leg uses -M.)
      const noCopies = parsePatch(gitDiff(a, b, ["-M"]));
      const reversedText = Buffer.from(
        reversePatches(noCopies)
          .map((p) => p.text)
          .join(""),
        enc,
      );
      expect(gitApplyCached(b, reversedText, [])).toBe(treeOf(a));
      if (enc === "utf8")
        expect(reversePatchText(raw.toString("utf8"))).toBe(reversedText.toString("utf8"));
    });
  }
});

function treeOf(c: number): string {
  return repo
    .git(["rev-parse", `${repo.commits[c]}^{tree}`])
    .toString()
    .trim();
}

/** Apply a diff to commit `c`'s tree in a scratch index with real git; return the tree id. */
function gitApplyCached(c: number, patch: Buffer, flags: string[]): string {
  const index = join(tmp.dir, `index-${c}-${Math.random().toString(36).slice(2)}`);
  const patchFile = `${index}.patch`;
  writeFileSync(patchFile, patch);
  const env = { GIT_INDEX_FILE: index };
  try {
    repo.git(["read-tree", repo.commits[c] ?? ""], { env });
    repo.git(["apply", "--cached", "--check", ...flags, patchFile], { env });
    repo.git(["apply", "--cached", ...flags, patchFile], { env });
    return repo.git(["write-tree"], { env }).toString().trim();
  } finally {
    rmSync(index, { force: true });
    rmSync(patchFile, { force: true });
  }
}

function ourPatch(a: number, b: number): string {
  const ta = trees[a] as Tree;
  const tb = trees[b] as Tree;
  const paths = [...new Set([...ta.keys(), ...tb.keys()])].sort();
  return createPatch(
    paths.map((k) => {
      const before = ta.get(k);
      const after = tb.get(k);
      const name = Buffer.from(k, "latin1");
      return {
        oldPath: before ? name : null,
        newPath: after ? name : null,
        before: before?.data ?? null,
        after: after?.data ?? null,
        oldMode: before?.mode,
        newMode: after?.mode,
      };
    }),
  );
}

describe("patches we create", () => {
  for (const [a, b] of [
    [0, 1],
    [1, 2],
    [2, 3],
    [0, 3],
  ] as const) {
    it(`C${a}→C${b}: git apply accepts them and gives C${b}; git apply -R gives C${a}; so does our apply`, () => {
      const text = ourPatch(a, b);
      expect(text).toContain("diff --git");
      expect(gitApplyCached(a, Buffer.from(text), [])).toBe(treeOf(b));
      expect(gitApplyCached(b, Buffer.from(text), ["-R"])).toBe(treeOf(a));
      const patches = parsePatch(text);
      expect(patches.map((p) => p.text).join("")).toBe(text);
      expectSameTree(applyToTree(trees[a] as Tree, patches), trees[b] as Tree);
      expectSameTree(
        applyToTree(trees[b] as Tree, patches.map(reverseFilePatch)),
        trees[a] as Tree,
      );
      expect(gitApplyCached(b, Buffer.from(reversePatchText(text)), [])).toBe(treeOf(a));
    });
  }

  it("renames (text and binary, with a mode change) that we create are accepted by git apply", () => {
    const t0 = trees[0] as Tree;
    const txt = t0.get("to-rename.txt")?.data ?? Buffer.alloc(0);
    const bin = t0.get("bin.dat")?.data ?? Buffer.alloc(0);
    const newTxt = Buffer.concat([txt, Buffer.from("one more\n")]);
    const newBin = Buffer.concat([bin.subarray(0, 100), Buffer.from([0, 7, 7])]);
    const text = createPatch([
      { oldPath: "to-rename.txt", newPath: "sub dir/renamed.txt", before: txt, after: newTxt },
      {
        oldPath: "bin.dat",
        newPath: "bin2.dat",
        before: bin,
        after: newBin,
        oldMode: "100644",
        newMode: "100755",
      },
    ]);
    expect(text).toContain("rename from to-rename.txt\nrename to sub dir/renamed.txt\n");
    const tree = readTree(repo, gitApplyCached(0, Buffer.from(text), []));
    expect(tree.has("to-rename.txt") || tree.has("bin.dat")).toBe(false);
    expect(tree.get("sub dir/renamed.txt")?.data.equals(newTxt)).toBe(true);
    expect(tree.get("bin2.dat")).toMatchObject({ mode: "100755" });
    expect(tree.get("bin2.dat")?.data.equals(newBin)).toBe(true);
    const ours = applyToTree(t0, parsePatch(text));
    expectSameTree(ours, tree);
  });
});
