import { lstatSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** A deterministic xorshift32, so every run generates the same workspace. */
export function createPrng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x1_0000_0000;
  };
}

const WORDS = [
  "const",
  "return",
  "function",
  "import",
  "export",
  "value",
  "index",
  "result",
  "await",
  "items",
  "config",
  "string",
  "number",
  "throw",
  "error",
  "if",
  "else",
  "for",
  "map",
  "filter",
];

/** Source-like text of about `size` bytes (git compresses it as it would real code). */
export function sourceText(size: number, rnd: () => number, tag: string): string {
  const lines: string[] = [`// ${tag}`];
  let n = tag.length + 4;
  while (n < size) {
    const words = 3 + Math.floor(rnd() * 9);
    let line = "  ".repeat(Math.floor(rnd() * 4));
    for (let w = 0; w < words; w++)
      line += `${WORDS[Math.floor(rnd() * WORDS.length)]}${w % 3 === 2 ? Math.floor(rnd() * 1000) : ""} `;
    lines.push(line);
    n += line.length + 1;
  }
  return `${lines.join("\n")}\n`;
}

/** The workspace's files, relative paths. */
export interface Fixture {
  files: string[];
  bytes: number;
}

/**
 * `files` files in nested directories (100 per directory, two levels), sizes spread so the
 * total is about `totalBytes`.
 */
export function generateWorkspace(
  dir: string,
  options: { files: number; totalBytes: number; seed?: number },
): Fixture {
  const rnd = createPrng(options.seed ?? 42);
  const avg = options.totalBytes / options.files;
  const files: string[] = [];
  let bytes = 0;
  for (let i = 0; i < options.files; i++) {
    const sub = join(`pkg${Math.floor(i / 1000)}`, `mod${Math.floor(i / 100) % 10}`);
    if (i % 100 === 0) mkdirSync(join(dir, sub), { recursive: true });
    const rel = join(sub, `file${i}.ts`);
    const size = Math.max(16, Math.floor(avg * (0.2 + 1.6 * rnd())));
    const text = sourceText(size, rnd, rel);
    writeFileSync(join(dir, rel), text);
    files.push(rel);
    bytes += text.length;
  }
  return { files, bytes };
}

/** Rewrite `count` files (chosen by `round`) with new content; returns their paths. */
export function changeFiles(
  dir: string,
  fixture: Fixture,
  options: { count: number; round: number },
): string[] {
  const rnd = createPrng(1000 + options.round);
  const changed: string[] = [];
  const step = Math.max(1, Math.floor(fixture.files.length / options.count));
  for (let k = 0; k < options.count; k++) {
    const rel = fixture.files[(k * step + options.round * 7) % fixture.files.length] ?? "";
    writeFileSync(
      join(dir, rel),
      sourceText(2000 + Math.floor(rnd() * 6000), rnd, `${rel} round ${options.round}`),
    );
    changed.push(rel);
  }
  return changed;
}

/** Apparent size of a directory tree, bytes. */
export function treeBytes(dir: string): number {
  let total = 0;
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) total += treeBytes(p);
    else total += lstatSync(p).size;
  }
  return total;
}
