import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applyFilePatch,
  createFilePatch,
  type FilePatch,
  parsePatch,
  reverseFilePatch,
  reversePatchText,
} from "../src/diff/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

/**
 * Issue 22 (item 3, binary): the binary deltas we write are applied by real `git apply` byte
 * for byte, forward, with -R and as our own reverse text; the deltas real `git diff --binary`
 * writes are applied by ours; a 4.7 MB binary with 100 bytes changed costs a few KB, not 5 MB.
 */

let tmp: { dir: string; cleanup: () => void };
beforeAll(() => {
  tmp = makeTempDir("tw-diff-bin-");
});
afterAll(() => tmp.cleanup());

function git(cwd: string, args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "latin1",
    maxBuffer: 1 << 28,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: "1",
      HOME: tmp.dir,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@t",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@t",
    },
  });
}

/** Deterministic bytes (xorshift) with a NUL up front, so git calls them binary. */
function noise(n: number, seed: number): Buffer {
  const out = Buffer.alloc(n);
  let x = seed | 1;
  for (let i = 1; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** A binary source: random, or a repeated record (a table, an image row), NUL-led. */
const source = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 60_000 }), fc.integer()).map(([n, s]) => noise(n, s)),
  fc
    .tuple(fc.uint8Array({ minLength: 1, maxLength: 24 }), fc.integer({ min: 1, max: 2000 }))
    .map(([u, k]) => Buffer.concat([Buffer.from([0]), ...Array.from({ length: k }, () => u)])),
);
const edits = fc.array(
  fc.record({
    at: fc.nat(),
    kind: fc.constantFrom("replace", "insert", "delete", "move"),
    data: fc.uint8Array({ minLength: 1, maxLength: 300 }),
  }),
  { minLength: 1, maxLength: 8 },
);
function edit(src: Buffer, list: { at: number; kind: string; data: Uint8Array }[]): Buffer {
  let b = src;
  for (const e of list) {
    const at = b.length === 0 ? 0 : e.at % b.length;
    const end = Math.min(b.length, at + e.data.length);
    if (e.kind === "move")
      b = Buffer.concat([b.subarray(end), b.subarray(at, end), b.subarray(0, at)]);
    else {
      const mid = e.kind === "delete" ? Buffer.alloc(0) : Buffer.from(e.data);
      b = Buffer.concat([b.subarray(0, at), mid, b.subarray(e.kind === "insert" ? at : end)]);
    }
  }
  return b;
}

/** `git apply` our patch to `before` in a plain folder: forward, then -R, then our reverse text. */
function gitRoundTrip(dir: string, before: Buffer, after: Buffer): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "x.bin");
  writeFileSync(file, before);
  const patch = createFilePatch({ oldPath: "x.bin", newPath: "x.bin", before, after });
  writeFileSync(`${dir}.patch`, patch, "latin1");
  git(dir, ["apply", `${dir}.patch`]);
  expect(readFileSync(file).equals(after)).toBe(true);
  git(dir, ["apply", "-R", `${dir}.patch`]);
  expect(readFileSync(file).equals(before)).toBe(true);
  git(dir, ["apply", `${dir}.patch`]);
  writeFileSync(`${dir}.reverse.patch`, reversePatchText(patch), "latin1");
  git(dir, ["apply", `${dir}.reverse.patch`]);
  expect(readFileSync(file).equals(before)).toBe(true);
  return patch;
}

/** What real `git diff --binary` writes for one file changed from `before` to `after`. */
function gitsPatch(dir: string, before: Buffer, after: Buffer): string {
  mkdirSync(dir, { recursive: true });
  git(dir, ["init", "-q"]);
  writeFileSync(join(dir, "x.bin"), before);
  git(dir, ["add", "x.bin"]);
  git(dir, ["commit", "-qm", "before"]);
  writeFileSync(join(dir, "x.bin"), after);
  return git(dir, ["diff", "--binary", "--full-index"]);
}

const bytesOf = (b: Uint8Array | null) => Buffer.from(b ?? new Uint8Array(0));
const kinds = (patch: string) => patch.split("\n").filter((l) => /^(literal|delta) /.test(l));

