/**
 * The binary case of bench/diff.ts (issue 22): a 4.7 MB binary (the head of the esbuild
 * executable in node_modules, or seeded noise without it) with 100 bytes changed, and the size
 * of the literal pair we wrote before deltas. createFilePatch writes forward and reverse blocks
 * in one patch; bench/diff.ts sets it beside `git diff --no-index --binary`.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";

const SIZE = 4_700_000;

function sourceBytes(): { bytes: Buffer; from: string } {
  const exe = join(
    import.meta.dirname,
    "..",
    "node_modules",
    "@esbuild",
    "linux-x64",
    "bin",
    "esbuild",
  );
  if (existsSync(exe)) {
    const b = readFileSync(exe);
    if (b.length >= SIZE)
      return { bytes: Buffer.from(b.subarray(0, SIZE)), from: "esbuild executable" };
  }
  const out = Buffer.alloc(SIZE);
  let x = 47;
  for (let i = 1; i < SIZE; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return { bytes: out, from: "seeded noise" };
}

/** The binary case: 4.7 MB with 100 bytes changed, and where the bytes come from. */
export function binaryPair(): { a: Buffer; b: Buffer; from: string } {
  const { bytes: before, from } = sourceBytes();
  const after = Buffer.from(before);
  for (let i = 0; i < 100; i++) {
    const at = 1000 + i * 46_989;
    after[at] = (after[at] as number) ^ 0xa5;
  }
  return { a: before, b: after, from };
}

/**
 * The size of the literal pair written before deltas: each side deflated, base85 (5 chars per
 * 4 bytes, a length char per 52 bytes).
 */
export function literalPairBytes(a: Buffer, b: Buffer): number {
  const literal = (x: Buffer) => {
    const z = deflateSync(x).length;
    return Math.ceil(z / 4) * 5 + Math.ceil(z / 52) * 2;
  };
  return literal(a) + literal(b);
}
