import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";

describe("the library example of the README (examples/library-usage.ts)", () => {
  it("snapshots, edits, travels, returns and reverts through the public namespaces", () => {
    const tmp = makeTempDir();
    try {
      const r = spawnSync(
        join(REPO_ROOT, "node_modules", ".bin", "tsx"),
        [join(REPO_ROOT, "examples", "library-usage.ts"), tmp.dir],
        {
          encoding: "utf8",
          timeout: 60_000,
        },
      );
      expect(r.stderr).not.toMatch(/Error/);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^snapshot s_\d{8}_\d{6}_[0-9a-z]{6}: 5 files/m);
      expect(r.stdout).toContain('+    .normalize("NFKD")');
      expect(r.stdout).toMatch(/in the past \(1 file\(s\) rewritten\); fix present: false/);
      expect(r.stdout).toMatch(/back in the present \(1 file\(s\) rewritten\); fix present: true/);
      expect(r.stdout).toMatch(/reverted: true; fix present: false/);
    } finally {
      tmp.cleanup();
    }
  });
});
