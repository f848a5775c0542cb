import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { effectiveExcludes, readConfig, workspacePaths } from "../src/core/index.ts";
import {
  createObjectStore,
  createSnapshot,
  initWorkspace,
  readStatCache,
  scanScope,
  scanWorkspace,
  watchedChanges,
  writeStatCache,
} from "../src/store/index.ts";
import { encodeManifest } from "../src/store/manifest.ts";
import { changeFiles, generateWorkspace } from "./snapshot-fixtures.ts";

const base = mkdtempSync(join(tmpdir(), "prof-"));
const w = join(base, "w");
const fx = generateWorkspace(w, { files: 10000, totalBytes: 60 * 1024 * 1024 });
initWorkspace(w);
createSnapshot(w);
execFileSync(process.execPath, ["bin/timewarp.cjs", "watch", "start", "-C", w]);
createSnapshot(w);
createSnapshot(w);
const p = workspacePaths(w);
const ex = effectiveExcludes(readConfig(p.config));
for (let i = 0; i < 6; i++) {
  changeFiles(w, fx, { count: 20, round: i + 1 });
  let t = performance.now();
  const c = readStatCache(p.statCache);
  const t1 = performance.now() - t;
  t = performance.now();
  const a = watchedChanges(w, c.watchToken, scanScope(ex));
  const t2 = performance.now() - t;
  t = performance.now();
  const s = scanWorkspace(w, {
    excludes: ex,
    statCache: c,
    changed: a.changed,
    store: createObjectStore(p.objects),
  });
  const t3 = performance.now() - t;
  t = performance.now();
  const e = encodeManifest(s.manifest);
  const t4 = performance.now() - t;
  t = performance.now();
  s.statCache.watchToken = a.token;
  writeStatCache(p.statCache, s.statCache);
  const t5 = performance.now() - t;
  t = performance.now();
  console.log(
    "load",
    t1.toFixed(1),
    "ask",
    t2.toFixed(1),
    "scan",
    t3.toFixed(1),
    s.incremental,
    s.rehashed,
    "encode",
    t4.toFixed(1),
    "cache write",
    t5.toFixed(1),
  );
}
for (let i = 0; i < 4; i++) {
  changeFiles(w, fx, { count: 20, round: i + 10 });
  const t = performance.now();
  const r = createSnapshot(w);
  console.log("snapshot", (performance.now() - t).toFixed(1), r.rehashed);
}
execFileSync(process.execPath, ["bin/timewarp.cjs", "watch", "stop", "-C", w]);
