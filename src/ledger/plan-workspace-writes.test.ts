import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pathTextOf } from "../core/index.ts";
import { assertWritable, withCreatedParents } from "./plan-workspace-writes.ts";
import type { FileEdit } from "./record-operation.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tree(): string {
  const root = mkdtempSync(join(tmpdir(), "tw-writable-"));
  dirs.push(root);
  writeFileSync(join(root, "f"), "f\n");
  mkdirSync(join(root, "d"));
  writeFileSync(join(root, "d/x"), "x\n");
  return root;
}

const file = (text: string) => ({ bytes: Buffer.from(text), mode: "100644" as const });
const create = (path: string): FileEdit => ({
  oldPath: null,
  newPath: path,
  before: null,
  after: file(path),
});
const remove = (path: string): FileEdit => ({
  oldPath: path,
  newPath: null,
  before: file(path),
  after: null,
});

function check(root: string, edits: FileEdit[]): void {
  assertWritable(root, edits, withCreatedParents(root, edits, []));
}

describe("assertWritable", () => {
  it("refuses a file and a directory at one path, in the same operation or on disk", () => {
    const root = tree();
    expect(() => check(root, [create("n"), create("n/e")])).toThrow(
      expect.objectContaining({ code: "NOT_A_DIRECTORY" }),
    );
    expect(() => check(root, [create("f/inner")])).toThrow(
      expect.objectContaining({ code: "NOT_A_DIRECTORY" }),
    );
    expect(() => check(root, [create("d")])).toThrow(
      expect.objectContaining({ code: "INVALID_INPUT" }),
    );
  });

  it("sees a file whose name is not UTF-8 by its bytes", () => {
    const root = tree();
    writeFileSync(Buffer.from(`${root}/b\xff`, "latin1"), "b\n"); // the name's bytes: "b", 0xff
    const name = pathTextOf(Buffer.from([0x62, 0xff])); // the ledger's text form of those bytes
    expect(() => check(root, [create(`${name}/inner`)])).toThrow(
      expect.objectContaining({ code: "NOT_A_DIRECTORY" }),
    );
  });

  it("accepts replacing a file by a directory in one operation (deletions run first)", () => {
    const root = tree();
    expect(() => check(root, [remove("f"), create("f/inner")])).not.toThrow();
  });

  it("refuses to create anything through a symlinked parent", () => {
    const root = tree();
    symlinkSync(join(root, "d"), join(root, "link"));
    expect(() => check(root, [create("link/y")])).toThrow(
      expect.objectContaining({ code: "UNSAFE_PATH" }),
    );
  });

  it("records the parents a creation makes, shallowest first", () => {
    const root = tree();
    expect(withCreatedParents(root, [create("a/b/c.txt"), create("d/y")], [])).toEqual([
      { path: "a", action: "created" },
      { path: "a/b", action: "created" },
    ]);
  });
});
