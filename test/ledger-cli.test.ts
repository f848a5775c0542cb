import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, runCli } from "./helpers/cli.ts";

interface Json {
  [k: string]: unknown;
}

describe("timewarp edit / history / revert / milestone (CLI)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  const ws = () => {
    const t = makeTempDir("tw-ledger-cli-");
    cleanups.push(t.cleanup);
    return t.dir;
  };
  const tw = (dir: string, ...args: string[]) => runCli([...args, "--json"], { cwd: dir });

  it("edits, lists, shows, reverts with a conflict and then cleanly, with one JSON document each", () => {
    const dir = ws();
    writeFileSync(join(dir, "a.txt"), "one\ntwo\nthree\n");
    writeFileSync(join(dir, "blob.in"), Buffer.from([0, 159, 146, 150, 0, 1]));

    const block = tw(dir, "edit", "block", "a.txt", "--search", "two", "--replace", "TWO");
    expect(block.status).toBe(0);
    const blockId = (block.json() as Json).snapshotId as string;
    expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("one\nTWO\nthree\n");

    const whole = tw(dir, "edit", "whole", "b.bin", "--content-file", "blob.in");
    expect(whole.status).toBe(0);
    expect((whole.json() as Json).previewDiff).toContain("GIT binary patch");

    const hist = tw(
      dir,
      "history",
      "--tool",
      "ApplyWholeFileEdit",
      "--file",
      "*.bin",
      "--limit",
      "5",
    );
    expect(hist.json()).toMatchObject({
      success: true,
      history: [{ tool: "ApplyWholeFileEdit", affectedFiles: ["b.bin"] }],
      pagination: { total: 1, hasMore: false },
    });

    const show = tw(dir, "history", "show", blockId, "--format", "git");
    expect((show.json() as { diff: string }).diff).toMatch(/^diff --git a\/a.txt b\/a.txt\n/);

    // the edited line changed since: REVERT_CONFLICT, exit 1, file untouched
    writeFileSync(join(dir, "a.txt"), "one\nTwo?\nthree\n");
    const refused = tw(dir, "revert", blockId);
    expect(refused.status).toBe(1);
    expect(refused.json()).toMatchObject({
      error: { code: "REVERT_CONFLICT", data: { conflicts: [{ path: "a.txt", hunk: 1 }] } },
    });
    expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("one\nTwo?\nthree\n");

    writeFileSync(join(dir, "a.txt"), "one\nTWO\nthree\n");
    const ok = tw(dir, "revert", blockId);
    expect(ok.status).toBe(0);
    expect((ok.json() as Json).newSnapshotId).toMatch(/^[0-9a-z]{10}$/);
    expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("one\ntwo\nthree\n");
  });

  it("milestones: create with tags, list filtered; bad input is INVALID_INPUT with exit 2", () => {
    const dir = ws();
    writeFileSync(join(dir, "a.txt"), "a\n");
    const patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+b\n";
    writeFileSync(join(dir, "p.diff"), patch);
    const applied = tw(dir, "edit", "patch", "p.diff");
    expect(applied.status).toBe(0);
    const id = (applied.json() as Json).snapshotId as string;
    const created = tw(
      dir,
      "milestone",
      "create",
      "--title",
      "T",
      "--description",
      "D",
      "--ops",
      id,
      "--tag",
      "feat",
    );
    expect(created.json()).toMatchObject({
      success: true,
      milestoneId: "milestone_001",
      summary: { totalOperations: 1, affectedFiles: ["a.txt"], linesAdded: 1, linesRemoved: 0 },
    });
    const listed = tw(dir, "milestone", "list", "--tag", "feat", "--include-diffs");
    expect(listed.json()).toMatchObject({
      milestones: [{ id: "milestone_001", combinedDiff: expect.stringContaining("+b\n") }],
    });
    const bad = tw(dir, "history", "--limit", "500");
    expect(bad.status).toBe(2);
    expect(bad.json()).toMatchObject({ error: { code: "INVALID_INPUT" } });
  });
});
