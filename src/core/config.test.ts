import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_EXCLUDES, effectiveExcludes, readConfig } from "./config.ts";
import { ErrorCode, TimewarpError } from "./errors.ts";

describe("readConfig", () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), "tw-config-"));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("gives the defaults when the file is absent", () => {
    const config = readConfig(join(tmp(), "config.json"));
    expect(config.exclude_globs).toEqual(DEFAULT_EXCLUDES);
    expect(config.skillpilot.adapter).toBe("tclsh");
    expect(effectiveExcludes(config)).toContain(".timewarp/");
  });

  it("keeps .timewarp/ excluded even when the user replaces the list", () => {
    const file = join(tmp(), "config.json");
    writeFileSync(file, JSON.stringify({ exclude_globs: ["*.tmp"] }));
    expect(effectiveExcludes(readConfig(file))).toEqual(["*.tmp", ".timewarp/"]);
  });

  it("names the bad field", () => {
    const file = join(tmp(), "config.json");
    writeFileSync(file, JSON.stringify({ max_file_bytes: -1, skillpilot: { adapter: "vim" } }));
    try {
      readConfig(file);
      expect.unreachable();
    } catch (error) {
      const e = error as TimewarpError;
      expect(e.code).toBe(ErrorCode.CONFIG_INVALID);
      expect(e.message).toContain("max_file_bytes");
      expect(e.message).toContain("skillpilot.adapter");
      expect(e.message).toContain(file);
    }
  });

  it("rejects unknown keys (a typo is not silently ignored)", () => {
    const file = join(tmp(), "config.json");
    writeFileSync(file, JSON.stringify({ exclude_glob: ["x"] }));
    expect(() => readConfig(file)).toThrow(/exclude_glob/);
  });

  it("reports JSON syntax errors as CONFIG_INVALID", () => {
    const file = join(tmp(), "config.json");
    writeFileSync(file, "{ nope");
    expect(() => readConfig(file)).toThrow(TimewarpError);
  });
});