describe("binary deltas against real git", () => {
  it("git apply applies the deltas we write exactly, forward and reverse", () => {
    let n = 0;
    let deltas = 0;
    fc.assert(
      fc.property(source, edits, (before, list) => {
        const after = edit(before, list);
        if (after.equals(before)) return;
        const patch = gitRoundTrip(join(tmp.dir, `p${n++}`), before, after);
        deltas += kinds(patch).filter((k) => k.startsWith("delta")).length;
      }),
      {
        numRuns: Number(process.env.PROP_GIT_RUNS ?? 25),
        seed: Number(process.env.PROP_SEED ?? 22),
      },
    );
    // The property exercised deltas, not only literals.
    expect(deltas).toBeGreaterThan(n);
  }, 120_000);

  it("our applier applies the deltas real git diff --binary writes, both ways", () => {
    let n = 0;
    let deltas = 0;
    fc.assert(
      fc.property(source, edits, (before, list) => {
        const after = edit(before, list);
        if (after.equals(before)) return;
        const text = gitsPatch(join(tmp.dir, `g${n++}`), before, after);
        deltas += kinds(text).filter((k) => k.startsWith("delta")).length;
        const [p] = parsePatch(text);
        expect(bytesOf(applyFilePatch(before, p as FilePatch)).equals(after)).toBe(true);
        const back = reverseFilePatch(p as FilePatch);
        expect(bytesOf(applyFilePatch(after, back)).equals(before)).toBe(true);
      }),
      {
        numRuns: Number(process.env.PROP_GIT_RUNS ?? 25),
        seed: Number(process.env.PROP_SEED ?? 23),
      },
    );
    expect(deltas).toBeGreaterThan(n);
  }, 120_000);

  it("git apply takes our copies longer than 64 KB (three size bytes) and runs of zeros", () => {
    const before = Buffer.concat([noise(700_000, 5), Buffer.alloc(300_000)]);
    const after = Buffer.from(before);
    after[350_000] = (after[350_000] as number) ^ 1;
    after[850_000] = 7;
    const patch = gitRoundTrip(join(tmp.dir, "long"), before, after);
    const [p] = parsePatch(patch);
    const delta = Buffer.from(p?.binary?.forward.data ?? new Uint8Array(0));
    expect(p?.binary?.forward.kind).toBe("delta");
    // Header (two 3-byte varints), copy of 350,000 bytes: offset none, size 0x0557 30 (3 bytes).
    expect(delta.subarray(6, 10).toString("hex")).toBe("f0305705");
  }, 60_000);

  it("a 4.7 MB binary with 100 bytes changed is a few KB, as git's, and git applies it", () => {
    const before = noise(4_700_000, 47);
    const after = Buffer.from(before);
    for (let i = 0; i < 100; i++) {
      const at = 1000 + i * 46_989;
      after[at] = (after[at] as number) ^ 0xa5;
    }
    const ours = gitRoundTrip(join(tmp.dir, "big"), before, after);
    expect(kinds(ours).map((k) => k.split(" ")[0])).toEqual(["delta", "delta"]);
    const theirs = gitsPatch(join(tmp.dir, "big-git"), before, after);
    expect(kinds(theirs).map((k) => k.split(" ")[0])).toEqual(["delta", "delta"]);
    expect(ours.length).toBeLessThan(8_000);
    const [p] = parsePatch(theirs);
    const [q] = parsePatch(ours);
    // The opcodes are ours to choose: no more of them than git's. Deflate is Node's bundled zlib,
    // which packs the same bytes a little less tightly than git's system zlib at its level 1.
    expect(q?.binary?.forward.size).toBeLessThanOrEqual(p?.binary?.forward.size ?? 0);
    expect(q?.binary?.reverse?.size).toBeLessThanOrEqual(p?.binary?.reverse?.size ?? 0);
    expect(ours.length).toBeLessThan(theirs.length * 1.15);
    expect(bytesOf(applyFilePatch(before, p as FilePatch)).equals(after)).toBe(true);
  }, 120_000);
});
