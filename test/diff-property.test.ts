import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applyFilePatch,
  type CreateFilePatchOptions,
  createPatch,
  type FilePatch,
  formatPatch,
  parsePatch,
  reversePatches,
} from "../src/diff/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { readDiskTree } from "./helpers/disk-tree.ts";

/**
 * Issue 16 (tests): diff create → format → parse → apply → reverse is the identity on generated
 * file changes (binary, CRLF, no final newline, empty files, odd names with spaces, quotes, tabs
 * and non-UTF-8 bytes, mode changes, symlinks, creates, deletes, renames), and every patch our
 * formatter makes is accepted by `git apply` with the same result, forward and reverse.
 */

type Mode = "100644" | "100755" | "120000";
interface Entry {
  mode: Mode;
  data: Buffer;
}
/** A tree keyed by the name's bytes read as latin1 (one char per byte). */
type Tree = Map<string, Entry>;

const key = (bytes: Uint8Array) => Buffer.from(bytes).toString("latin1");

const NAME_PARTS = [
  "a",
  "b.txt",
  "with space",
  'quo"te',
  "tab\there",
  "back\\slash",
  "\xff\xfe",
  "\xc3\xa9t\xc3\xa9",
  "-dash",
  "x.bin",
  "new\nline",
  "trail ",
];
const name = fc
  .tuple(
    fc.option(fc.constantFrom("d", "sub dir", "\xe9"), { nil: undefined }),
    fc.constantFrom(...NAME_PARTS),
  )
  .map(([dir, base]) => (dir === undefined ? base : `${dir}/${base}`));

const LINES = [
  "alpha",
  "cr\r mid",
  "\\ No newline",
  "beta",
  "gamma",
  "",
  "  indented",
  "é ü",
  "\t tab",
  "x".repeat(90),
];
const text = fc
  .record({
    lines: fc.array(fc.constantFrom(...LINES), { maxLength: 12 }),
    crlf: fc.boolean(),
    finalNewline: fc.boolean(),
  })
  .map(({ lines, crlf, finalNewline }) => {
    const eol = crlf ? "\r\n" : "\n";
    const body = lines.join(eol);
    return Buffer.from(lines.length > 0 && finalNewline ? body + eol : body, "utf8");
  });
const binary = fc.oneof(
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.concat([Buffer.from(b), Buffer.from([0])])),
  fc.constant(Buffer.from([0xff, 0xfe, 0x41, 0x0a])),
);
const content = fc.oneof(
  { weight: 5, arbitrary: text },
  { weight: 1, arbitrary: binary },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(0)) },
);
const linkTarget = fc
  .constantFrom("target.txt", "../up", "with space", "d/\xff", "a")
  .map((t) => Buffer.from(t, "latin1"));
const entry: fc.Arbitrary<Entry> = fc.oneof(
  { weight: 4, arbitrary: content.map((data) => ({ mode: "100644" as const, data })) },
  { weight: 1, arbitrary: content.map((data) => ({ mode: "100755" as const, data })) },
  { weight: 1, arbitrary: linkTarget.map((data) => ({ mode: "120000" as const, data })) },
);

/** A change of one file: modify, mode-only, type change, rename, create or delete. */
const change = fc.oneof(
  fc.record({ kind: fc.constant("modify" as const), path: name, before: entry, after: entry }),
  fc.record({
    kind: fc.constant("rename" as const),
    path: name,
    to: name,
    before: entry,
    after: entry,
  }),
  fc.record({ kind: fc.constant("create" as const), path: name, after: entry }),
  fc.record({ kind: fc.constant("delete" as const), path: name, before: entry }),
  fc.record({
    kind: fc.constant("mode" as const),
    path: name,
    before: content,
  }),
);
type Change = typeof change extends fc.Arbitrary<infer T> ? T : never;

/** A set of changes on distinct paths, as trees before and after. */
const treePair = fc.array(change, { minLength: 1, maxLength: 5 }).map((changes) => {
  const before: Tree = new Map();
  const after: Tree = new Map();
  const used = new Set<string>();
  // Names that are a file in one change and a folder in another cannot coexist: keep the first.
  const clashes = (p: string) =>
    [...used].some((u) => u === p || u.startsWith(`${p}/`) || p.startsWith(`${u}/`));
  const take = (p: string) => {
    if (clashes(p)) return false;
    used.add(p);
    return true;
  };
  for (const c of changes as Change[]) {
    const p = key(Buffer.from(c.path, "latin1"));
    if (c.kind === "rename") {
      const q = key(Buffer.from(c.to, "latin1"));
      if (p === q || clashes(p) || clashes(q)) continue;
      take(p);
      take(q);
      before.set(p, c.before);
      after.set(q, c.after);
      continue;
    }
    if (!take(p)) continue;
    if (c.kind === "modify") {
      before.set(p, c.before);
      after.set(p, c.after);
    } else if (c.kind === "create") after.set(p, c.after);
    else if (c.kind === "delete") before.set(p, c.before);
    else {
      before.set(p, { mode: "100644", data: c.before });
      after.set(p, { mode: "100755", data: c.before });
    }
  }
  // A few files nobody touches, so a deleted file's folder is not always emptied.
  return { before, after, renames: changes.filter((c) => c.kind === "rename") as Change[] };
});

