import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { effectiveExcludes, readConfig, workspacePaths } from "../src/core/index.ts";
import {
  createSnapshot,
  initWorkspace,
  readStatCache,
  scanScope,
  scanWorkspace,
  watchedChanges,
} from "../src/store/index.ts";
import { encodeManifest } from "../src/store/manifest.ts";
import { generateWorkspace } from "./snapshot-fixtures.ts";

const base = mkdtempSync(join(tmpdir(), "prof-"));
const w = join(base, "w");
generateWorkspace(w, { files: 10000, totalBytes: 60 * 1024 * 1024 });
initWorkspace(w);
createSnapshot(w);
execFileSync(process.execPath, ["bin/timewarp.cjs", "watch", "start", "-C", w]);
createSnapshot(w);
createSnapshot(w);
for (let i = 0; i < 6; i++) {
  const t = performance.now();
  const r = createSnapshot(w);
  console.log("snapshot", (performance.now() - t).toFixed(1), r.rehashed);
}
const p = workspacePaths(w);
const ex = effectiveExcludes(readConfig(p.config));
for (let i = 0; i < 6; i++) {
  let t = performance.now();
  const c = readStatCache(p.statCache);
  const t1 = performance.now() - t;
  t = performance.now();
  const a = watchedChanges(w, c.watchToken, scanScope(ex));
  const t2 = performance.now() - t;
  t = performance.now();
  const s = scanWorkspace(w, { excludes: ex, statCache: c, changed: a.changed });
  const t3 = performance.now() - t;
  t = performance.now();
  const e = encodeManifest(s.manifest);
  const t4 = performance.now() - t;
  console.log(
    "load",
    t1.toFixed(1),
    "ask",
    t2.toFixed(1),
    "scan",
    t3.toFixed(1),
    s.incremental,
    "encode",
    t4.toFixed(1),
  );
}
execFileSync(process.execPath, ["bin/timewarp.cjs", "watch", "stop", "-C", w]);

import { deflateRawSync, gzipSync } from "node:zlib";
import { gitBlobId } from "../src/core/index.ts";
import { manifestBytes } from "../src/store/manifest.ts";

{
  const c = readStatCache(p.statCache);
  const s = scanWorkspace(w, { excludes: ex, statCache: c });
  for (let i = 0; i < 5; i++) {
    let t = performance.now();
    const text = manifestBytes(s.manifest);
    const a = performance.now() - t;
    t = performance.now();
    const gz = gzipSync(text, { level: 1 });
    const b = performance.now() - t;
    t = performance.now();
    gitBlobId(text);
    const c2 = performance.now() - t;
    console.log(
      "text",
      a.toFixed(1),
      "gzip",
      b.toFixed(1),
      "sha1",
      c2.toFixed(1),
      text.length,
      gz.length,
    );
  }
}
