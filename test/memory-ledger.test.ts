import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock, createSeededRandom } from "../src/core/index.ts";
import { applyWholeFileEdit } from "../src/ledger/index.ts";
import { extractRun, guardRun } from "../src/memory/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

describe("memory events from the ledger's own operations and the workspace bus", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("ledger operations become exact edits whose rollback is `timewarp revert <op>` outside git; the bus gives the same files", async () => {
    const tmp = makeTempDir("tw-mem-ledger-");
    cleanups.push(tmp.cleanup);
    const root = tmp.dir;
    const clock = createFixedClock(new Date("2026-01-01T00:00:00Z"), 1000);
    const ledger = { root, clock, random: createSeededRandom(7) };
    writeFileSync(join(root, "README.md"), "hello\n");
    const a = await applyWholeFileEdit(ledger, {
      path: "README.md",
      content: "你好\n",
      description: "translate",
    });
    const b = await applyWholeFileEdit(ledger, {
      path: "requirements.txt",
      content: "markdown==3.5\n",
    });
    const run = join(root, ".timewarp/memory/runs/ledger-run");
    mkdirSync(run, { recursive: true });
    writeFileSync(
      join(run, "goal.json"),
      JSON.stringify({ objective: "translate README.md", whitelist: ["README.md"] }),
    );

    const fromLedger = await extractRun({ root, clock }, "ledger-run", { from: "ledger" });
    expect(fromLedger.events.map((e) => [e.where, e.op_id, e.source])).toEqual([
      ["README.md", a.snapshotId, "ledger"],
      ["requirements.txt", b.snapshotId, "ledger"],
    ]);
    expect(fromLedger.events[0]?.evidence).toContain("+你好");
    const guards = guardRun({ root, clock }, "ledger-run");
    expect(guards.records.map((r) => [r.file, r.action, r.fix_cmd])).toEqual([
      ["README.md", "ok", undefined],
      ["requirements.txt", "rollback", `timewarp revert ${b.snapshotId}`],
    ]);

    appendFileSync(
      join(root, ".timewarp/events.jsonl"),
      '{"type":"edit.applied","ts":"2026-01-01T00:00:09Z","data":{"operation_id"',
    );
    const fromBus = await extractRun({ root, clock }, "ledger-run", { from: "bus" });
    expect(fromBus.events.map((e) => [e.where, e.op_id])).toEqual([
      ["README.md", a.snapshotId],
      ["requirements.txt", b.snapshotId],
    ]);
    expect(fromBus.warnings).toHaveLength(1);
    expect(fromBus.warnings[0]).toMatch(/events\.jsonl line \d+: torn last line, skipped/);
  });
});
