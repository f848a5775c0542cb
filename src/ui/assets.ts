import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve, sep } from "node:path";

// Two levels up from src/ui/ (or dist/bin/, where the CLI is bundled) is the package root.
const PACKAGE_ROOT = resolve(import.meta.dirname, "..", "..");

/** The dashboard's own page, scripts and styles, shipped as they are (no build step). */
export function webDir(): string {
  return join(PACKAGE_ROOT, "src", "ui", "web");
}

/**
 * The front-end libraries the page loads, by the name it asks for under `/vendor/`: an
 * allow-list, so the server never maps a URL to an arbitrary file of node_modules.
 */
const VENDOR: Record<string, [pkg: string, file: string]> = {
  "preact.mjs": ["preact", "dist/preact.mjs"],
  "preact-hooks.mjs": ["preact", "hooks/dist/hooks.mjs"],
  "htm.mjs": ["htm", "dist/htm.mjs"],
  "diff2html.min.js": ["diff2html", "bundles/js/diff2html.min.js"],
  "diff2html.min.css": ["diff2html", "bundles/css/diff2html.min.css"],
  "uPlot.esm.js": ["uplot", "dist/uPlot.esm.js"],
  "uPlot.min.css": ["uplot", "dist/uPlot.min.css"],
};

const require = createRequire(join(PACKAGE_ROOT, "package.json"));

/** Every name on the allow-list. */
export function vendorNames(): string[] {
  return Object.keys(VENDOR);
}

/** The file behind `/vendor/<name>`, or undefined for a name not on the list. */
export function vendorFile(name: string): string | undefined {
  // own keys only: `constructor`, `__proto__`… are names on every object
  const entry = Object.hasOwn(VENDOR, name) ? VENDOR[name] : undefined;
  if (entry === undefined) return undefined;
  const [pkg, file] = entry;
  const file0 = join(packageDir(pkg), file);
  return existsSync(file0) ? file0 : undefined;
}

/** A package's folder, found from its entry point (not every package exports its package.json). */
function packageDir(pkg: string): string {
  let dir = dirname(require.resolve(pkg));
  while (!existsSync(join(dir, "package.json")) || !dir.endsWith(`${sep}${pkg}`)) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the folder of ${pkg}`);
    dir = up;
  }
  return dir;
}

export const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".log": "text/plain; charset=utf-8",
  ".md": "text/plain; charset=utf-8",
  ".tcl": "text/plain; charset=utf-8",
  ".patch": "text/plain; charset=utf-8",
};
