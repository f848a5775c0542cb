import { isUtf8 } from "node:buffer";
import { gitBlobId, pathBytesOf } from "../core/index.ts";
import { formatBinaryChange } from "./binary-patch.ts";
import { formatGitHeader, formatHunkHeader, NO_NEWLINE_MARKER } from "./format-git-patch.ts";
import { createFuncNameFinder } from "./func-name.ts";
import { internLinePair } from "./intern-lines.ts";
import { type ChangeBlock, diffLines, type LineAlgorithm } from "./line-diff.ts";
import type { CreateFilePatchOptions } from "./types.ts";

const NL = 10;

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function pathBytes(path: string | Uint8Array | null): Buffer | null {
  if (path === null) return null;
  // A name held as text may carry bytes that are not UTF-8 as escapes (core's `pathTextOf`).
  return typeof path === "string" ? pathBytesOf(path) : toBuffer(path);
}

/**
 * git's rule (a NUL in the first 8000 bytes) plus ours: content that is not valid UTF-8 cannot
 * travel inside a JS string patch byte-exact, so it goes as a binary literal too.
 */
export function isBinaryContent(bytes: Uint8Array): boolean {
  const buf = toBuffer(bytes);
  const nul = buf.indexOf(0);
  if (nul !== -1 && nul < 8000) return true;
  return !isUtf8(buf);
}

/** The object type part of a git mode: regular file, symlink or gitlink. */
function modeType(mode: string | undefined): string {
  return (mode ?? "100644").slice(0, -4);
}

/** Create one file's diff in git's format. See index.ts for the contract. */
export function createFilePatch(opts: CreateFilePatchOptions): string {
  // git cannot change a file into a symlink in one patch: it writes a delete and a create.
  if (
    opts.before !== null &&
    opts.after !== null &&
    modeType(opts.oldMode) !== modeType(opts.newMode)
  ) {
    return (
      createOneFilePatch({ ...opts, after: null, newPath: null }) +
      createOneFilePatch({ ...opts, before: null, oldPath: null })
    );
  }
  return createOneFilePatch(opts);
}

function createOneFilePatch(opts: CreateFilePatchOptions): string {
  const before = opts.before === null ? null : toBuffer(opts.before);
  const after = opts.after === null ? null : toBuffer(opts.after);
  if (before === null && after === null) return "";
  let oldPathBytes = before === null ? null : pathBytes(opts.oldPath ?? opts.newPath);
  let newPathBytes = after === null ? null : pathBytes(opts.newPath ?? opts.oldPath);
  if (oldPathBytes === null && before !== null) oldPathBytes = newPathBytes;
  if (newPathBytes === null && after !== null) newPathBytes = oldPathBytes;
  const oldMode = before === null ? undefined : (opts.oldMode ?? "100644");
  const newMode = after === null ? undefined : (opts.newMode ?? "100644");
  const isRename =
    oldPathBytes !== null && newPathBytes !== null && !oldPathBytes.equals(newPathBytes);
  const sameContent = before !== null && after !== null && before.equals(after);
  if (sameContent && !isRename && oldMode === newMode) return "";

  const oldOid = before === null ? undefined : gitBlobId(before);
  const newOid = after === null ? undefined : gitBlobId(after);
  const binary =
    (before !== null && isBinaryContent(before)) || (after !== null && isBinaryContent(after));
  const empty = Buffer.alloc(0);
  let body = "";
  let similarity: number | undefined;
  if (!sameContent && binary) {
    body = `GIT binary patch\n${formatBinaryChange(before, after)}${formatBinaryChange(after, before)}`;
  } else if (!sameContent) {
    const r = formatTextHunks(before ?? empty, after ?? empty, {
      context: opts.context ?? 3,
      maxWork: opts.maxWork,
    });
    body = r.hunks;
    if (isRename) {
      // Roughly git's measure: the share of the larger side that both sides keep.
      const kept = (before ?? empty).length - r.changedBytes;
      const total = Math.max((before ?? empty).length, (after ?? empty).length, 1);
      similarity = Math.max(0, Math.min(99, Math.floor((kept * 100) / total)));
    }
  } else {
    similarity = 100;
  }
  const header = formatGitHeader(
    {
      oldPathBytes,
      newPathBytes,
      oldMode,
      newMode,
      oldOid: sameContent ? undefined : (oldOid ?? "0000000000000000000000000000000000000000"),
      newOid: sameContent ? undefined : (newOid ?? "0000000000000000000000000000000000000000"),
      isRename,
      similarity,
    },
    body !== "" && !body.startsWith("GIT binary patch"),
  );
  return header + body;
}

