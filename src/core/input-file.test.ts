import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { toTimewarpError } from "./errors.ts";
import { assertInputDirectory, readInputFile } from "./input-file.ts";

describe("readInputFile / assertInputDirectory", () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), "tw-input-"));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("reads a file relative to cwd; every unusable path is a coded error naming it", () => {
    const dir = tmp();
    writeFileSync(join(dir, "f.txt"), "bytes");
    mkdirSync(join(dir, "sub"));
    const read = (p: string) => readInputFile(p, { what: "--content-file", cwd: dir });
    expect(read("f.txt").toString()).toBe("bytes");
    const codeOf = (p: string) => {
      try {
        read(p);
        return "ok";
      } catch (error) {
        const tw = toTimewarpError(error);
        expect(tw.data).toMatchObject({ input: p, what: "--content-file" });
        expect(tw.message).toContain("--content-file");
        return tw.code;
      }
    };
    expect(codeOf("missing")).toBe("NOT_FOUND");
    expect(codeOf("sub")).toBe("NOT_A_FILE");
    expect(codeOf("f.txt/x")).toBe("NOT_FOUND");
    expect(codeOf("n".repeat(300))).toBe("NAME_TOO_LONG");
    expect(() => assertInputDirectory("f.txt", { what: "RUN_DIR", cwd: dir })).toThrow(
      expect.objectContaining({ code: "NOT_A_DIRECTORY" }),
    );
    expect(assertInputDirectory("sub", { what: "RUN_DIR", cwd: dir })).toBe(join(dir, "sub"));
  });

  it.runIf(process.platform !== "win32")("refuses a FIFO instead of waiting on it forever", () => {
    const dir = tmp();
    execFileSync("mkfifo", [join(dir, "pipe")]);
    expect(() => readInputFile("pipe", { what: "patch file", cwd: dir })).toThrow(
      expect.objectContaining({ code: "NOT_A_FILE" }),
    );
  });
});

describe("toTimewarpError", () => {
  it("codes a system error by its errno, and keeps a bug's stack out of the message", () => {
    let system: unknown;
    try {
      readFileSync(join(tmpdir(), "x".repeat(300)));
    } catch (error) {
      system = error;
    }
    expect(toTimewarpError(system)).toMatchObject({ code: "NAME_TOO_LONG" });
    const bug = toTimewarpError(new TypeError("x is undefined"));
    expect(bug.code).toBe("INTERNAL");
    expect(bug.message).toBe("x is undefined");
    expect(JSON.stringify(bug.toJSON())).not.toContain("    at ");
  });
});
