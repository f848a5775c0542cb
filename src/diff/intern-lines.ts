/**
 * Split two byte ranges into lines and give equal lines equal integer ids, in one pass over each
 * side: every line of the old side is hashed (FNV-1a) and looked up at once in an
 * open-addressing table keyed by the hash, where the hash finds candidates and the bytes decide
 * (colliding lines probe on to their own slot). A line of the new side is first compared with
 * the old line after the one its predecessor matched (or replaced), since most lines of an
 * edited file follow their old neighbours: when the bytes are equal, it takes that line's id
 * without a hash or a probe.
 * No string, array of numbers or object is made per line.
 */

/** The lines of `buf[start, end)`: line k is `buf[starts[k], starts[k + 1])`, terminator included. */
export interface Lines {
  buf: Buffer;
  /** `count + 1` entries: the last is the end of the range. */
  starts: Int32Array;
  /** The interned id of each line: equal bytes, equal id (shared by both sides of a pair). */
  ids: Int32Array;
  count: number;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** The id table: hash and id + 1 side by side per slot (one cache line per probe). */
interface Table {
  mask: number;
  /** Slot i: hash at 2i, id + 1 at 2i + 1 (0: empty). */
  slots: Int32Array;
  ids: number;
  /** Where each id's first line (its representative) is: its bytes, and its old line or -1. */
  repStart: Int32Array;
  repEnd: Int32Array;
  repLine: Int32Array;
  /** Ids below this have their representative in `bufA`, the rest in `bufB`. */
  firstB: number;
  bufA: Buffer;
  bufB: Buffer;
}

function createTable(bufA: Buffer, bufB: Buffer): Table {
  const room = 1024;
  return {
    mask: 2 * room - 1,
    slots: new Int32Array(4 * room),
    ids: 0,
    repStart: new Int32Array(room),
    repEnd: new Int32Array(room),
    repLine: new Int32Array(room),
    firstB: 0x7fffffff,
    bufA,
    bufB,
  };
}

function grown(x: Int32Array): Int32Array {
  const y = new Int32Array(x.length * 2);
  y.set(x);
  return y;
}

/** Double the slots (past half full) and the representatives' room as needed. */
function makeRoom(t: Table): void {
  if (t.ids === t.repStart.length) {
    t.repStart = grown(t.repStart);
    t.repEnd = grown(t.repEnd);
    t.repLine = grown(t.repLine);
  }
  if (2 * (t.ids + 1) <= t.mask + 1) return;
  const mask = 2 * t.mask + 1;
  const old = t.slots;
  const slots = new Int32Array(2 * (mask + 1));
  for (let i = 0; i < old.length; i += 2) {
    const h = old[i]!;
    const v = old[i + 1]!;
    if (v === 0) continue;
    let slot = (h ^ (h >>> 16)) & mask;
    while (slots[2 * slot + 1] !== 0) slot = (slot + 1) & mask;
    slots[2 * slot] = h;
    slots[2 * slot + 1] = v;
  }
  t.slots = slots;
  t.mask = mask;
}

function sameBytes(a: Buffer, as: number, ae: number, b: Buffer, bs: number): boolean {
  for (let i = as, j = bs; i < ae; i++, j++) if (a[i] !== b[j]) return false;
  return true;
}

/**
 * The id of line `buf[s, e)` (old line `line`, or -1 for a new line), a new id when no equal
 * line was seen.
 */
function idOf(t: Table, buf: Buffer, s: number, e: number, line: number): number {
  let h = FNV_OFFSET;
  for (let i = s; i < e; i++) h = Math.imul(h ^ buf[i]!, FNV_PRIME);
  const { slots, mask } = t;
  for (let slot = (h ^ (h >>> 16)) & mask; ; slot = (slot + 1) & mask) {
    const v = slots[2 * slot + 1]!;
    if (v === 0) {
      const id = t.ids++;
      slots[2 * slot] = h;
      slots[2 * slot + 1] = id + 1;
      t.repStart[id] = s;
      t.repEnd[id] = e;
      t.repLine[id] = line;
      makeRoom(t);
      return id;
    }
    if (slots[2 * slot] !== h) continue;
    const rs = t.repStart[v - 1]!;
    const re = t.repEnd[v - 1]!;
    if (re - rs === e - s && sameBytes(v - 1 < t.firstB ? t.bufA : t.bufB, rs, re, buf, s)) {
      return v - 1;
    }
  }
}

/** Room for `n` lines, keeping what `l` holds. */
function withRoom(l: { starts: Int32Array; ids: Int32Array }, n: number): void {
  if (n < l.ids.length) return;
  const starts = new Int32Array(2 * n + 1);
  starts.set(l.starts);
  const ids = new Int32Array(2 * n);
  ids.set(l.ids);
  l.starts = starts;
  l.ids = ids;
}

/**
 * Scan `buf[start, end)` into lines, interning each as it ends. With `old` (the old side's
 * lines), a line equal to the old line after the last one matched takes its id directly.
 */
function scanSide(t: Table, buf: Buffer, start: number, end: number, old?: Lines): Lines {
  const room = ((end - start) >>> 5) + 16;
  const l = { starts: new Int32Array(room + 1), ids: new Int32Array(room) };
  let n = 0;
  let next = 0;
  for (let ls = start; ls < end; ) {
    // The newline search is native (memchr).
    const nl = buf.indexOf(10, ls);
    const e = nl === -1 || nl >= end ? end : nl + 1;
    withRoom(l, n);
    l.starts[n] = ls;
    let id: number;
    if (old === undefined) id = idOf(t, buf, ls, e, n);
    else if (
      next < old.count &&
      old.starts[next + 1]! - old.starts[next]! === e - ls &&
      sameBytes(old.buf, old.starts[next]!, old.starts[next + 1]!, buf, ls)
    ) {
      id = old.ids[next++]!;
    } else {
      id = idOf(t, buf, ls, e, -1);
      const line = t.repLine[id]!;
      // Resume after the old line it equals, or, for a line the old side lacks, after the old
      // line it likely replaced.
      next = line !== -1 ? line + 1 : next + 1;
    }
    l.ids[n++] = id;
    ls = e;
  }
  l.starts[n] = end;
  return { buf, starts: l.starts.subarray(0, n + 1), ids: l.ids.subarray(0, n), count: n };
}

/**
 * The lines of `a[aStart, aEnd)` and `b[bStart, bEnd)` with ids shared between them, and the
 * number of distinct ids.
 */
export function internLinePair(
  a: Buffer,
  aStart: number,
  aEnd: number,
  b: Buffer,
  bStart: number,
  bEnd: number,
): { a: Lines; b: Lines; ids: number } {
  const t = createTable(a, b);
  const la = scanSide(t, a, aStart, aEnd);
  t.firstB = t.ids;
  const lb = scanSide(t, b, bStart, bEnd, la);
  return { a: la, b: lb, ids: t.ids };
}