/** Create a multi-file diff: the concatenation of each file's diff. */
export function createPatch(changes: readonly CreateFilePatchOptions[]): string {
  let out = "";
  for (const c of changes) out += createFilePatch(c);
  return out;
}

/** Start of the line `n` lines above the line starting at `pos`. */
function backLines(buf: Buffer, pos: number, n: number): number {
  let p = pos;
  for (let k = 0; k < n && p > 0; k++) p = p < 2 ? 0 : buf.lastIndexOf(NL, p - 2) + 1;
  return p;
}

/** End of the line `n` lines below the line starting at `pos`. */
function forwardLines(buf: Buffer, pos: number, n: number): number {
  let p = pos;
  for (let k = 0; k < n && p < buf.length; k++) {
    const i = buf.indexOf(NL, p);
    p = i === -1 ? buf.length : i + 1;
  }
  return p;
}

function countLines(buf: Buffer, end: number): number {
  let n = 0;
  let i = buf.indexOf(NL);
  while (i !== -1 && i < end) {
    n++;
    i = buf.indexOf(NL, i + 1);
  }
  return n;
}

function commonPrefix(a: Buffer, b: Buffer): number {
  const max = Math.min(a.length, b.length);
  let i = 0;
  // Native compares over blocks first; the byte loop only finishes the last block.
  for (let step = 65536; step >= 64; step >>= 4) {
    while (i + step <= max && a.subarray(i, i + step).equals(b.subarray(i, i + step))) i += step;
  }
  while (i < max && a[i] === b[i]) i++;
  return i;
}

