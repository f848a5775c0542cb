import { deflateSync, inflateSync } from "node:zlib";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { encodeBase85Lines } from "./base85.ts";
import { createGitDelta } from "./binary-delta.ts";
import type { BinaryHunk } from "./types.ts";

/** One `literal N` or `delta N` block: the data deflated and base85-encoded, ending in a blank line. */
export function formatBinaryHunk(hunk: BinaryHunk): string {
  return formatDeflated(hunk.kind, hunk.size, deflateSync(hunk.data));
}

function formatDeflated(kind: BinaryHunk["kind"], size: number, deflated: Uint8Array): string {
  return `${kind} ${size}\n${encodeBase85Lines(deflated)}\n`;
}

/**
 * Deflate never shrinks data by more than about 1032:1 (a 258-byte match in two bits), so a
 * deflated delta this many times smaller than the target beats its literal without deflating it.
 */
const DEFLATE_MAX_RATIO = 1100;

/**
 * The block that turns `from` into `to` as git writes it: a `delta` when its deflated form is
 * smaller than the deflated literal, else a `literal`. Like git, a side that is absent or empty
 * gets a literal.
 */
export function formatBinaryChange(from: Uint8Array | null, to: Uint8Array | null): string {
  const target = to ?? new Uint8Array(0);
  if (from !== null && from.length > 0 && target.length > 0) {
    const delta = createGitDelta(from, target, { maxSize: target.length });
    if (delta !== null) {
      const dz = deflateSync(delta);
      if (dz.length * DEFLATE_MAX_RATIO < target.length) {
        return formatDeflated("delta", delta.length, dz);
      }
      const lz = deflateSync(target);
      return dz.length < lz.length
        ? formatDeflated("delta", delta.length, dz)
        : formatDeflated("literal", target.length, lz);
    }
  }
  return formatDeflated("literal", target.length, deflateSync(target));
}

/** Inflate a block's data, checking git's declared size. */
export function inflateBinaryHunk(
  deflated: Uint8Array,
  opts: { kind: "literal" | "delta"; size: number; lineNo: number },
): BinaryHunk {
  let data: Buffer;
  try {
    // A declared size bounds what garbage may inflate to.
    data = inflateSync(deflated, { maxOutputLength: Math.max(opts.size, 1) + 64 });
  } catch (error) {
    throw new TimewarpError(
      ErrorCode.DIFF_PARSE_ERROR,
      `line ${opts.lineNo}: binary patch data does not inflate (${error instanceof Error ? error.message : String(error)})`,
      { data: { line: opts.lineNo }, cause: error },
    );
  }
  if (data.length !== opts.size) {
    throw new TimewarpError(
      ErrorCode.DIFF_PARSE_ERROR,
      `line ${opts.lineNo}: binary ${opts.kind} declares ${opts.size} bytes, inflates to ${data.length}`,
      { data: { line: opts.lineNo } },
    );
  }
  return {
    kind: opts.kind,
    size: opts.size,
    data: new Uint8Array(data.buffer, data.byteOffset, data.length),
  };
}

/** Why a binary block cannot apply to `base`, or the result. */
export function applyBinaryHunk(
  base: Uint8Array | null,
  hunk: BinaryHunk,
): { ok: true; result: Uint8Array } | { ok: false; reason: string } {
  if (hunk.kind === "literal") return { ok: true, result: hunk.data };
  return applyGitDelta(base ?? new Uint8Array(0), hunk.data);
}

/** git's delta format: varint source size, varint result size, then copy/insert opcodes. */
export function applyGitDelta(
  base: Uint8Array,
  delta: Uint8Array,
): { ok: true; result: Uint8Array } | { ok: false; reason: string } {
  let pos = 0;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (pos >= delta.length) return -1;
      const b = delta[pos++] ?? 0;
      value += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (!(b & 0x80)) return value;
      if (shift > 49) return -1;
    }
  };
  const srcSize = varint();
  const dstSize = varint();
  if (srcSize < 0 || dstSize < 0) return { ok: false, reason: "delta header is truncated" };
  if (srcSize !== base.length) {
    return {
      ok: false,
      reason: `delta expects a ${srcSize}-byte base, file has ${base.length} bytes`,
    };
  }
  if (dstSize > 1 << 30) return { ok: false, reason: `delta result size ${dstSize} is too large` };
  const out = new Uint8Array(dstSize);
  let o = 0;
  while (pos < delta.length) {
    const op = delta[pos++] ?? 0;
    if (op & 0x80) {
      let off = 0;
      let size = 0;
      for (let i = 0; i < 4; i++) if (op & (1 << i)) off += (delta[pos++] ?? 0) * 2 ** (8 * i);
      for (let i = 0; i < 3; i++) if (op & (0x10 << i)) size += (delta[pos++] ?? 0) << (8 * i);
      if (size === 0) size = 0x10000;
      if (pos > delta.length || off + size > base.length || o + size > dstSize) {
        return { ok: false, reason: "delta copy is out of bounds" };
      }
      out.set(base.subarray(off, off + size), o);
      o += size;
    } else if (op !== 0) {
      if (pos + op > delta.length || o + op > dstSize) {
        return { ok: false, reason: "delta insert is out of bounds" };
      }
      out.set(delta.subarray(pos, pos + op), o);
      pos += op;
      o += op;
    } else {
      return { ok: false, reason: "delta has the reserved opcode 0" };
    }
  }
  if (o !== dstSize) return { ok: false, reason: `delta produced ${o} bytes, declared ${dstSize}` };
  return { ok: true, result: out };
}
