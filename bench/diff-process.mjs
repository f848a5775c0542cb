// One whole `createFilePatch` process for bench/diff.ts: Node's start, the built library's
// load, two file reads and the patch written to stdout (what git's whole process does).
import { readFileSync, writeSync } from "node:fs";
import { createFilePatch } from "../dist/diff/index.js";

const [fa, fb] = process.argv.slice(2);
const patch = createFilePatch({
  oldPath: "f",
  newPath: "f",
  before: readFileSync(fa),
  after: readFileSync(fb),
});
writeSync(1, patch);
