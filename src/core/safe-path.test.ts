import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { isTimewarpError } from "./errors.ts";
import {
  pathBytesOf,
  pathTextOf,
  safeChmod,
  safeMkdir,
  safeRmdir,
  safeSymlink,
  safeUnlink,
  safeWriteFile,
} from "./safe-path.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A workspace `ws/` and an outside folder `outside/` side by side, with `files` in the workspace. */
function setup(files: Record<string, string> = {}): { root: string; outside: string } {
  const base = mkdtempSync(join(tmpdir(), "tw-safe-path-"));
  dirs.push(base);
  const root = join(base, "ws");
  const outside = join(base, "outside");
  mkdirSync(root);
  mkdirSync(outside);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(root, rel, ".."), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
  return { root, outside };
}

describe("core safe path", () => {
  it("refuses .., absolute, NUL, empty segments and .timewarp/ before any syscall", () => {
    const { root } = setup();
    for (const rel of ["../x", "a/../../x", "/etc/x", "a\0b", "a//b", "./a", ".timewarp/x", ""]) {
      let code: string | undefined;
      try {
        safeWriteFile(root, rel, Buffer.from("x"), { createParents: true });
      } catch (error) {
        code = isTimewarpError(error) ? error.code : String(error);
      }
      expect(code, rel).toBe("UNSAFE_PATH");
    }
  });

  it("every operation refuses a symlinked parent; chmod refuses a final symlink", () => {
    const { root, outside } = setup({ "d/f": "f" });
    writeFileSync(join(outside, "f"), "outside");
    mkdirSync(join(outside, "e"));
    symlinkSync(outside, join(root, "link"));
    symlinkSync(join(outside, "f"), join(root, "d/lf"));
    const attempts: [string, () => void][] = [
      ["write", () => safeWriteFile(root, "link/n", Buffer.from("n"))],
      [
        "write deep",
        () => safeWriteFile(root, "link/e/n", Buffer.from("n"), { createParents: true }),
      ],
      ["unlink", () => safeUnlink(root, "link/f")],
      ["mkdir", () => safeMkdir(root, "link/m")],
      ["rmdir", () => safeRmdir(root, "link/e")],
      ["chmod", () => safeChmod(root, "link/f", 0o600)],
      ["chmod final", () => safeChmod(root, "d/lf", 0o600)],
      ["symlink", () => safeSymlink(root, "link/s", "x")],
      ["bytes", () => safeWriteFile(root, Buffer.from("link/\xff", "latin1"), Buffer.from("n"))],
    ];
    for (const [what, run] of attempts) {
      let code: string | undefined;
      try {
        run();
      } catch (error) {
        code = isTimewarpError(error) ? error.code : String(error);
      }
      expect(code, what).toBe("UNSAFE_PATH");
    }
    expect(readdirSync(outside).sort()).toEqual(["e", "f"]);
    expect(readFileSync(join(outside, "f"), "utf8")).toBe("outside");
  });

  it("writes exact bytes, modes and non-UTF-8 names inside the workspace", () => {
    const { root } = setup();
    const name = Buffer.from("d/\xff\xfe.txt", "latin1");
    safeWriteFile(root, name, Buffer.from("hi"), { mode: 0o755, createParents: true });
    expect(readdirSync(join(root, "d"), { encoding: "buffer" })).toEqual([
      Buffer.from("\xff\xfe.txt", "latin1"),
    ]);
    safeSymlink(root, "d/l", Buffer.from("\xff", "latin1"));
    safeChmod(root, name, 0o600);
    safeUnlink(root, name);
    safeUnlink(root, "d/l");
    safeRmdir(root, "d");
    expect(readdirSync(root)).toEqual([]);
  });
});

describe("path text that keeps every byte", () => {
  it("round-trips any bytes, and is plain UTF-8 text when the bytes are", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        expect(pathBytesOf(pathTextOf(bytes)).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 2000, seed: 7 },
    );
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 20 }), (text) => {
        expect(pathTextOf(Buffer.from(text, "utf8"))).toBe(text);
        expect(pathBytesOf(text).equals(Buffer.from(text, "utf8"))).toBe(true);
      }),
      { numRuns: 1000, seed: 8 },
    );
  });
});