function commonSuffix(a: Buffer, b: Buffer, max: number): number {
  let s = 0;
  for (let step = 65536; step >= 64; step >>= 4) {
    while (
      s + step <= max &&
      a
        .subarray(a.length - s - step, a.length - s)
        .equals(b.subarray(b.length - s - step, b.length - s))
    ) {
      s += step;
    }
  }
  while (s < max && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  return s;
}

/**
 * Lines of the common prefix and suffix diffed beside the changed region: git slides a group of
 * changes along equal lines (`compact.ts`) and scores the indent of its neighbours, so the
 * window must reach past where the equal bytes start, or hunks would land off git's place.
 */
const SLIDE_MARGIN = 100;

/** The `@@` line: its ranges, then git's function name when there is one. */
function hunkHead(range: string, name: Buffer): Buffer {
  if (name.length === 0) return Buffer.from(`${range}\n`);
  return Buffer.concat([Buffer.from(`${range} `), name, Buffer.from("\n")]);
}

const NO_NEWLINE_TAIL = Buffer.from(`\n${NO_NEWLINE_MARKER}\n`);

/**
 * The `@@` hunks between two texts. Only the region between the common byte prefix and suffix
 * (widened to whole lines plus context) is scanned and diffed, so one edit in a large file costs
 * little more than the two compares. Output is assembled as bytes and decoded once.
 */
export function formatTextHunks(
  a: Buffer,
  b: Buffer,
  opts: { context: number; maxWork?: number; algorithm?: LineAlgorithm },
): { hunks: string; changedBytes: number; overBudget: boolean } {
  const ctx = Math.max(0, opts.context);
  let p = commonPrefix(a, b);
  p = p === 0 ? 0 : a.lastIndexOf(NL, p - 1) + 1;
  let s = commonSuffix(a, b, Math.min(a.length, b.length) - p);
  const sa = a.length - s;
  if (s > 0 && sa > 0 && a[sa - 1] !== NL) {
    const i = a.indexOf(NL, sa);
    s = i === -1 ? 0 : a.length - (i + 1);
  }
  const ws = backLines(a, p, ctx + SLIDE_MARGIN);
  const weA = forwardLines(a, a.length - s, ctx + SLIDE_MARGIN);
  const weB = b.length - (a.length - weA);
  const lineOffset = countLines(a, ws);
  const { a: la, b: lb, ids } = internLinePair(a, ws, weA, b, ws, weB);
  const { blocks, overBudget } = diffLines(la, lb, ids, opts);

  const funcName = createFuncNameFinder(a);
  // Pass 1 plans the hunks and sizes the output; pass 2 copies bytes into one buffer.
  const plan: { head: Buffer; aStart: number; aEnd: number; first: number; last: number }[] = [];
  let size = 0;
  let changedBytes = 0;
  const lineBytes = (l: typeof la, k: number) => {
    const e = l.starts[k + 1] ?? 0;
    const n = e - (l.starts[k] ?? 0);
    return 1 + n + (l.buf[e - 1] === NL ? 0 : NO_NEWLINE_TAIL.length);
  };
  let k = 0;
  while (k < blocks.length) {
    let last = k;
    while (
      last + 1 < blocks.length &&
      (blocks[last + 1]?.aStart ?? 0) - (blocks[last]?.aEnd ?? 0) <= 2 * ctx
    )
      last++;
    const first = blocks[k] as ChangeBlock;
    const end = blocks[last] as ChangeBlock;
    const aStart = Math.max(0, first.aStart - ctx);
    const aEnd = Math.min(la.count, end.aEnd + ctx);
    const bStart = first.bStart - (first.aStart - aStart);
    const bEnd = end.bEnd + (aEnd - end.aEnd);
    const oldLines = aEnd - aStart;
    const newLines = bEnd - bStart;
    const range = formatHunkHeader({
      oldStart: lineOffset + aStart + (oldLines === 0 ? 0 : 1),
      oldLines,
      newStart: lineOffset + bStart + (newLines === 0 ? 0 : 1),
      newLines,
    });
    const head = hunkHead(range, funcName(la.starts[aStart] ?? 0));
    size += head.length;
    let pos = aStart;
    for (let j = k; j <= last; j++) {
      const blk = blocks[j] as ChangeBlock;
      for (let i = pos; i < blk.aStart; i++) size += lineBytes(la, i);
      for (let i = blk.aStart; i < blk.aEnd; i++) {
        const n = lineBytes(la, i);
        size += n;
        changedBytes += n - 1;
      }
      for (let i = blk.bStart; i < blk.bEnd; i++) size += lineBytes(lb, i);
      pos = blk.aEnd;
    }
    for (let i = pos; i < aEnd; i++) size += lineBytes(la, i);
    plan.push({ head, aStart, aEnd, first: k, last });
    k = last + 1;
  }
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  const put = (mark: number, l: typeof la, i: number) => {
    out[o++] = mark;
    const st = l.starts[i] ?? 0;
    const e = l.starts[i + 1] ?? 0;
    // A byte loop beats a native copy call for short lines, and loses to it for long ones.
    const src = l.buf;
    if (e - st < 64) for (let x = st; x < e; x++) out[o++] = src[x]!;
    else o += src.copy(out, o, st, e);
    if (l.buf[e - 1] !== NL) o += NO_NEWLINE_TAIL.copy(out, o);
  };
  for (const h of plan) {
    o += h.head.copy(out, o);
    let pos = h.aStart;
    for (let j = h.first; j <= h.last; j++) {
      const blk = blocks[j] as ChangeBlock;
      for (let i = pos; i < blk.aStart; i++) put(0x20, la, i);
      for (let i = blk.aStart; i < blk.aEnd; i++) put(0x2d, la, i);
      for (let i = blk.bStart; i < blk.bEnd; i++) put(0x2b, lb, i);
      pos = blk.aEnd;
    }
    for (let i = pos; i < h.aEnd; i++) put(0x20, la, i);
  }
  return { hunks: out.toString("utf8", 0, o), changedBytes, overBudget };
}
