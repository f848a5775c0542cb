import { describe, expect, it } from "vitest";
import { ErrorCode, isTimewarpError } from "../core/index.ts";
import { applyFilePatch, checkFilePatch } from "./apply-file-patch.ts";
import { createFilePatch } from "./create-file-patch.ts";
import { parsePatch } from "./parse-patch.ts";
import { reverseFilePatch } from "./reverse-file-patch.ts";
import type { FilePatch } from "./types.ts";

const enc = (s: string) => Buffer.from(s, "utf8");
const dec = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString("utf8"));
const lines = (n: number, f: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => `${f(i)}\n`).join("");

function patchOf(before: string | null, after: string | null, path = "f.txt"): FilePatch {
  const text = createFilePatch({
    oldPath: before === null ? null : path,
    newPath: after === null ? null : path,
    before: before === null ? null : enc(before),
    after: after === null ? null : enc(after),
  });
  const [p] = parsePatch(text);
  if (p === undefined) throw new Error("no patch");
  return p;
}

describe("applyFilePatch: strict by default", () => {
  const base = lines(20, (i) => `line ${i + 1}`);
  const edited = base.replace("line 10\n", "TEN\n");

  it("applies forward and reverse exactly", () => {
    const p = patchOf(base, edited);
    expect(dec(applyFilePatch(enc(base), p))).toBe(edited);
    expect(dec(applyFilePatch(enc(edited), reverseFilePatch(p)))).toBe(base);
  });

  it("refuses a reverse whose block was edited since, even with offset search and fuzz", () => {
    const p = patchOf(base, edited);
    const now = edited.replace("TEN\n", "TEN, edited again\n");
    const strict = checkFilePatch(enc(now), reverseFilePatch(p));
    expect(strict.ok).toBe(false);
    if (!strict.ok) {
      expect(strict.conflicts.map((c) => c.hunk)).toEqual([0, 1]); // blob id, then the hunk
      expect(strict.conflicts[1]).toMatchObject({
        hunk: 1,
        expectedAt: 7,
        header: "@@ -7,7 +7,7 @@ line 6", // git's function name: the nearest line above that starts with a letter
      });
      expect(strict.conflicts[1]?.reason).toContain('line 10 differs: expected "TEN\\n"');
    }
    const loose = checkFilePatch(enc(now), reverseFilePatch(p), {
      checkOid: false,
      allowOffset: true,
      fuzz: 2,
    });
    expect(loose.ok).toBe(false);
  });

  it("refuses a hunk whose lines occur twice when the recorded place moved, rather than guess", () => {
    const block = "a\nb\nc\nd\ne\nf\ng\n";
    const before = `${block}${lines(10, (i) => `mid ${i}`)}${block}`;
    const after = `${block}${lines(10, (i) => `mid ${i}`)}${block.replace("d\n", "D\n")}`;
    const rev = reverseFilePatch(patchOf(before, after));
    // Since then: both copies read "D", and three lines were added at the top.
    const now = `x\ny\nz\n${after.replace("d\n", "D\n")}`;
    const strict = checkFilePatch(enc(now), rev, { checkOid: false });
    expect(strict.ok).toBe(false);
    const offset = checkFilePatch(enc(now), rev, { checkOid: false, allowOffset: true });
    expect(offset.ok).toBe(false);
    if (!offset.ok) expect(offset.conflicts[0]?.reason).toContain("more than once");
    // With one copy only, offset search finds the single place and applies there.
    const single = `x\ny\nz\n${after}`;
    const moved = checkFilePatch(enc(single), rev, { checkOid: false, allowOffset: true });
    expect(moved.ok && dec(moved.result)).toBe(`x\ny\nz\n${before}`);
    expect(checkFilePatch(enc(single), rev, { checkOid: false }).ok).toBe(false);
  });

  it("refuses a create onto an existing file and a change to an absent one", () => {
    const create = patchOf(null, "new\n");
    const r = checkFilePatch(enc("already here\n"), create);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.conflicts[0]?.reason).toContain("exists");
    expect(checkFilePatch(null, patchOf("a\n", "b\n")).ok).toBe(false);
    expect(dec(applyFilePatch(null, create))).toBe("new\n");
  });

  it("refuses a delete that would leave content behind", () => {
    const del = patchOf("a\nb\n", null);
    expect(applyFilePatch(enc("a\nb\n"), del)).toBeNull();
    const r = checkFilePatch(enc("a\nb\nc\n"), del, { checkOid: false });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.conflicts[0]?.reason).toContain("leave");
  });

  it("checks the pre-image blob id: full ids exactly, abbreviated ones as a prefix", () => {
    const p = patchOf(base, edited);
    const farEdit = base.replace("line 20\n", "line twenty\n");
    const r = checkFilePatch(enc(farEdit), p);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.conflicts[0]).toMatchObject({ hunk: 0, expectedAt: 0 });
    expect(dec(applyFilePatch(enc(farEdit), p, { checkOid: false }))).toBe(
      farEdit.replace("line 10\n", "TEN\n"),
    );
    const full = p.oldOid ?? "";
    const abbreviated = parsePatch(
      p.text.replace(`index ${full}`, `index ${full.slice(0, 7)}`),
    )[0] as FilePatch;
    expect(abbreviated.oldOid).toBe(full.slice(0, 7));
    expect(checkFilePatch(enc(base), abbreviated).ok).toBe(true);
    const wrong = parsePatch(p.text.replace(`index ${full}`, "index 1234567"))[0] as FilePatch;
    expect(checkFilePatch(enc(base), wrong).ok).toBe(false);
  });

  it("throws DIFF_APPLY_CONFLICT with data.conflicts", () => {
    const p = patchOf(base, edited);
    try {
      applyFilePatch(enc(lines(3, (i) => `other ${i}`)), p);
      expect.unreachable();
    } catch (error) {
      expect(isTimewarpError(error, ErrorCode.DIFF_APPLY_CONFLICT)).toBe(true);
      if (isTimewarpError(error)) {
        const conflicts = error.data?.conflicts;
        expect(Array.isArray(conflicts) && conflicts.length).toBe(2);
      }
    }
  });

  it("fuzz drops outer context only when asked", () => {
    const p = patchOf(base, edited);
    const ctxChanged = base.replace("line 7\n", "line seven\n");
    expect(checkFilePatch(enc(ctxChanged), p, { checkOid: false }).ok).toBe(false);
    const r = checkFilePatch(enc(ctxChanged), p, { checkOid: false, fuzz: 1 });
    expect(r.ok && dec(r.result)).toBe(ctxChanged.replace("line 10\n", "TEN\n"));
  });

  it("keeps CRLF and a missing final newline exact, and refuses a newline mismatch", () => {
    const before = "one\r\ntwo\r\nthree";
    const after = "one\r\nTWO\r\nthree\r\n";
    const p = patchOf(before, after);
    expect(p.hunks[0]?.lines).toContain("-two\r");
    expect(dec(applyFilePatch(enc(before), p))).toBe(after);
    expect(dec(applyFilePatch(enc(after), reverseFilePatch(p)))).toBe(before);
    expect(checkFilePatch(enc(`${before}\n`), p, { checkOid: false }).ok).toBe(false);
  });

  it("applies a mode-only change and a pure rename without touching content", () => {
    const text = createFilePatch({
      oldPath: "run.sh",
      newPath: "bin/run.sh",
      before: enc("x\n"),
      after: enc("x\n"),
      oldMode: "100644",
      newMode: "100755",
    });
    expect(text).toBe(
      "diff --git a/run.sh b/bin/run.sh\nold mode 100644\nnew mode 100755\nsimilarity index 100%\nrename from run.sh\nrename to bin/run.sh\n",
    );
    const [p] = parsePatch(text);
    expect(p).toMatchObject({
      oldPath: "run.sh",
      newPath: "bin/run.sh",
      isRename: true,
      oldMode: "100644",
      newMode: "100755",
    });
    expect(dec(applyFilePatch(enc("x\n"), p as FilePatch))).toBe("x\n");
  });

  it("works on a FilePatch built by hand with only the core fields", () => {
    const hunk = {
      oldStart: 1,
      oldLines: 2,
      newStart: 1,
      newLines: 2,
      header: "@@ -1,2 +1,2 @@",
      section: "",
      lines: ["-a", "+A", " b"],
    };
    const p: FilePatch = {
      oldPath: "x.txt",
      newPath: "x.txt",
      hunks: [hunk],
      headerLines: [],
      text: "",
    };
    expect(dec(applyFilePatch(enc("a\nb\n"), p))).toBe("A\nb\n");
    const r = reverseFilePatch(p);
    expect(r.text).toBe(
      "diff --git a/x.txt b/x.txt\n--- a/x.txt\n+++ b/x.txt\n@@ -1,2 +1,2 @@\n-A\n+a\n b\n",
    );
    expect(dec(applyFilePatch(enc("A\nb\n"), r))).toBe("a\nb\n");
  });
});
