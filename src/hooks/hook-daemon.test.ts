import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../test/helpers/cli.ts";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { hookWorkerScript } from "./hook-daemon.ts";

const tempDir = tempDirs("tw-worker-script-");

describe("the hook worker's script", () => {
  it("is the package's bin for the bundle it ships, so the worker runs through the code cache", () => {
    // the layout the package has: bin/timewarp.cjs runs dist/bin/timewarp.cjs
    expect(hookWorkerScript(join(REPO_ROOT, "dist", "bin", "timewarp.cjs"))).toBe(
      join(REPO_ROOT, "bin", "timewarp.cjs"),
    );
  });

  it("is the bundle itself where no bin lies beside it", () => {
    const dir = tempDir();
    const bundle = join(dir, "dist", "bin", "timewarp.cjs");
    mkdirSync(join(dir, "dist", "bin"), { recursive: true });
    writeFileSync(bundle, "");
    expect(hookWorkerScript(bundle)).toBe(bundle);
    mkdirSync(join(dir, "bin"));
    writeFileSync(join(dir, "bin", "timewarp.cjs"), "");
    expect(hookWorkerScript(bundle)).toBe(join(dir, "bin", "timewarp.cjs"));
  });
});
