import { describe, expect, it } from "vitest";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { applyFilePatch } from "./apply-file-patch.ts";
import { cleanDiffTimestamps, parsePatch } from "./parse-patch.ts";

function parseErrorOf(text: string): TimewarpError {
  try {
    parsePatch(text);
  } catch (error) {
    if (error instanceof TimewarpError) return error;
    throw error;
  }
  throw new Error("expected a parse error");
}

describe("parsePatch", () => {
  it("reads a quoted second name that ends in a space (found by the diff property test)", () => {
    const text =
      'diff --git a/a "b/\\351/trail "\nsimilarity index 100%\nrename from a\nrename to "\\351/trail "\n';
    const [p] = parsePatch(text);
    expect(p?.oldPath).toBe("a");
    expect(Buffer.from(p?.newPathBytes ?? []).equals(Buffer.from("\xe9/trail ", "latin1"))).toBe(
      true,
    );
  });

  it("reads a plain unified diff without a trailing newline (the seed's record style)", () => {
    const text =
      "--- a/src/auth.ts\n+++ b/src/auth.ts\n@@ -10,0 +11,3 @@\n+export function authenticate(token: string) {\n+  return validateToken(token);\n+}";
    const [p] = parsePatch(text);
    expect(p).toMatchObject({ oldPath: "src/auth.ts", newPath: "src/auth.ts", isGit: false });
    expect(p?.hunks[0]).toMatchObject({ oldStart: 10, oldLines: 0, newStart: 11, newLines: 3 });
    expect(p?.text).toBe(text);
  });

  it("names the line when a hunk's body is shorter than its header says (the seed's own example is)", () => {
    const seed =
      "--- a/src/auth.ts\n+++ b/src/auth.ts\n@@ -10,0 +10,5 @@\n+export function authenticate(token: string) {\n+  // Implementation\n+  return validateToken(token);\n+}";
    const e = parseErrorOf(seed);
    expect(e.code).toBe(ErrorCode.DIFF_PARSE_ERROR);
    expect(e.message).toMatch(
      /^line 7: hunk "@@ -10,0 \+10,5 @@" ends early: expected 0 more old and 1 more new lines/,
    );
    expect(parseErrorOf("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n*b\n").message).toMatch(
      /^line 5: unexpected line/,
    );
    expect(parseErrorOf('diff --git "a/x b/x\n').message).toMatch(
      /^line 1: quoted name has no closing quote/,
    );
  });

  it("cleans timestamps after a tab or spaces, and leaves hunk lines alone", () => {
    const text =
      "--- a/file.txt\t2025-01-29 12:34:56\n+++ b/file.txt  2025-01-29 12:35:00.123456789 +0100\n@@ -1 +1 @@\n--- a/kept 2025-01-29 12:34:56\n++++ b/kept\n";
    const cleaned = cleanDiffTimestamps(text);
    expect(cleaned).not.toContain("12:35:00");
    expect(cleaned.split("\n").slice(0, 2)).toEqual(["--- a/file.txt", "+++ b/file.txt"]);
    expect(cleaned).toContain("--- a/kept 2025-01-29 12:34:56\n++++ b/kept");
    const [p] = parsePatch(text);
    expect(p).toMatchObject({ oldPath: "file.txt", newPath: "file.txt" });
    expect(p?.hunks[0]?.lines).toEqual(["--- a/kept 2025-01-29 12:34:56", "++++ b/kept"]);
    const ctime = parsePatch(
      "--- old/x y.c Thu Jan 29 12:34:56 2025\n+++ new/x y.c Thu Jan 29 12:35:56 2025\n@@ -1 +1 @@\n-a\n+b\n",
    );
    expect(ctime[0]?.newPath).toBe("x y.c");
  });

  it("decodes C-quoted names to their exact bytes, UTF-8 or not", () => {
    const text =
      'diff --git "a/\\303\\251 \\"q\\"\\t.txt" "b/\\351.txt"\nsimilarity index 90%\nrename from "\\303\\251 \\"q\\"\\t.txt"\nrename to "\\351.txt"\nindex 1234567..89abcde 100644\n--- "a/\\303\\251 \\"q\\"\\t.txt"\n+++ "b/\\351.txt"\n@@ -1 +1 @@\n-a\n+b\n';
    const [p] = parsePatch(text);
    expect(p?.oldPath).toBe('é "q"\t.txt');
    expect(
      Buffer.from(p?.newPathBytes ?? []).equals(Buffer.from([0xe9, 0x2e, 0x74, 0x78, 0x74])),
    ).toBe(true);
    expect(p?.newPath).toBe("\ufffd.txt");
    expect(p).toMatchObject({
      isRename: true,
      similarity: 90,
      oldMode: "100644",
      oldOid: "1234567",
    });
  });

  it("tells names with spaces apart in a header-only diff (mode change), as git does", () => {
    const [p] = parsePatch(
      "diff --git a/my file.sh b/my file.sh\nold mode 100644\nnew mode 100755\n",
    );
    expect(p).toMatchObject({
      oldPath: "my file.sh",
      newPath: "my file.sh",
      oldMode: "100644",
      newMode: "100755",
      hunks: [],
    });
    expect(applyFilePatch(Buffer.from("x"), p as NonNullable<typeof p>)).toEqual(Buffer.from("x"));
  });

  it("keeps section headings, skips text around file diffs, and keeps each file's text exact", () => {
    const one =
      "diff --git a/a.c b/a.c\nindex 1111111..2222222 100644\n--- a/a.c\n+++ b/a.c\n@@ -1,2 +1,2 @@ int main(void) {\n x\n-y\n+z\n";
    const two =
      "diff --git a/b.c b/b.c\ndeleted file mode 100755\nindex 3333333..0000000\n--- a/b.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n\\ No newline at end of file\n";
    const text = `From abc Mon Sep 17 00:00:00 2001\nSubject: x\n---\n a.c | 2 +-\n\n${one}${two}-- \n2.39.5\n`;
    const ps = parsePatch(text);
    expect(ps.map((p) => p.text)).toEqual([one, two]);
    expect(ps[0]?.hunks[0]?.section).toBe("int main(void) {");
    expect(ps[1]).toMatchObject({
      oldPath: "b.c",
      newPath: null,
      oldMode: "100755",
      noNewlineOld: true,
    });
  });

  it("reads git's binary patches (literal and delta) and 'Binary files differ'", () => {
    const p = parsePatch(
      "diff --git a/x.bin b/x.bin\nindex 0000000..1111111\nBinary files a/x.bin and b/x.bin differ\n",
    )[0];
    expect(p).toMatchObject({ isBinary: true });
    expect(p?.binary).toBeUndefined();
    expect(parseErrorOf("diff --git a/x b/x\nGIT binary patch\nliteral 5\nzzzzz\n\n").code).toBe(
      ErrorCode.DIFF_PARSE_ERROR,
    );
  });
});
