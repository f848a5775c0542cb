import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { buildSync } from "esbuild";
import { REPO_ROOT } from "./cli.ts";

/**
 * A TypeScript child script bundled once per test process into one ES module that `node` runs
 * as it is. A child started through tsx's loader first transforms the sources it imports: the
 * scripted hook server took 5.2–5.9 s to say "ready" that way at a load of 10, and 1.2–2.5 s
 * bundled. Tests that start many children (servers, processes killed -9) start them from here.
 * The bundles live in the test run's temp folder (`test-run-dir.ts`), removed when the run ends.
 */

const IN_SRC = join(REPO_ROOT, "src", "bundle");
const built = new Map<string, string>();
let folder: string | undefined;

function outDir(): string {
  if (folder === undefined) {
    // (every vitest config of the project runs test-run-dir.ts as a global setup)
    const run = process.env.TIMEWARP_TEST_RUN_DIR;
    if (run === undefined)
      throw new Error(
        "TIMEWARP_TEST_RUN_DIR is not set: add test/helpers/test-run-dir.ts to this vitest config's globalSetup",
      );
    folder = mkdtempSync(join(run, "bundle-"));
  }
  return folder;
}

function build(entry: string, out: string): string {
  buildSync({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: out,
    logLevel: "error",
    // (packages resolve from the repository, wherever the script lies)
    nodePaths: [join(REPO_ROOT, "node_modules")],
    // A module that asks import.meta for its place (a lazy require, a path to bin/) is told one
    // in src/, as deep as its own: its relative paths and packages resolve as from the sources.
    define: {
      "import.meta.url": JSON.stringify(pathToFileURL(join(IN_SRC, "bundle.mjs")).href),
      "import.meta.dirname": JSON.stringify(IN_SRC),
    },
    // (a dependency written as CommonJS asks for `require`, which an ES module lacks)
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  });
  return out;
}

/** The bundle of the script file `entry` (its imports resolved from where it lies). */
export function bundledScript(entry: string): string {
  let out = built.get(entry);
  if (out === undefined) {
    out = build(entry, join(outDir(), `${basename(entry, ".ts")}-${built.size}.mjs`));
    built.set(entry, out);
  }
  return out;
}

/** The bundle of a script given as text; its relative imports must be absolute paths. */
export function bundledSource(source: string): string {
  const key = createHash("sha1").update(source).digest("hex").slice(0, 12);
  const entry = join(outDir(), `src-${key}.ts`);
  if (!built.has(entry)) writeFileSync(entry, source);
  return bundledScript(entry);
}
