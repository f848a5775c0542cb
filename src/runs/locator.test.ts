import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { chooseCandidate, locateDesign, scanDesigns } from "./locator.ts";

const c = (path: string) => ({
  path,
  enc_dat_path: `${path}.dat`,
  mtime: "2026-01-01T00:00:00.000Z",
  size: 1,
});

describe("chooseCandidate (pure)", () => {
  it("takes a unique result, needs --select among several, checks the range", () => {
    expect(chooseCandidate([c("/a")], undefined)).toMatchObject({
      ok: true,
      reason: "unique_scan_result",
    });
    expect(chooseCandidate([c("/a"), c("/b")], undefined)).toMatchObject({
      ok: false,
      failure: { error_type: "LOCATOR_FAIL", detail_code: "AMBIGUOUS" },
    });
    expect(chooseCandidate([c("/a"), c("/b")], 2)).toMatchObject({
      ok: true,
      reason: "user_selected",
      candidate: { path: "/b" },
    });
    expect(chooseCandidate([c("/a")], 0)).toMatchObject({
      ok: false,
      failure: { detail_code: "SELECT_OUT_OF_RANGE" },
    });
    expect(chooseCandidate([], undefined)).toMatchObject({
      ok: false,
      failure: { detail_code: "NO_CANDIDATE" },
    });
  });
});

describe("scanDesigns / locateDesign", () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  it("finds X.enc only with X.enc.dat/ beside it, skipping .skillpilot and the .dat dirs", () => {
    dir = mkdtempSync(join(tmpdir(), "tw-loc-"));
    const make = (sub: string, withDat: boolean) => {
      mkdirSync(join(dir, sub), { recursive: true });
      writeFileSync(join(dir, sub, "AAA.enc"), "restoreDesign AAA.enc.dat AAA\n");
      if (withDat) mkdirSync(join(dir, sub, "AAA.enc.dat"));
    };
    make("a", true);
    make("b", false);
    make(".skillpilot/runs/x", true);
    make("a/AAA.enc.dat/inner", true);
    expect(scanDesigns({ cwd: dir, name: "AAA" }).map((x) => x.path)).toEqual([
      join(dir, "a", "AAA.enc"),
    ]);
    expect(locateDesign({ cwd: dir, query: "./b/AAA.enc" }).failure).toMatchObject({
      error_type: "LOCATOR_FAIL",
      detail_code: "NOT_FOUND",
    });
    expect(locateDesign({ cwd: dir, query: "a/AAA.enc" }).record).toMatchObject({
      mode: "explicit_path",
      selection_reason: "direct_match",
    });
  });
});
