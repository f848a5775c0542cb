import { describe, expect, it } from "vitest";
import { EMPTY_BLOB_ID, gitBlobId } from "../core/index.ts";
import { applyFilePatch } from "./apply-file-patch.ts";
import { createFilePatch, createPatch } from "./create-file-patch.ts";
import { formatPatch } from "./format-patch.ts";
import { parsePatch } from "./parse-patch.ts";
import { patchStats } from "./patch-stats.ts";
import { reverseFilePatch } from "./reverse-file-patch.ts";
import type { FilePatch } from "./types.ts";

const enc = (s: string) => Buffer.from(s, "utf8");
const lines = (n: number, f: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => `${f(i)}\n`).join("");
const only = (text: string): FilePatch => {
  const ps = parsePatch(text);
  expect(ps).toHaveLength(1);
  return ps[0] as FilePatch;
};

describe("createFilePatch", () => {
  it("returns an empty string when nothing differs", () => {
    expect(
      createFilePatch({ oldPath: "a", newPath: "a", before: enc("x\n"), after: enc("x\n") }),
    ).toBe("");
    expect(createFilePatch({ oldPath: null, newPath: null, before: null, after: null })).toBe("");
  });

  it("writes creates, deletes and empty files the way git does", () => {
    const id = gitBlobId(enc("hi\n"));
    expect(
      createFilePatch({ oldPath: null, newPath: "n.txt", before: null, after: enc("hi\n") }),
    ).toBe(
      `diff --git a/n.txt b/n.txt\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..${id}\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi\n`,
    );
    expect(
      createFilePatch({ oldPath: "n.txt", newPath: null, before: enc("hi\n"), after: null }),
    ).toBe(
      `diff --git a/n.txt b/n.txt\ndeleted file mode 100644\nindex ${id}..0000000000000000000000000000000000000000\n--- a/n.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-hi\n`,
    );
    expect(
      createFilePatch({
        oldPath: null,
        newPath: "e",
        before: null,
        after: new Uint8Array(0),
        newMode: "100755",
      }),
    ).toBe(
      `diff --git a/e b/e\nnew file mode 100755\nindex 0000000000000000000000000000000000000000..${EMPTY_BLOB_ID}\n`,
    );
  });

  it("quotes names as git does and keeps non-UTF-8 name bytes", () => {
    const name = Buffer.from([0x74, 0x09, 0xe9]); // "t\t\xe9"
    const text = createFilePatch({
      oldPath: name,
      newPath: name,
      before: enc("a\n"),
      after: enc("b\n"),
    });
    expect(text.split("\n")[0]).toBe('diff --git "a/t\\t\\351" "b/t\\t\\351"');
    expect(Buffer.from(only(text).newPathBytes ?? []).equals(name)).toBe(true);
  });

  it("writes binary and non-UTF-8 content as GIT binary patch literals, both ways", () => {
    const before = Buffer.from([0, 1, 2, 3, 255]);
    const after = Buffer.from("caf\xe9\n", "latin1");
    const p = only(createFilePatch({ oldPath: "b", newPath: "b", before, after }));
    expect(p.binary?.forward.kind).toBe("literal");
    expect(p.hunks).toEqual([]);
    expect(Buffer.from(applyFilePatch(before, p) ?? []).equals(after)).toBe(true);
    expect(Buffer.from(applyFilePatch(after, reverseFilePatch(p)) ?? []).equals(before)).toBe(true);
  });

  // Its speed (jsdiff takes seconds here) is measured by `npm run bench:diff`, not asserted.
  it("finds the minimal diff for every-other-line changes", () => {
    const a = lines(10_000, (i) => `line ${i}`);
    const b = lines(10_000, (i) => (i % 2 ? `changed ${i}` : `line ${i}`));
    const p = only(createFilePatch({ oldPath: "f", newPath: "f", before: enc(a), after: enc(b) }));
    expect(patchStats(p)).toEqual({ added: 5000, removed: 5000 });
    expect(Buffer.from(applyFilePatch(enc(a), p) ?? []).toString()).toBe(b);
  });

  it("falls back to one hunk past the work budget, and the result still applies", () => {
    const a = lines(3000, (i) => `l${(i * 7919) % 3000}`);
    const b = lines(3000, (i) => `l${(i * 104729) % 3000}`);
    const p = only(
      createFilePatch({ oldPath: "f", newPath: "f", before: enc(a), after: enc(b), maxWork: 0 }),
    );
    expect(p.hunks).toHaveLength(1);
    expect(Buffer.from(applyFilePatch(enc(a), p) ?? []).toString()).toBe(b);
    const full = only(
      createFilePatch({ oldPath: "f", newPath: "f", before: enc(a), after: enc(b) }),
    );
    expect(Buffer.from(applyFilePatch(enc(a), full) ?? []).toString()).toBe(b);
  });

  it("honours the context size and merges hunks whose context would overlap", () => {
    const a = lines(30, (i) => `${i}`);
    const b = a.replace("5\n", "five\n").replace("10\n", "ten\n").replace("25\n", "twenty-five\n");
    expect(
      only(
        createFilePatch({ oldPath: "f", newPath: "f", before: enc(a), after: enc(b) }),
      ).hunks.map((h) => h.header),
    ).toEqual(["@@ -3,12 +3,12 @@", "@@ -23,7 +23,7 @@"]);
    expect(
      only(
        createFilePatch({ oldPath: "f", newPath: "f", before: enc(a), after: enc(b), context: 1 }),
      ).hunks.map((h) => h.header),
    ).toEqual(["@@ -5,3 +5,3 @@", "@@ -10,3 +10,3 @@", "@@ -25,3 +25,3 @@"]);
  });

  it("createPatch concatenates files; formatPatch renders git, unified and context", () => {
    const text = createPatch([
      { oldPath: "a", newPath: "a", before: enc("1\n2\n3\n"), after: enc("1\nTWO\n3\n") },
      { oldPath: null, newPath: "b", before: null, after: enc("new\n") },
    ]);
    const ps = parsePatch(text);
    expect(formatPatch(ps, "git")).toBe(text);
    expect(formatPatch(ps, "unified")).toBe(
      "--- a/a\n+++ b/a\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n--- /dev/null\n+++ b/b\n@@ -0,0 +1 @@\n+new\n",
    );
    expect(formatPatch(ps, "context")).toBe(
      "*** a/a\n--- b/a\n***************\n*** 1,3 ****\n  1\n! 2\n  3\n--- 1,3 ----\n  1\n! TWO\n  3\n*** /dev/null\n--- b/b\n***************\n*** 0 ****\n--- 1 ----\n+ new\n",
    );
    // A unified rendering is itself a diff we can parse and apply.
    const [u] = parsePatch(formatPatch(ps, "unified"));
    expect(Buffer.from(applyFilePatch(enc("1\n2\n3\n"), u as FilePatch) ?? []).toString()).toBe(
      "1\nTWO\n3\n",
    );
  });
});
