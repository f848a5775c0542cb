import { deflateSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createGitDelta } from "./binary-delta.ts";
import { applyGitDelta } from "./binary-patch.ts";
import { createFilePatch } from "./create-file-patch.ts";
import { parsePatch } from "./parse-patch.ts";

/** Deterministic bytes (xorshift), so a failure names its input. */
function noise(n: number, seed: number): Buffer {
  const out = Buffer.alloc(n);
  let x = seed | 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

const applied = (base: Uint8Array, delta: Uint8Array | null): Buffer => {
  if (delta === null) throw new Error("no delta");
  const r = applyGitDelta(base, delta);
  if (!r.ok) throw new Error(r.reason);
  return Buffer.from(r.result);
};

/** An edit list applied to a source: replace, insert or delete `len` bytes at a spot. */
const edits = fc.array(
  fc.record({
    at: fc.nat(),
    kind: fc.constantFrom("replace", "insert", "delete"),
    data: fc.uint8Array({ minLength: 1, maxLength: 40 }),
  }),
  { maxLength: 6 },
);
function edit(src: Buffer, list: { at: number; kind: string; data: Uint8Array }[]): Buffer {
  let b = src;
  for (const e of list) {
    const at = b.length === 0 ? 0 : e.at % b.length;
    const tail = e.kind === "insert" ? at : Math.min(b.length, at + e.data.length);
    const mid = e.kind === "delete" ? Buffer.alloc(0) : Buffer.from(e.data);
    b = Buffer.concat([b.subarray(0, at), mid, b.subarray(tail)]);
  }
  return b;
}

describe("createGitDelta", () => {
  it("writes git's header and opcodes: sizes as varints, one copy, one insert", () => {
    const src = noise(300, 7);
    const tgt = Buffer.concat([src.subarray(0, 200), Buffer.from("xyz")]);
    const d = Buffer.from(createGitDelta(src, tgt) as Uint8Array);
    // 300 = 0xac 0x02, 203 = 0xcb 0x01; copy offset 0 size 200 (0x90 0xc8); insert 3 bytes.
    expect(d.toString("hex")).toBe(`ac02cb0190c803${Buffer.from("xyz").toString("hex")}`);
    expect(applied(src, d).equals(tgt)).toBe(true);
  });

  it("copies a moved block and finds matches at any alignment", () => {
    const a = noise(5000, 3);
    const b = Buffer.concat([a.subarray(3001, 4999), Buffer.from("!"), a.subarray(7, 3001)]);
    const d = createGitDelta(a, b) as Uint8Array;
    expect(applied(a, d).equals(b)).toBe(true);
    expect(d.length).toBeLessThan(40);
  });

  it("goes on copying right after a replaced run, with no indexed block to find", () => {
    const src = noise(100, 5);
    const tgt = Buffer.from(src);
    tgt.write("WXYZ", 80, "latin1");
    const d = Buffer.from(createGitDelta(src, tgt) as Uint8Array);
    // copy 0..80, insert "WXYZ", copy 84..100: the tail is shorter than an indexed block.
    expect(d.toString("hex")).toBe(`6464905004${Buffer.from("WXYZ").toString("hex")}915410`);
    expect(applied(src, d).equals(tgt)).toBe(true);
  });

  it("copies across runs of one repeated block (zeros, a fill pattern) in few ops", () => {
    const zeros = Buffer.alloc(1_000_000);
    const poked = Buffer.from(zeros);
    for (let i = 0; i < 20; i++) poked[i * 49_999 + 3] = 1;
    const d = createGitDelta(zeros, poked) as Uint8Array;
    expect(applied(zeros, d).equals(poked)).toBe(true);
    expect(d.length).toBeLessThan(300);
  });

  it("round-trips through git's opcodes on random edits of random and repetitive data", () => {
    const source = fc.oneof(
      fc.uint8Array({ maxLength: 3000 }).map((u) => Buffer.from(u)),
      fc.tuple(fc.nat(5000), fc.integer()).map(([n, s]) => noise(n, s)),
      fc
        .tuple(fc.uint8Array({ minLength: 1, maxLength: 20 }), fc.nat(300))
        .map(([u, k]) => Buffer.concat(Array.from({ length: k }, () => Buffer.from(u)))),
    );
    fc.assert(
      fc.property(source, edits, (src, list) => {
        const tgt = edit(src, list);
        expect(applied(src, createGitDelta(src, tgt)).equals(tgt)).toBe(true);
        expect(applied(tgt, createGitDelta(tgt, src)).equals(src)).toBe(true);
      }),
      { numRuns: 300, seed: 22 },
    );
  });

  it("keeps a delta small for a few bytes changed in a large file, and stops at maxSize", () => {
    const a = noise(1_000_000, 11);
    const b = Buffer.from(a);
    for (let i = 0; i < 20; i++) b[i * 49_999 + 17] = (b[i * 49_999 + 17] as number) ^ 0xff;
    const d = createGitDelta(a, b) as Uint8Array;
    expect(applied(a, d).equals(b)).toBe(true);
    expect(d.length).toBeLessThan(400);
    expect(createGitDelta(a, noise(1000, 5), { maxSize: 500 })).toBeNull();
  });
});

describe("createFilePatch on binaries", () => {
  const name = { oldPath: "x.bin", newPath: "x.bin" };

  it("writes a delta both ways when it is smaller, a literal when it is not", () => {
    const a = noise(200_000, 9);
    const b = Buffer.concat([a.subarray(0, 1000), Buffer.from([0, 1, 2]), a.subarray(1000)]);
    const [p] = parsePatch(createFilePatch({ ...name, before: a, after: b }));
    expect(p?.binary?.forward.kind).toBe("delta");
    expect(p?.binary?.reverse?.kind).toBe("delta");
    expect(applied(a, p?.binary?.forward.data ?? null).equals(b)).toBe(true);
    expect(applied(b, p?.binary?.reverse?.data ?? null).equals(a)).toBe(true);

    const c = Buffer.concat([Buffer.from([0]), noise(500, 1)]);
    const d = Buffer.concat([Buffer.from([0]), noise(500, 2)]);
    const [q] = parsePatch(createFilePatch({ ...name, before: c, after: d }));
    expect(q?.binary?.forward.kind).toBe("literal");
    expect(q?.binary?.reverse?.kind).toBe("literal");
  });

  it("picks whichever deflates smaller, as git does", () => {
    // Zeros deflate to almost nothing: a literal of them beats a delta full of inserts.
    const a = Buffer.concat([Buffer.from([0]), noise(4000, 4)]);
    const b = Buffer.alloc(4000);
    const [p] = parsePatch(createFilePatch({ ...name, before: a, after: b }));
    const delta = createGitDelta(a, b) as Uint8Array;
    expect(deflateSync(b).length).toBeLessThan(deflateSync(delta).length);
    expect(p?.binary?.forward.kind).toBe("literal");
  });

  it("writes literals for a created or deleted binary", () => {
    const a = Buffer.concat([Buffer.from([0]), noise(100, 3)]);
    const [p] = parsePatch(createFilePatch({ ...name, before: null, after: a }));
    expect(p?.binary?.forward).toMatchObject({ kind: "literal", size: 101 });
    expect(p?.binary?.reverse).toMatchObject({ kind: "literal", size: 0 });
  });
});
