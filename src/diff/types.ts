/** One `@@ -a,b +c,d @@` block of a text diff. */
export interface Hunk {
  /** 1-based first old line; for an empty old range, the line after which the new lines go. */
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** The `@@ … @@` line exactly as written (section heading included). */
  header: string;
  /** The function/section heading git prints after the second `@@`, without the leading space. */
  section: string;
  /**
   * Body lines, each starting with `' '`, `'-'` or `'+'`, without the line terminator; `\r` of a
   * CRLF file stays part of the line. `\ No newline at end of file` markers are not in here:
   * see `noNewlineOld` / `noNewlineNew`.
   */
  lines: string[];
  /** The last old-side line of this hunk is the file's last line and has no newline. */
  noNewlineOld?: boolean;
  /** The last new-side line of this hunk is the file's last line and has no newline. */
  noNewlineNew?: boolean;
}

/** One `literal` or `delta` block of a `GIT binary patch`, already inflated. */
export interface BinaryHunk {
  kind: "literal" | "delta";
  /** The size git declared (inflated size of the literal or delta data). */
  size: number;
  /** The inflated data: the whole new content (literal) or git delta opcodes (delta). */
  data: Uint8Array;
}

/** One file's change: the unit everything in `src/diff` works with. */
export interface FilePatch {
  /** Path without its `a/` prefix; null for a create (`/dev/null`). Lossy (U+FFFD) if the name is not UTF-8. */
  oldPath: string | null;
  /** Path without its `b/` prefix; null for a delete. */
  newPath: string | null;
  /**
   * The exact bytes of `oldPath` (git's C-quoting decoded), for names that are not UTF-8. Always
   * set by parsePatch; when absent, the UTF-8 encoding of `oldPath` is meant.
   */
  oldPathBytes?: Uint8Array | null;
  newPathBytes?: Uint8Array | null;
  /** "100644" | "100755" | "120000" | … as written. */
  oldMode?: string;
  newMode?: string;
  /** From the `index` line; full (40 hex) or abbreviated. */
  oldOid?: string;
  newOid?: string;
  isRename?: boolean;
  isCopy?: boolean;
  /**
   * Set on the reverse of a copy: applying it folds `oldPath` (the copy) back into `newPath`
   * (its source, whose content the hunks must reproduce) and removes `oldPath`. It is written as
   * a rename, which is what it does to a tree.
   */
  revertsCopy?: boolean;
  /** `similarity index N%` (or 100 - `dissimilarity index`). */
  similarity?: number;
  /** Content is binary. `binary` holds the `GIT binary patch` data when the diff carried it. */
  isBinary?: boolean;
  binary?: { forward: BinaryHunk; reverse?: BinaryHunk };
  hunks: Hunk[];
  /** Mirrors of the last hunk's markers: the old/new file ends without a newline. */
  noNewlineOld?: boolean;
  noNewlineNew?: boolean;
  /** The diff had a `diff --git` header (false: a plain unified diff). Absent means true. */
  isGit?: boolean;
  /** The header lines (from `diff --git` or `---` up to the first hunk), as written. */
  headerLines: string[];
  /** This file's diff text exactly as written: the record. */
  text: string;
  /**
   * How `text` maps to bytes. "utf8" normally; "latin1" when parsePatch got bytes that are not
   * valid UTF-8 (each char is one byte), so non-UTF-8 content survives.
   */
  encoding?: "utf8" | "latin1";
}

/** One hunk that does not apply. */
export interface ApplyConflict {
  /** 1-based hunk number; 0 for a whole-file condition (existence, blob id, binary). */
  hunk: number;
  header: string;
  reason: string;
  /** 1-based line in the pre-image where the record says the hunk goes (0 if not line-based). */
  expectedAt: number;
}

export interface ApplyOptions {
  /** Drop up to this many context lines from each end of a hunk when it does not match. Default 0. */
  fuzz?: number;
  /** Search for a unique matching position elsewhere when the recorded one does not match. Default false. */
  allowOffset?: boolean;
  /** Check the pre-image against the `index` line's old blob id. Default true. */
  checkOid?: boolean;
}

export type CheckResult =
  | { ok: true; result: Uint8Array | null }
  | { ok: false; conflicts: ApplyConflict[] };

export interface CreateFilePatchOptions {
  /** Null for a create. A Uint8Array keeps a non-UTF-8 name byte-exact. */
  oldPath: string | Uint8Array | null;
  /** Null for a delete. Different from `oldPath`: a rename. */
  newPath: string | Uint8Array | null;
  before: Uint8Array | null;
  after: Uint8Array | null;
  /** Default "100644" for a side that exists. */
  oldMode?: string;
  newMode?: string;
  /** Context lines. Default 3. */
  context?: number;
  /**
   * Work the line diff may do (steps, see `work-budget.ts`), past which the changed region
   * becomes one hunk. A count, never time: the same input always gives the same patch.
   * Default: 10,000,000 + 1,000 per line of both sides (real code stays far below it).
   */
  maxWork?: number;
}

export type PatchFormat = "unified" | "context" | "git";
