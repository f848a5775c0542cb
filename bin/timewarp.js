#!/usr/bin/env node
// The `timewarp` command. Runs the bundled CLI (dist/bin/, from `npm run build`); in a source
// checkout without a build it runs the sources through tsx, so the bin works during development.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bundled = join(root, "dist", "bin", "timewarp.js");
if (existsSync(bundled)) {
  await import(pathToFileURL(bundled).href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import(pathToFileURL(join(root, "src", "cli", "entry.ts")).href);
}
