/**
 * Bundle the `timewarp` bin into one CommonJS file, dist/bin/timewarp.cjs (esbuild). Agents' hooks
 * start the CLI on every tool call, so start-up is the product's latency floor. On Node 20, ES
 * modules get no compile cache, and compiling zod, commander and our code costs ~20 ms on every
 * start; a CommonJS script can be run through `vm.Script` with V8's code cache, which
 * bin/timewarp.cjs keeps next to the bundle. Dynamic imports stay lazy (esbuild turns them into
 * lazily initialised modules in the same file), so a command still runs only the code it needs.
 * dist/bin/ sits two levels below the package root, like src/<cap>/, so code that finds tcl/,
 * plugins/ or examples/ relative to its own file works unchanged.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, resolve } from "node:path";
import { build, type Plugin } from "esbuild";

const ROOT = resolve(import.meta.dirname, "..");
const OUT = join(ROOT, "dist", "bin");

/**
 * A script run by `vm.Script` has no ES-module loader behind it, so a real `import()` would throw.
 * Ours are bundled; a dependency's `await import("node:fs")` becomes a lazy require here.
 */
const builtinDynamicImports: Plugin = {
  name: "builtin-dynamic-imports",
  setup(b) {
    const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
    b.onResolve({ filter: /.*/ }, (args) =>
      args.kind === "dynamic-import" && builtins.has(args.path)
        ? { path: args.path, namespace: "builtin" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "builtin" }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

/** What both bundles are: one minified CommonJS file for Node 20. */
const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minify: true,
  metafile: true,
  logLevel: "warning",
  // ES-module code asks import.meta for its own location; in a bundle that is the bundle file.
  define: { "import.meta.url": "__twBundleUrl", "import.meta.dirname": "__dirname" },
} as const;

rmSync(OUT, { recursive: true, force: true });
const result = await build({
  ...common,
  entryPoints: [join(ROOT, "src", "cli", "entry.ts")],
  sourcemap: "linked",
  outfile: join(OUT, "timewarp.cjs"),
  plugins: [builtinDynamicImports],
  // Only here: the hook client's code never asks import.meta, and its start is a hook's budget.
  banner: { js: "const __twBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
});
escapeNonAscii(join(OUT, "timewarp.cjs"));
const dynamic = Object.values(result.metafile.outputs).flatMap((o) =>
  o.imports.filter((i) => i.kind === "dynamic-import").map((i) => i.path),
);
if (dynamic.length > 0) {
  console.error(
    `the bundle still has import() calls, which fail under vm.Script: ${dynamic.join(", ")}`,
  );
  process.exit(1);
}
const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
console.log(`bundled the CLI into ${OUT} (${(bytes / 1024).toFixed(0)} KiB with its source map)`);

/**
 * Our modules do nothing when imported but define things, so the hook client may take only what
 * it calls from an index (esbuild otherwise keeps every module an index re-exports).
 */
const sourcesWithoutSideEffects: Plugin = {
  name: "sources-without-side-effects",
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      const path = resolve(args.resolveDir, args.path);
      return path.startsWith(join(ROOT, "src")) ? { path, sideEffects: false } : undefined;
    });
  },
};

// The hook client: what the bin runs first for `timewarp hook …` (see src/cli/hook-client-main.ts).
const client = await build({
  ...common,
  entryPoints: [join(ROOT, "src", "cli", "hook-client-main.ts")],
  outfile: join(OUT, "hook-client.cjs"),
  plugins: [sourcesWithoutSideEffects],
});
const clientBytes = Object.values(client.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
const clientInputs = Object.values(client.metafile.outputs).flatMap((o) =>
  Object.entries(o.inputs)
    .filter(([file, use]) => use.bytesInOutput > 0 && !file.startsWith("src/"))
    .map(([file]) => file),
);
if (clientBytes > 32 * 1024 || clientInputs.length > 0) {
  console.error(
    `the hook client grew to ${clientBytes} bytes${clientInputs.length > 0 ? ` and takes ${clientInputs.join(", ")}` : ""}: it must stay a few KiB of our own code`,
  );
  process.exit(1);
}
console.log(`bundled the hook client (${(clientBytes / 1024).toFixed(1)} KiB)`);

// A smoke run of the real bin on the new bundle: the build fails if the bundle cannot start.
const smoke = spawnSync(process.execPath, [join(ROOT, "bin", "timewarp.cjs"), "--version"], {
  // No cache from the build: the first real command writes one with the code it ran.
  env: { ...process.env, TIMEWARP_CODE_CACHE: "0" },
  encoding: "utf8",
});
if (smoke.status !== 0) {
  console.error(`the bundled CLI does not start:\n${smoke.stderr}`);
  process.exit(1);
}

/**
 * esbuild writes ASCII, except inside regular-expression literals (a few of the memory lab's
 * match Chinese words and ✖). One such character makes V8 hold the whole bundle's source at two
 * bytes a character: 4.7 MB instead of 2.35 MB in every process the bin starts, which `timewarp
 * ui` (issue 19: under 80 MB resident) cannot spare. `\uXXXX` means the same character in any
 * regular expression, with or without the `u` flag (a pair of them for one outside the BMP). The
 * source map's columns shift on the few lines that had one.
 */
function escapeNonAscii(file: string): void {
  const text = readFileSync(file, "utf8");
  // each UTF-16 unit above ASCII (a character outside the BMP is two, escaped as its pair)
  const ascii = text.replace(
    /[\u0080-\uffff]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  if (ascii !== text) writeFileSync(file, ascii);
}
