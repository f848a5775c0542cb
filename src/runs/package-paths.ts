import { resolve } from "node:path";

// Two levels up from src/runs/ (or dist/runs/) is the package root, which ships tcl/ and examples/.
const PACKAGE_ROOT = resolve(import.meta.dirname, "..", "..");

/** The in-tool side shipped with the package: queue_processor.tcl and innovus_stub.tcl. */
export function tclDir(): string {
  return resolve(PACKAGE_ROOT, "tcl");
}

/** The example subskills shipped with the package (searched after the workspace's own). */
export function exampleSkillsDir(): string {
  return resolve(PACKAGE_ROOT, "examples", "skills");
}

/** The example design (AAA.enc + AAA.enc.dat/) shipped with the package. */
export function exampleDesignDir(): string {
  return resolve(PACKAGE_ROOT, "examples", "design");
}
