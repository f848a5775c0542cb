import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { gitBlobId, isTimewarpError, workspacePaths } from "../core/index.ts";
import {
  createObjectStore,
  createSnapshot,
  fsck,
  listSnapshotsChecked,
  readManifest,
  readSnapshot,
  restoreManifest,
} from "./index.ts";
import { compressManifest, decompressManifest, manifestBytes } from "./manifest.ts";
import { isTreeRoot } from "./manifest-tree.ts";
import { MANIFEST_FILE, RECORD_FILE } from "./snapshots.ts";

const EX = [".timewarp"];

describe("record versions (issue 22: tree manifests)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0).reverse()) c();
  });
  const workspace = () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    mkdirSync(join(t.dir, "src"));
    for (let i = 0; i < 50; i++)
      writeFileSync(join(t.dir, "src", `f${i}.ts`), `export const x = ${i};\n`);
    return t.dir;
  };
  const recordFile = (root: string, id: string) =>
    join(workspacePaths(root).data, "snapshots", id, RECORD_FILE);

  it("writes version 2 with a tree root, which a timewarp that knows only version 1 refuses", () => {
    const root = workspace();
    const made = createSnapshot(root, { excludes: EX });
    const json = JSON.parse(readFileSync(recordFile(root, made.id), "utf8"));
    expect(json.schema_version).toBe(2);
    const stored = readFileSync(join(made.dir, MANIFEST_FILE));
    expect(isTreeRoot(decompressManifest(stored))).toBe(true);
    // What the record schema of timewarps before trees checked (git show main:…/snapshot-record.ts):
    // a literal 1. Their readers turn that failure into CORRUPT_FILE naming snapshot.json.
    expect(z.literal(1).safeParse(json.schema_version).success).toBe(false);
  });

  it("still reads, restores and checks a version-1 record holding the whole text", () => {
    const root = workspace();
    const made = createSnapshot(root, { excludes: EX });
    const manifest = readManifest(root, made.id);
    // Rewrite it as timewarps before trees wrote it: the whole canonical text, hashed whole.
    const text = manifestBytes(manifest);
    writeFileSync(join(made.dir, MANIFEST_FILE), compressManifest(text));
    const json = JSON.parse(readFileSync(recordFile(root, made.id), "utf8"));
    json.schema_version = 1;
    json.manifest.hash = gitBlobId(text);
    writeFileSync(recordFile(root, made.id), JSON.stringify(json));
    expect(readSnapshot(root, made.id).schema_version).toBe(1);
    expect(readManifest(root, made.id)).toEqual(manifest);
    writeFileSync(join(root, "src", "f3.ts"), "changed\n");
    const store = createObjectStore(workspacePaths(root).objects);
    restoreManifest(root, readManifest(root, made.id), { store, excludes: EX });
    expect(readFileSync(join(root, "src", "f3.ts"), "utf8")).toBe("export const x = 3;\n");
    expect(fsck(root).problems).toEqual([]);
  });

  it("refuses a record of a later version as CORRUPT_FILE naming it, and lists the others", () => {
    const root = workspace();
    const older = createSnapshot(root, { excludes: EX });
    writeFileSync(join(root, "src", "f1.ts"), "new\n");
    const newer = createSnapshot(root, { excludes: EX });
    const json = JSON.parse(readFileSync(recordFile(root, newer.id), "utf8"));
    json.schema_version = 3;
    writeFileSync(recordFile(root, newer.id), JSON.stringify(json));
    let caught: unknown;
    try {
      readSnapshot(root, newer.id);
    } catch (error) {
      caught = error;
    }
    expect(isTimewarpError(caught, "CORRUPT_FILE")).toBe(true);
    expect(String((caught as Error).message)).toContain("schema_version");
    const listed = listSnapshotsChecked(root);
    expect(listed.records.map((r) => r.snapshot_id)).toEqual([older.id]);
    expect(listed.corrupt.map((c) => [c.id, c.code])).toEqual([[newer.id, "CORRUPT_FILE"]]);
  });
});
