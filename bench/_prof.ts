import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSnapshot, initWorkspace } from "../src/store/index.ts";
import { generateWorkspace } from "./snapshot-fixtures.ts";

const base = mkdtempSync(join(tmpdir(), "prof-"));
const w = join(base, "w");
generateWorkspace(w, { files: 10000, totalBytes: 60 * 1024 * 1024 });
initWorkspace(w);
createSnapshot(w);
for (let i = 0; i < 8; i++) {
  const t = performance.now();
  const r = createSnapshot(w);
  console.log((performance.now() - t).toFixed(1), r.rehashed);
}

import { workspacePaths } from "../src/core/index.ts";
import { readStatCache, scanWorkspace } from "../src/store/index.ts";
import { encodeManifest } from "../src/store/manifest.ts";

const p = workspacePaths(w);
for (let i = 0; i < 5; i++) {
  let t = performance.now();
  const c = readStatCache(p.statCache);
  const t1 = performance.now() - t;
  t = performance.now();
  const s = scanWorkspace(w, { excludes: [], statCache: c });
  const t2 = performance.now() - t;
  t = performance.now();
  const e = encodeManifest(s.manifest);
  const t3 = performance.now() - t;
  console.log(
    "load",
    t1.toFixed(1),
    "scan",
    t2.toFixed(1),
    "encode",
    t3.toFixed(1),
    e.bytes.length,
  );
}
