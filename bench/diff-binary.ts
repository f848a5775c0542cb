/**
 * The binary row of bench/diff.ts (issue 22): a 4.7 MB binary (the head of the esbuild
 * executable in node_modules, or seeded noise without it) with 100 bytes changed. createFilePatch
 * (forward and reverse blocks in one patch) beside `git diff --no-index --binary`: median time
 * and patch size, and the size of the literal patch we wrote before deltas.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { createFilePatch } from "../src/diff/index.ts";

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

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

/** The binary case's two sides: 4.7 MB, 100 bytes changed (also read by bench/scale.ts). */
export function binaryPair(): { before: Buffer; after: Buffer; from: string } {
  const { bytes: before, from } = sourceBytes();
  const after = Buffer.from(before);
  for (let i = 0; i < 100; i++) {
    const at = 1000 + i * 46_989;
    after[at] = (after[at] as number) ^ 0xa5;
  }
  return { before, after, from };
}

/** Rows for the binary case: ours beside git, in the caller's table style. */
export function benchBinary(dir: string, reps: number, gitStartMs: number): string[] {
  const { before, after, from } = binaryPair();
  const fa = join(dir, "a.bin");
  const fb = join(dir, "b.bin");
  writeFileSync(fa, before);
  writeFileSync(fb, after);
  const args = ["diff", "--no-index", "--binary", "--full-index", fa, fb];
  let gitBytes = 0;
  const gitMs = median(
    Array.from({ length: reps }, () => {
      const t0 = performance.now();
      const r = spawnSync("git", args, { maxBuffer: 1 << 30 });
      gitBytes = r.stdout.length;
      return performance.now() - t0;
    }),
  );
  let ourBytes = 0;
  const make = () => createFilePatch({ oldPath: "a.bin", newPath: "a.bin", before, after });
  make(); // warm the JIT
  const ourMs = median(
    Array.from({ length: reps }, () => {
      const t0 = performance.now();
      ourBytes = make().length;
      return performance.now() - t0;
    }),
  );
  // The literal pair written before deltas: each side deflated, base85 (5 chars per 4 bytes, a
  // length char per 52 bytes).
  const literal = (b: Buffer) => {
    const z = deflateSync(b).length;
    return Math.ceil(z / 4) * 5 + Math.ceil(z / 52) * 2;
  };
  const net = Math.max(gitMs - gitStartMs, 0.01);
  return [
    `binary: ${(SIZE / 1e6).toFixed(1)} MB (${from}), 100 bytes changed, forward + reverse (median of ${reps})`,
    `  ours: ${ourMs.toFixed(1)} ms, ${ourBytes} patch bytes (a literal pair was ${literal(after) + literal(before)} bytes)`,
    `  git diff --binary: ${gitMs.toFixed(1)} ms (${net.toFixed(1)} ms without process start), ${gitBytes} patch bytes`,
    `  ours/git time ${(ourMs / gitMs).toFixed(2)} (${(ourMs / net).toFixed(2)} without git's start), ours/git size ${(ourBytes / gitBytes).toFixed(2)}`,
  ];
}
