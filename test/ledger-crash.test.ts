import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  getEditHistory,
  OperationRecordSchema,
  recordEdit,
  repairIndex,
} from "../src/ledger/index.ts";
import { bundledSource } from "./helpers/bundle.ts";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";

// node itself, not a launcher: SIGKILL must hit the process that writes. The children's scripts
// are bundled once (a start through tsx's loader took seconds on a loaded machine).

/** A child that records edits in a loop until killed; prints one line per recorded edit. */
const WRITER = `
import { recordEdit } from ${JSON.stringify(join(REPO_ROOT, "src/ledger/index.ts"))};
const root = process.argv[2];
let i = 0;
for (;;) {
  const before = "x".repeat(20000) + "\\n" + i + "\\n";
  const after = "x".repeat(20000) + "\\n" + (i + 1) + "\\n";
  const r = await recordEdit({ root, file: "f" + (i % 3) + ".txt", before, after, tool: "Edit" });
  process.stdout.write(r.snapshotId + "\\n");
  i++;
}
`;

/** A child that records COUNT edits of its own file and exits. */
const COUNTED = `
import { recordEdit } from ${JSON.stringify(join(REPO_ROOT, "src/ledger/index.ts"))};
const [root, name, count] = process.argv.slice(2);
for (let i = 0; i < Number(count); i++) {
  await recordEdit({ root, file: name + ".txt", before: name + i, after: name + (i + 1), tool: "Edit" });
}
`;

describe("kill -9 while recording", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("never leaves a half-written record or index line; the next writer carries on", async () => {
    const tmp = makeTempDir("tw-ledger-kill-");
    cleanups.push(tmp.cleanup);
    const script = bundledSource(WRITER);
    const root = join(tmp.dir, "ws");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(root);
    for (let round = 0; round < 4; round++) {
      const child = spawn(process.execPath, [script, root], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      await new Promise<void>((resolve) => {
        let seen = 0;
        child.stdout.on("data", (d: Buffer) => {
          seen += d.toString().split("\n").filter(Boolean).length;
          // kill at a different moment each round, mid-loop
          if (seen >= 3 + round * 2) {
            child.kill("SIGKILL");
          }
        });
        child.on("exit", () => resolve());
      });
      // Every index line has a complete record; every record parses.
      const history = getEditHistory({ root }, { limit: 100 });
      for (const h of history.history) expect(h.recordPresent).toBeUndefined();
      const snapDir = join(root, ".timewarp/history/snapshots");
      const files = readdirSync(snapDir, { recursive: true })
        .map(String)
        .filter((f) => f.endsWith(".json") && !f.includes(".tw-tmp-"));
      for (const f of files) {
        expect(
          OperationRecordSchema.safeParse(JSON.parse(readFileSync(join(snapDir, f), "utf8")))
            .success,
        ).toBe(true);
      }
      // at most the one record being indexed when the kill landed lacks its line
      expect(files.length - history.pagination.total).toBeGreaterThanOrEqual(0);
      expect(files.length - history.pagination.total).toBeLessThanOrEqual(1);
      // the dead writer's lock does not block the next one
      const next = await recordEdit({
        root,
        file: "g.txt",
        before: `${round}`,
        after: `${round}!`,
        tool: "Edit",
      });
      expect(next.snapshotId).not.toBeNull();
    }
    const repaired = await repairIndex({ root });
    expect(repaired.dropped).toEqual([]);
    const files = readdirSync(join(root, ".timewarp/history/snapshots"), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".json") && !f.includes(".tw-tmp-"));
    expect(getEditHistory({ root }).pagination.total).toBe(files.length);
  }, 60_000);

  it("two processes recording at once lose nothing (the ledger lock serializes them)", async () => {
    const tmp = makeTempDir("tw-ledger-two-");
    cleanups.push(tmp.cleanup);
    const script = bundledSource(COUNTED);
    const root = join(tmp.dir, "ws");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(root);
    const run = (name: string) =>
      new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, [script, root, name, "15"], {
          stdio: ["ignore", "ignore", "inherit"],
        });
        child.on("exit", (code) => resolve(code));
      });
    expect(await Promise.all([run("a"), run("b")])).toEqual([0, 0]);
    const h = getEditHistory({ root }, { limit: 100 });
    expect(h.pagination.total).toBe(30);
    expect(h.history.filter((x) => x.affectedFiles[0] === "a.txt")).toHaveLength(15);
    expect((await repairIndex({ root })).adopted).toEqual([]);
  }, 60_000);
});
