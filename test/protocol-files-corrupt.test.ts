import { readdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliDecompressSync, gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import {
  DEFAULT_EXCLUDES,
  isTimewarpError,
  readConfig,
  workspacePaths,
  writeJsonAtomic,
} from "../src/core/index.ts";
import {
  applyWholeFileEdit,
  createMilestone,
  getMilestones,
  ledgerPaths,
  readSnapshotDiff,
} from "../src/ledger/index.ts";
import { createSnapshot, readManifest, readManifestText } from "../src/store/index.ts";
import { initialState, readStatus } from "../src/timemachine/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

function errorOf(fn: () => unknown): { code: string; file: unknown } {
  try {
    fn();
  } catch (error) {
    if (!isTimewarpError(error)) throw error;
    return { code: error.code, file: error.data?.file };
  }
  throw new Error("did not throw");
}

/**
 * Every protocol file, cut short, reads as CORRUPT_FILE naming it (CONFIG_INVALID for the
 * config): never IO_ERROR, INTERNAL, or a silent reset (issue 16, class 6).
 */
describe("a truncated protocol file is CORRUPT_FILE with its path", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("manifests (brotli and gzip), snapshot.json, state.json, config, ledger records, milestones", async () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    const root = t.dir;
    writeFileSync(join(root, "a.txt"), "a\n");
    const paths = workspacePaths(root);
    const snap = createSnapshot(root, { excludes: [...DEFAULT_EXCLUDES], maxFileBytes: 1e9 });
    const edit = await applyWholeFileEdit({ root }, { path: "a.txt", content: "b\n" });
    const operation = edit.snapshotId ?? "";
    await createMilestone({ root }, { title: "m", description: "d", snapshotIds: [operation] });
    writeJsonAtomic(paths.state, initialState(root));
    writeFileSync(paths.config, `${JSON.stringify({ schema_version: 1 })}\n`);

    const cut = (file: string, keep = 10) => truncateSync(file, keep);
    const manifest = join(snap.dir, "manifest.json.br");
    // a record of an older version: its manifest gzip-compressed
    const gz = gzipSync(brotliDecompressSync(readFileSync(manifest)));
    writeFileSync(manifest, gz.subarray(0, gz.length - 8));
    for (const read of [() => readManifest(root, snap.id), () => readManifestText(root, snap.id)]) {
      expect(errorOf(read)).toEqual({ code: "CORRUPT_FILE", file: manifest });
    }
    cut(manifest);
    for (const read of [() => readManifest(root, snap.id), () => readManifestText(root, snap.id)]) {
      expect(errorOf(read)).toEqual({ code: "CORRUPT_FILE", file: manifest });
    }
    const record = join(snap.dir, "snapshot.json");
    cut(record);
    expect(errorOf(() => readManifest(root, snap.id))).toEqual({
      code: "CORRUPT_FILE",
      file: record,
    });
    cut(paths.state);
    expect(errorOf(() => readStatus(root))).toEqual({ code: "CORRUPT_FILE", file: paths.state });
    cut(paths.config, 5);
    expect(errorOf(() => readConfig(paths.config))).toEqual({
      code: "CONFIG_INVALID",
      file: paths.config,
    });
    const milestone = join(ledgerPaths(root).milestones, "milestone_001.json");
    cut(milestone);
    expect(errorOf(() => getMilestones({ root }))).toEqual({
      code: "CORRUPT_FILE",
      file: milestone,
    });
    const records = ledgerPaths(root).snapshots;
    const name = readdirSync(records, { recursive: true, encoding: "utf8" }).find((n) =>
      n.endsWith(`_${operation}.json`),
    );
    const opFile = join(records, name ?? "");
    cut(opFile);
    expect(errorOf(() => readSnapshotDiff({ root }, { snapshotId: operation }))).toEqual({
      code: "CORRUPT_FILE",
      file: opFile,
    });
  });
});
