/**
 * What the stat cache's checksum costs the delta path (issue 16, class 6): a 10k-file workspace,
 * then snapshots told their changes (as the watch daemon tells them): 20 changed files, and
 * none. In process, medians. `TW_SRC` points at another checkout's `src/` to measure it the same
 * way (before/after a change):
 *
 *     npx tsx bench/snapshot-checksum.ts                    # this tree
 *     TW_SRC=/tmp/before/src npx tsx bench/snapshot-checksum.ts
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { crc32 } from "node:zlib";
import { changeFiles, generateWorkspace } from "./snapshot-fixtures.ts";

const FILES = Number(process.env.SNAPSHOT_BENCH_FILES ?? 10_000);
const REPS = Number(process.env.SNAPSHOT_BENCH_REPS ?? 30);
const src = resolve(process.env.TW_SRC ?? join(import.meta.dirname, "..", "src"));
const store = (await import(
  join(src, "store", "index.ts")
)) as typeof import("../src/store/index.ts");
const core = (await import(join(src, "core", "index.ts"))) as typeof import("../src/core/index.ts");

const base = mkdtempSync(join(tmpdir(), "tw-bench-sum-"));
try {
  const w = join(base, "w");
  const fixture = generateWorkspace(w, { files: FILES, totalBytes: FILES * 6000 });
  const opts = { excludes: [...core.DEFAULT_EXCLUDES], maxFileBytes: 1e9 };
  store.createSnapshot(w, opts);
  store.createSnapshot(w, opts); // past the racy window of the first
  store.createSnapshot(w, { ...opts, changed: [] }); // records the manifest file: deltas now
  const time = (fn: () => void) => {
    const t = performance.now();
    fn();
    return performance.now() - t;
  };
  const twenty: number[] = [];
  const none: number[] = [];
  for (let r = 0; r < REPS; r++) {
    const changed = changeFiles(w, fixture, { count: 20, round: r + 1 });
    twenty.push(
      time(() => {
        const made = store.createSnapshot(w, { ...opts, changed });
        // (a few more re-read: the racy ones of the round before)
        if (made.scan !== "delta" || made.rehashed < 20) {
          throw new Error(`scan ${made.scan}, re-read ${made.rehashed}`);
        }
      }),
    );
    none.push(
      time(() => {
        const made = store.createSnapshot(w, { ...opts, changed: [] });
        if (made.scan !== "delta") throw new Error(`scan ${made.scan}`);
      }),
    );
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0;
  // The checksums' own share, apart from the noise of a whole snapshot: a delta snapshot sums
  // the cache it reads and the one it writes, and the manifest file it writes or links.
  const paths = core.workspacePaths(w);
  const cache = readFileSync(paths.statCache);
  const manifest = readFileSync(paths.lastManifest);
  const sums: number[] = [];
  for (let r = 0; r < 200; r++) {
    sums.push(time(() => crc32(cache) + crc32(cache) + crc32(manifest)));
  }
  console.log(
    `${src}: ${FILES} files, stat cache ${(cache.length / 1e6).toFixed(2)} MB, manifest ` +
      `${(manifest.length / 1e6).toFixed(2)} MB; medians of ${REPS}: 20 changed ` +
      `${median(twenty).toFixed(2)} ms, none ${median(none).toFixed(2)} ms; the three sums ` +
      `${median(sums).toFixed(2)} ms`,
  );
} finally {
  rmSync(base, { recursive: true, force: true });
}
