import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundledSource } from "../../test/helpers/bundle.ts";
import { REPO_ROOT } from "../../test/helpers/cli.ts";
import { tempNodeStores } from "../../test/helpers/manifest-trees.ts";
import { gitBlobId } from "../core/index.ts";
import { NODE_INDEX_FILE, nodeIndexEncodes, readNodeIndex } from "./manifest-node-index.ts";
import { createNodeStore, forgetNodeTexts } from "./manifest-nodes.ts";

const { nodeDir } = tempNodeStores("tw-node-index-");

/** The index is written anew once 16 packs lie outside it. */
const PACKS = 16;
const PER_PACK = 30;
const nodeText = (i: number) =>
  Buffer.from(`{"path":"d${i % 7}/n-${i}.ts","type":"file","mode":420,"size":${i}}`);

/** Write PACKS packs of PER_PACK nodes each, one flush per pack, as that many snapshots do. */
const WRITER = `
import { createNodeStore } from ${JSON.stringify(join(REPO_ROOT, "src/store/manifest-nodes.ts"))};
import { gitBlobId } from ${JSON.stringify(join(REPO_ROOT, "src/core/index.ts"))};
const [dir, packs, perPack] = process.argv.slice(2).map((a, i) => (i === 0 ? a : Number(a)));
const nodes = createNodeStore(dir);
for (let p = 0; p < packs; p++) {
  for (let k = 0; k < perPack; k++) {
    const i = p * perPack + k;
    const text = Buffer.from(\`{"path":"d\${i % 7}/n-\${i}.ts","type":"file","mode":420,"size":\${i}}\`);
    nodes.write(gitBlobId(text), text);
  }
  nodes.flush();
}
console.log("done");
`;

function runWriter(dir: string, packs: number, crashAt?: string) {
  // (bundled once: a start through tsx's loader took seconds on a loaded machine)
  return spawnSync(
    process.execPath,
    [bundledSource(WRITER), dir, String(packs), String(PER_PACK)],
    {
      cwd: REPO_ROOT,
      encoding: "utf8",
      env: { ...process.env, TIMEWARP_CRASH_AT: crashAt ?? "" },
    },
  );
}

/** Every pack's header made unreadable (its magic): only the index can still find its nodes. */
function spoilPackHeaders(dir: string): void {
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".twn"))) {
    const bytes = readFileSync(join(dir, name));
    bytes.write("XXXX", 0, "latin1");
    rmSync(join(dir, name));
    writeFileSync(join(dir, name), bytes);
  }
}

