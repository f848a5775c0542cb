/**
 * Bundle the `timewarp` bin into dist/bin/ (esbuild, ESM, code splitting). Agents' hooks start
 * the CLI on every tool call, and on Node 20 loading hundreds of small ES modules (zod alone is
 * ~300 files) costs more than the work a hook does; one entry plus lazily loaded chunks roughly
 * halves that. dist/bin/ sits two levels below the package root, like src/<cap>/, so code that
 * finds tcl/, plugins/ or examples/ relative to its own file works unchanged.
 */
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { build } from "esbuild";

const ROOT = resolve(import.meta.dirname, "..");
const OUT = join(ROOT, "dist", "bin");

rmSync(OUT, { recursive: true, force: true });
const result = await build({
  entryPoints: { timewarp: join(ROOT, "src", "cli", "entry.ts") },
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minify: true,
  sourcemap: "linked",
  outdir: OUT,
  chunkNames: "chunks/[name]-[hash]",
  metafile: true,
  logLevel: "warning",
  // CommonJS dependencies inside an ESM bundle still call require().
  banner: {
    js: "import { createRequire as __twCreateRequire } from 'node:module'; const require = __twCreateRequire(import.meta.url);",
  },
});
const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
console.log(
  `bundled the CLI into ${OUT} (${Object.keys(result.metafile.outputs).length} files, ${(bytes / 1024).toFixed(0)} KiB)`,
);
