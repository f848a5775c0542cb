/**
 * git's binary delta (the `delta N` block of a `GIT binary patch`, the same opcodes as a pack's
 * deltas): the source and target sizes as little-endian 7-bit varints, then copy ops
 * (`0x80 | flags`, up to 4 offset bytes and 3 size bytes, each present only when non-zero) and
 * insert ops (a count of 1–127, then that many literal bytes).
 *
 * Matches are found as git's diff-delta finds them, in outline: the source is indexed by a hash
 * of each aligned 16-byte block; a rolling hash of the target's 16-byte window looks them up;
 * a hit is checked, extended forward and back over the pending literal bytes, and copied.
 */

const WINDOW = 16;
/** The largest size three size bytes can say; git's applier reads all three. */
const MAX_COPY = 0xffffff;
/** Candidates checked per lookup: a source full of one repeated block cannot make a lookup slow. */
const MAX_CANDIDATES = 64;
const MAX_INSERT = 127;
/** An odd multiplier for the window hash (arithmetic mod 2^32 keeps it rolling exactly). */
const BASE = 0x01000193;
const BASE_TOP = (() => {
  let p = 1;
  for (let k = 1; k < WINDOW; k++) p = Math.imul(p, BASE);
  return p;
})();

interface SourceIndex {
  /** Per bucket: 1 + the first block in it, or 0 when empty. */
  heads: Int32Array;
  /** Per block: 1 + the next block in its bucket, or 0. */
  next: Int32Array;
  shift: number;
}

function windowHash(buf: Uint8Array, at: number): number {
  let h = 0;
  for (let k = 0; k < WINDOW; k++) h = (Math.imul(h, BASE) + (buf[at + k] as number)) | 0;
  return h;
}

function bucketOf(hash: number, shift: number): number {
  return Math.imul(hash, 0x9e3779b1) >>> shift;
}

function indexSource(src: Uint8Array): SourceIndex {
  const blocks = Math.floor(src.length / WINDOW);
  let bits = 4;
  while (1 << bits < blocks && bits < 24) bits++;
  const heads = new Int32Array(1 << bits);
  const next = new Int32Array(Math.max(blocks, 1));
  const shift = 32 - bits;
  let prev: number | undefined;
  // Walk backwards so that each bucket lists its earliest block first.
  for (let b = blocks - 1; b >= 0; b--) {
    const h = windowHash(src, b * WINDOW);
    // A run of identical blocks is indexed once: a copy found there extends over the run.
    if (h === prev) continue;
    prev = h;
    const bucket = bucketOf(h, shift);
    next[b] = heads[bucket] as number;
    heads[bucket] = b + 1;
  }
  return { heads, next, shift };
}

/** How many bytes match from a[ai] and b[bi], at most `max`; long runs compare natively. */
function matchLength(a: Buffer, ai: number, b: Buffer, bi: number, max: number): number {
  let n = 0;
  while (n < max && n < 64 && a[ai + n] === b[bi + n]) n++;
  if (n < 64) return n;
  for (let step = 65536; step >= 64; step >>= 4) {
    while (
      n + step <= max &&
      a.subarray(ai + n, ai + n + step).equals(b.subarray(bi + n, bi + n + step))
    ) {
      n += step;
    }
  }
  while (n < max && a[ai + n] === b[bi + n]) n++;
  return n;
}

/** A growable byte buffer for the delta being written. */
class DeltaWriter {
  buf = Buffer.allocUnsafe(1024);
  length = 0;
  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }
  varint(value: number): void {
    this.room(8);
    let v = value;
    while (v >= 0x80) {
      this.buf[this.length++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.length++] = v;
  }
  insert(data: Buffer, start: number, end: number): void {
    for (let p = start; p < end; p += MAX_INSERT) {
      const n = Math.min(MAX_INSERT, end - p);
      this.room(n + 1);
      this.buf[this.length++] = n;
      this.length += data.copy(this.buf, this.length, p, p + n);
    }
  }
  copy(offset: number, size: number): void {
    this.room(8);
    const at = this.length++;
    let op = 0x80;
    for (let i = 0; i < 4; i++) {
      const byte = Math.floor(offset / 2 ** (8 * i)) & 0xff;
      if (byte !== 0) {
        op |= 1 << i;
        this.buf[this.length++] = byte;
      }
    }
    for (let i = 0; i < 3; i++) {
      const byte = (size >>> (8 * i)) & 0xff;
      if (byte !== 0) {
        op |= 0x10 << i;
        this.buf[this.length++] = byte;
      }
    }
    this.buf[at] = op;
  }
}

/** The longest checked match for the target window at `t`, trying `hint` (where the last copy ended) first. */
function bestMatch(
  index: SourceIndex,
  src: Buffer,
  tgt: Buffer,
  at: { t: number; hash: number; hint: number },
): { src: number; length: number } {
  let best = { src: 0, length: 0 };
  const limit = (s: number) => Math.min(src.length - s, tgt.length - at.t, MAX_COPY);
  if (at.hint > 0 && at.hint < src.length) {
    const n = matchLength(src, at.hint, tgt, at.t, limit(at.hint));
    if (n >= WINDOW) best = { src: at.hint, length: n };
  }
  let entry = index.heads[bucketOf(at.hash, index.shift)] as number;
  for (let k = 0; entry !== 0 && k < MAX_CANDIDATES; k++) {
    const s = (entry - 1) * WINDOW;
    entry = index.next[entry - 1] as number;
    const max = limit(s);
    if (max <= best.length) continue;
    const n = matchLength(src, s, tgt, at.t, max);
    if (n > best.length) best = { src: s, length: n };
    if (n === max) break;
  }
  return best;
}

/**
 * The git delta that turns `source` into `target`, or null once it would exceed `maxSize`
 * bytes (the caller then writes a literal). Either side may be empty.
 */
export function createGitDelta(
  source: Uint8Array,
  target: Uint8Array,
  opts: { maxSize?: number } = {},
): Uint8Array | null {
  const src = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  const tgt = Buffer.from(target.buffer, target.byteOffset, target.byteLength);
  const maxSize = opts.maxSize ?? Number.POSITIVE_INFINITY;
  const out = new DeltaWriter();
  out.varint(src.length);
  out.varint(tgt.length);
  const index = indexSource(src);
  let t = 0;
  let pending = 0;
  let hint = 0;
  let hash = tgt.length >= WINDOW ? windowHash(tgt, 0) : 0;
  while (t + WINDOW <= tgt.length) {
    const m = bestMatch(index, src, tgt, { t, hash, hint });
    if (m.length < WINDOW) {
      if (t + WINDOW < tgt.length) {
        const drop = Math.imul(tgt[t] as number, BASE_TOP);
        hash = (Math.imul((hash - drop) | 0, BASE) + (tgt[t + WINDOW] as number)) | 0;
      }
      t++;
      continue;
    }
    let s = m.src;
    let start = t;
    let length = m.length;
    while (start > pending && s > 0 && length < MAX_COPY && src[s - 1] === tgt[start - 1]) {
      s--;
      start--;
      length++;
    }
    out.insert(tgt, pending, start);
    out.copy(s, length);
    if (out.length > maxSize) return null;
    t = start + length;
    pending = t;
    hint = s + length;
    if (t + WINDOW <= tgt.length) hash = windowHash(tgt, t);
  }
  out.insert(tgt, pending, tgt.length);
  if (out.length > maxSize) return null;
  return new Uint8Array(out.buf.buffer, out.buf.byteOffset, out.length);
}