/** Our patch from `before` to `after`: renames as renames, the rest per path. */
function ourPatch(before: Tree, after: Tree, renames: Change[]): string {
  const opts: CreateFilePatchOptions[] = [];
  const done = new Set<string>();
  for (const r of renames) {
    if (r.kind !== "rename") continue;
    const p = key(Buffer.from(r.path, "latin1"));
    const q = key(Buffer.from(r.to, "latin1"));
    const b = before.get(p);
    const a = after.get(q);
    if (b === undefined || a === undefined || after.has(p) || before.has(q)) continue;
    if (b.mode.slice(0, 3) !== a.mode.slice(0, 3)) continue; // a type change is never a rename
    opts.push({
      oldPath: Buffer.from(p, "latin1"),
      newPath: Buffer.from(q, "latin1"),
      before: b.data,
      after: a.data,
      oldMode: b.mode,
      newMode: a.mode,
    });
    done.add(p);
    done.add(q);
  }
  const paths = [...new Set([...before.keys(), ...after.keys()])].filter((p) => !done.has(p));
  for (const p of paths.sort()) {
    const b = before.get(p);
    const a = after.get(p);
    const n = Buffer.from(p, "latin1");
    opts.push({
      oldPath: b ? n : null,
      newPath: a ? n : null,
      before: b?.data ?? null,
      after: a?.data ?? null,
      ...(b ? { oldMode: b.mode } : {}),
      ...(a ? { newMode: a.mode } : {}),
    });
  }
  return createPatch(opts);
}

/** Apply a multi-file diff to a tree as `git apply` does: every source is read from `tree`. */
function applyToTree(tree: Tree, patches: FilePatch[]): Tree {
  const result: Tree = new Map(tree);
  const removes: string[] = [];
  const writes: [string, Entry][] = [];
  for (const p of patches) {
    const oldB = p.oldPathBytes ?? null;
    const newB = p.newPathBytes ?? null;
    const src = oldB === null ? undefined : tree.get(key(oldB));
    const out = applyFilePatch(oldB === null ? null : (src?.data ?? null), p);
    if (oldB !== null && (newB === null || p.isRename)) removes.push(key(oldB));
    if (newB !== null) {
      if (out === null) throw new Error("apply returned null for a file that stays");
      const mode = (p.newMode ?? src?.mode) as Mode;
      writes.push([key(newB), { mode, data: Buffer.from(out) }]);
    }
  }
  for (const r of removes) result.delete(r);
  for (const [k, v] of writes) result.set(k, v);
  return result;
}

function treeText(tree: Tree): string[] {
  return [...tree.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${JSON.stringify(k)} ${v.mode} ${v.data.toString("hex")}`);
}

let tmp: { dir: string; cleanup: () => void };
beforeAll(() => {
  tmp = makeTempDir("tw-diff-prop-");
});
afterAll(() => tmp.cleanup());

function writeTree(dir: string, tree: Tree): void {
  mkdirSync(dir, { recursive: true });
  for (const [k, v] of tree) {
    const path = Buffer.concat([Buffer.from(`${dir}/`), Buffer.from(k, "latin1")]);
    const slash = path.lastIndexOf(0x2f);
    mkdirSync(path.subarray(0, slash), { recursive: true });
    if (v.mode === "120000") symlinkSync(v.data, path);
    else {
      writeFileSync(path, v.data);
      chmodSync(path, v.mode === "100755" ? 0o755 : 0o644);
    }
  }
}

function gitApply(dir: string, patch: string, reverse: boolean): void {
  const file = `${dir}.patch`;
  writeFileSync(file, patch);
  execFileSync("git", ["apply", ...(reverse ? ["-R"] : []), file], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: tmp.dir },
  });
}

/** The folders a tree's files need (what git leaves after an apply: no empty ones). */
function dirsOf(tree: Tree): string[] {
  const out = new Set<string>();
  for (const k of tree.keys()) {
    const parts = k.split("/");
    for (let i = 1; i < parts.length; i++) out.add(parts.slice(0, i).join("/"));
  }
  return [...out].sort();
}

describe("diff property: create → format → parse → apply → reverse", () => {
  it("is the identity on generated changes", () => {
    fc.assert(
      fc.property(treePair, ({ before, after, renames }) => {
        const patchText = ourPatch(before, after, renames);
        const patches = parsePatch(patchText);
        expect(formatPatch(patches, "git")).toBe(patchText);
        expect(treeText(applyToTree(before, patches))).toEqual(treeText(after));
        const reversed = reversePatches(patches);
        expect(treeText(applyToTree(after, reversed))).toEqual(treeText(before));
        // The reverse, written out and read back, is the same change.
        const again = parsePatch(reversed.map((p) => p.text).join(""));
        expect(treeText(applyToTree(after, again))).toEqual(treeText(before));
      }),
      { numRuns: Number(process.env.PROP_RUNS ?? 300), seed: Number(process.env.PROP_SEED ?? 16) },
    );
  });

  it("git apply accepts every patch we make, forward and reverse, with the same result", () => {
    let n = 0;
    fc.assert(
      fc.property(treePair, ({ before, after, renames }) => {
        const patchText = ourPatch(before, after, renames);
        if (patchText === "") return;
        const dir = join(tmp.dir, `r${n++}`);
        writeTree(dir, before);
        gitApply(dir, patchText, false);
        const forward = readDiskTree(dir);
        expect(treeText(forward.tree)).toEqual(treeText(after));
        expect(forward.dirs).toEqual(dirsOf(after));
        gitApply(dir, patchText, true);
        const back = readDiskTree(dir);
        expect(treeText(back.tree)).toEqual(treeText(before));
        expect(back.dirs).toEqual(dirsOf(before));
      }),
      {
        numRuns: Number(process.env.PROP_GIT_RUNS ?? 30),
        seed: Number(process.env.PROP_SEED ?? 61),
      },
    );
  });
});
