import { describe, expect, it } from "vitest";
import {
  assertSafeEntryPath,
  assertSafeEntryText,
  decodeName,
  entryKey,
  fsPathOf,
} from "./entry-path.ts";

describe("entry paths", () => {
  it("accepts plain relative paths and refuses absolute, .., ., empty segments, NUL and .timewarp", () => {
    for (const ok of ["a", "a/b.txt", "..a/b", "a/..b", ".hidden/x", "x/.timewarp/y"]) {
      expect(() => assertSafeEntryPath(Buffer.from(ok), ok), ok).not.toThrow();
    }
    for (const bad of [
      "/etc/passwd",
      "../x",
      "a/../../x",
      "a/..",
      "./a",
      "a//b",
      "a/",
      "",
      "a\0b",
      ".timewarp/config.json",
      ".timewarp",
    ]) {
      expect(() => assertSafeEntryPath(Buffer.from(bad), bad), bad).toThrow(/unsafe/);
    }
  });

  it("the text check gives the byte check's verdict and reason on every shape", () => {
    const cases = [
      "a",
      "a/b.txt",
      "..a/b",
      "a/..b",
      ".hidden/x",
      "x/.timewarp/y",
      ".timewarpx/a",
      ".timewar",
      "/etc/passwd",
      "../x",
      "a/../../x",
      "a/./b",
      ".",
      "..",
      "",
      "a//b",
      "a/",
      "/",
      "a\0b",
      ".timewarp",
      ".timewarp/config.json",
      "été/…/x",
      "a/.",
      "a/..",
    ];
    const verdict = (f: () => void): string => {
      try {
        f();
        return "ok";
      } catch (error) {
        return (error as Error).message;
      }
    };
    for (const c of cases) {
      expect(
        verdict(() => assertSafeEntryText(c)),
        c,
      ).toBe(verdict(() => assertSafeEntryPath(Buffer.from(c, "utf8"), c)));
    }
  });

  it("decodes UTF-8 names exactly and flags invalid bytes (a real U+FFFD is still exact)", () => {
    expect(decodeName(Buffer.from("café.txt"))).toEqual({ text: "café.txt", exact: true });
    expect(decodeName(Buffer.from("a\uFFFDb"))).toEqual({ text: "a\uFFFDb", exact: true });
    const bad = Buffer.from([0x61, 0xff, 0x62]);
    expect(decodeName(bad).exact).toBe(false);
  });

  it("keys and file-system paths keep the exact bytes of non-UTF-8 names", () => {
    const raw = Buffer.from([0x64, 0x2f, 0xff]);
    const entry = { path: "d/\uFFFD", path_b64: raw.toString("base64") };
    expect(entryKey(entry)).not.toBe(entryKey({ path: "d/\uFFFD" }));
    const p = fsPathOf("/root", entry);
    expect(Buffer.isBuffer(p) && p.equals(Buffer.concat([Buffer.from("/root/"), raw]))).toBe(true);
    expect(fsPathOf("/root", { path: "a/b" })).toBe("/root/a/b");
  });
});