describe("the merged index of the node packs", () => {
  it("finds the nodes of every pack it covers by itself, each checked against its id", () => {
    const dir = nodeDir();
    const run = runWriter(dir, PACKS);
    expect(run.stdout.trim(), run.stderr).toBe("done");
    const packs = readdirSync(dir).filter((n) => n.endsWith(".twn"));
    expect(packs.length).toBe(PACKS);
    const index = readNodeIndex(dir, new Set(packs.map((n) => join(dir, n))));
    expect(index?.nodes).toBe(PACKS * PER_PACK);
    spoilPackHeaders(dir);
    // A store this process has not opened yet (another spelling of the same folder): it
    // lists the packs, reads the index and no header.
    const fresh = createNodeStore(join(dir, "..", "manifests", "."));
    forgetNodeTexts();
    for (let i = 0; i < PACKS * PER_PACK; i++) {
      const text = nodeText(i);
      expect(fresh.read(gitBlobId(text)).equals(text)).toBe(true);
    }
    // a pack it covers gone (a gc elsewhere): the index is not used, the rest is read by header
    rmSync(join(dir, packs[0] as string));
    expect(readNodeIndex(dir, new Set(readdirSync(dir).map((n) => join(dir, n))))).toBeNull();
  }, 60_000);

  it("a writer killed while writing it leaves the packs whole and every node readable", () => {
    const dir = nodeDir();
    const run = runWriter(dir, PACKS + 2, "nodes:index-written:1");
    expect(run.signal, run.stderr).toBe("SIGKILL");
    expect(existsSync(join(dir, NODE_INDEX_FILE))).toBe(false);
    const store = createNodeStore(join(dir, "..", "manifests", "."));
    // the temp file is a dead writer's, for gc to remove
    expect(store.listAll().temps.length).toBe(1);
    expect(store.listAll().ids.length).toBe(PACKS * PER_PACK); // killed at the 16th pack's flush
    forgetNodeTexts();
    for (let i = 0; i < PACKS * PER_PACK; i++) {
      const text = nodeText(i);
      expect(store.read(gitBlobId(text)).equals(text)).toBe(true);
    }
    // the next flush with enough packs outside an index writes it
    const more = nodeText(100_000);
    store.write(gitBlobId(more), more);
    store.flush();
    expect(readNodeIndex(dir, new Set(readdirSync(dir).map((n) => join(dir, n))))?.nodes).toBe(
      PACKS * PER_PACK + 1,
    );
    // gc: one new pack, and the index (naming packs now gone) removed
    const live = [
      { id: gitBlobId(nodeText(1)), base: null },
      { id: gitBlobId(more), base: null },
    ];
    expect(store.keepOnly(live)).toBe(PACKS * PER_PACK - 1);
    expect(existsSync(join(dir, NODE_INDEX_FILE))).toBe(false);
    forgetNodeTexts();
    expect(store.read(gitBlobId(more)).equals(more)).toBe(true);
  }, 60_000);

  it("keeps a gc pack's delta bases, so a node read through the index is made from its base", () => {
    const dir = nodeDir();
    const store = createNodeStore(dir);
    const lines = Array.from({ length: 40 }, (_, i) => nodeText(i).toString());
    const newer = Buffer.from(lines.join(",\n"));
    lines[20] = nodeText(999).toString();
    const older = Buffer.from(lines.join(",\n"));
    for (const text of [newer, older]) {
      store.write(gitBlobId(text), text);
      store.flush(); // two snapshots: two packs, which gc folds into one
    }
    // gc's layout: the older version as a delta against the newer one
    store.keepOnly([
      { id: gitBlobId(newer), base: null },
      { id: gitBlobId(older), base: gitBlobId(newer) },
    ]);
    // 2,048 nodes outside the index make the next flush write it, gc's pack included
    for (let i = 10_000; i < 10_000 + 2048; i++) store.write(gitBlobId(nodeText(i)), nodeText(i));
    store.flush();
    const index = readNodeIndex(dir, new Set(readdirSync(dir).map((n) => join(dir, n))));
    expect(index?.nodes).toBe(2 + 2048);
    const slot = index?.find(gitBlobId(older));
    expect(slot?.base).toBe(gitBlobId(newer));
    expect(slot?.length).toBeLessThan(older.length / 2);
    expect(index?.find(gitBlobId(newer))?.base).toBeNull();
    forgetNodeTexts();
    expect(store.read(gitBlobId(older)).equals(older)).toBe(true);
    expect(store.readMany([gitBlobId(newer), gitBlobId(older)])[1]?.equals(older)).toBe(true);
    // 2,048 more: the next index is the old one merged with them, the base numbered anew
    const whole = nodeIndexEncodes.whole;
    for (let i = 20_000; i < 20_000 + 2048; i++) store.write(gitBlobId(nodeText(i)), nodeText(i));
    store.flush();
    expect(nodeIndexEncodes.whole).toBe(whole);
    const merged = readNodeIndex(dir, new Set(readdirSync(dir).map((n) => join(dir, n))));
    expect(merged?.nodes).toBe(2 + 2 * 2048);
    expect(merged?.find(gitBlobId(older))?.base).toBe(gitBlobId(newer));
    expect(merged?.find(gitBlobId(nodeText(20_000)))).toBeDefined();
    spoilPackHeaders(dir);
    forgetNodeTexts();
    const fresh = createNodeStore(join(dir, "..", "manifests", "."));
    expect(fresh.read(gitBlobId(older)).equals(older)).toBe(true);
    for (const i of [10_000, 12_047, 20_000, 22_047]) {
      expect(fresh.read(gitBlobId(nodeText(i))).equals(nodeText(i))).toBe(true);
    }
  });

  it("writes the next index by merging the packs outside it into it, not anew", () => {
    const dir = nodeDir();
    expect(runWriter(dir, PACKS).stdout.trim()).toBe("done");
    const whole = nodeIndexEncodes.whole;
    const store = createNodeStore(dir);
    // 16 more snapshots' packs, one of them holding again a node the index covers
    for (let p = PACKS; p < 2 * PACKS; p++) {
      for (let k = 0; k < PER_PACK; k++) {
        const text = nodeText(p === PACKS && k === 0 ? 5 : p * PER_PACK + k);
        store.write(gitBlobId(text), text);
      }
      store.flush();
    }
    expect(nodeIndexEncodes.whole).toBe(whole);
    const packs = readdirSync(dir).filter((n) => n.endsWith(".twn"));
    expect(packs.length).toBe(2 * PACKS);
    const index = readNodeIndex(dir, new Set(packs.map((n) => join(dir, n))));
    expect(index?.nodes).toBe(2 * PACKS * PER_PACK - 1);
    expect([...(index?.entries() ?? [])].map(([id]) => id)).toEqual(
      [...(index?.entries() ?? [])].map(([id]) => id).sort(),
    );
    spoilPackHeaders(dir);
    const fresh = createNodeStore(join(dir, "..", "manifests", "."));
    forgetNodeTexts();
    for (let i = 0; i < 2 * PACKS * PER_PACK; i++) {
      if (i === PACKS * PER_PACK) continue; // written as node 5 again
      const text = nodeText(i);
      expect(fresh.read(gitBlobId(text)).equals(text)).toBe(true);
    }
  }, 60_000);
});
