import type { CachedStat } from "./stat-cache.ts";

/**
 * A stat cache's entries as a map from key to `CachedStat`: a `Map` in small caches and tests,
 * a `StatTable` where there are many. Readers use the `ReadonlyMap` part; a scan only adds and
 * an overlay removes.
 */
export type StatEntries = ReadonlyMap<string, CachedStat> & {
  set(key: string, stat: CachedStat): unknown;
  delete(key: string): boolean;
};

/** Flag of a row: removed (`delete`). */
const DEAD = 1;
/** Flag of a row: its manifest entry is kept apart as an object (a scan's `marked`). */
const MARKED = 2;

const OID_BYTES = 20;
const NO_STAT: CachedStat = { size: 0, mtimeMs: 0, ctimeMs: 0, ino: 0, mode: 0, oid: "" };

/** Code-unit order, as `Array.prototype.sort` without a comparator. */
const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The entries of a stat cache in columns (issue 22, item 5): per file its key, and its size,
 * mtime, ctime and inode in float arrays, its mode in an integer array and its content id as
 * 20 bytes, instead of an object per file with two boxed doubles and a 40-character id (~290
 * bytes per file with a scan's manifest entry and the map's slot; ~70 here, plus the key).
 * `get` and iteration make a `CachedStat` for the caller; nothing is kept of it. Keys given in
 * code-unit order (a decoded base) are found by binary search; otherwise a key index is made on
 * the first lookup by key.
 */
export class StatTable implements ReadonlyMap<string, CachedStat> {
  private keyOf: string[] = [];
  private sizes: Float64Array;
  private mtimes: Float64Array;
  private ctimes: Float64Array;
  private inos: Float64Array;
  private modes: Uint32Array;
  private oids: Buffer;
  private flags: Uint8Array;
  private live = 0;
  /** Keys were added in code-unit order (and none twice). */
  private sorted = true;
  private index: Map<string, number> | undefined;

  constructor(capacity = 64) {
    const n = Math.max(1, capacity);
    this.sizes = new Float64Array(n);
    this.mtimes = new Float64Array(n);
    this.ctimes = new Float64Array(n);
    this.inos = new Float64Array(n);
    this.modes = new Uint32Array(n);
    this.oids = Buffer.alloc(n * OID_BYTES);
    this.flags = new Uint8Array(n);
  }

  get size(): number {
    return this.live;
  }

  get [Symbol.toStringTag](): string {
    return "StatTable";
  }

  /** Rows ever added (removed ones included): the bound of `keyAt`/`statAt`. */
  get rows(): number {
    return this.keyOf.length;
  }

  private grow(): void {
    const n = this.sizes.length * 2;
    const f64 = (a: Float64Array) => {
      const b = new Float64Array(n);
      b.set(a);
      return b;
    };
    this.sizes = f64(this.sizes);
    this.mtimes = f64(this.mtimes);
    this.ctimes = f64(this.ctimes);
    this.inos = f64(this.inos);
    const modes = new Uint32Array(n);
    modes.set(this.modes);
    this.modes = modes;
    const flags = new Uint8Array(n);
    flags.set(this.flags);
    this.flags = flags;
    const oids = Buffer.alloc(n * OID_BYTES);
    this.oids.copy(oids);
    this.oids = oids;
  }

  /** The row of `key`, or -1. */
  rowOf(key: string): number {
    let row: number;
    if (this.sorted) {
      let a = 0;
      let b = this.keyOf.length;
      while (a < b) {
        const mid = (a + b) >>> 1;
        if ((this.keyOf[mid] as string) < key) a = mid + 1;
        else b = mid;
      }
      row = a < this.keyOf.length && this.keyOf[a] === key ? a : -1;
    } else {
      if (this.index === undefined) {
        this.index = new Map();
        for (let i = 0; i < this.keyOf.length; i++) {
          if (this.isLive(i)) this.index.set(this.keyOf[i] as string, i);
        }
      }
      row = this.index.get(key) ?? -1;
    }
    return row >= 0 && ((this.flags[row] as number) & DEAD) === 0 ? row : -1;
  }

  /** Add a row (a key present already is replaced: its old row is removed). */
  set(key: string, stat: CachedStat): this {
    this.add(key, stat, false);
    return this;
  }

  /** `set`, and say whether the row's manifest entry is kept apart (`isMarked`). */
  add(key: string, stat: CachedStat, marked: boolean): void {
    const n = this.keyOf.length;
    if (n > 0 && this.sorted && !((this.keyOf[n - 1] as string) < key)) {
      this.sorted = false;
      this.index = undefined;
    }
    if (!this.sorted) {
      const old = this.rowOf(key);
      if (old >= 0) {
        this.flags[old] = DEAD;
        this.live--;
      }
    }
    if (n === this.sizes.length) this.grow();
    this.keyOf.push(key);
    this.sizes[n] = stat.size;
    this.mtimes[n] = stat.mtimeMs;
    this.ctimes[n] = stat.ctimeMs;
    this.inos[n] = stat.ino;
    this.modes[n] = stat.mode;
    this.oids.write(stat.oid, n * OID_BYTES, OID_BYTES, "hex");
    this.flags[n] = marked ? MARKED : 0;
    this.index?.set(key, n);
    this.live++;
  }

  delete(key: string): boolean {
    const row = this.rowOf(key);
    if (row < 0) return false;
    this.flags[row] = DEAD;
    this.index?.delete(key);
    this.live--;
    return true;
  }

  get(key: string): CachedStat | undefined {
    const row = this.rowOf(key);
    return row < 0 ? undefined : this.statAt(row);
  }

  has(key: string): boolean {
    return this.rowOf(key) >= 0;
  }

  /** Is row `row` live? */
  isLive(row: number): boolean {
    return ((this.flags[row] as number) & DEAD) === 0;
  }

  /** Is row `row`'s manifest entry kept apart (see `add`)? */
  isMarked(row: number): boolean {
    return ((this.flags[row] as number) & MARKED) !== 0;
  }

  keyAt(row: number): string {
    return this.keyOf[row] as string;
  }

  sizeAt(row: number): number {
    return this.sizes[row] as number;
  }

  mtimeAt(row: number): number {
    return this.mtimes[row] as number;
  }

  modeAt(row: number): number {
    return this.modes[row] as number;
  }

  /** Does row `row` hold exactly this size, mtime, ctime, inode and mode? */
  statMatches(
    row: number,
    st: { size: number; mtimeMs: number; ctimeMs: number; ino: number; mode: number },
  ): boolean {
    return (
      this.sizes[row] === st.size &&
      this.mtimes[row] === st.mtimeMs &&
      this.ctimes[row] === st.ctimeMs &&
      this.inos[row] === st.ino &&
      this.modes[row] === st.mode
    );
  }

  oidAt(row: number): string {
    return this.oids.toString("hex", row * OID_BYTES, (row + 1) * OID_BYTES);
  }

  /** Copy row `row`'s content id (20 bytes) into `buf` at `at`. */
  copyOid(row: number, buf: Buffer, at: number): void {
    this.oids.copy(buf, at, row * OID_BYTES, (row + 1) * OID_BYTES);
  }

  /** Row `row`'s size, mtime, ctime, inode and mode into `buf` at `at` (a base file's layout). */
  writeStat(row: number, buf: Buffer, at: number): void {
    buf.writeDoubleLE(this.sizes[row] as number, at);
    buf.writeDoubleLE(this.mtimes[row] as number, at + 8);
    buf.writeDoubleLE(this.ctimes[row] as number, at + 16);
    buf.writeDoubleLE(this.inos[row] as number, at + 24);
    buf.writeUInt32LE(this.modes[row] as number, at + 32);
  }

  /** Add a row from a base file's bytes (`writeStat`'s layout, then the raw id) at `at`. */
  addEncoded(key: string, buf: Buffer, at: number): void {
    const n = this.keyOf.length;
    this.add(key, NO_STAT, false);
    this.sizes[n] = buf.readDoubleLE(at);
    this.mtimes[n] = buf.readDoubleLE(at + 8);
    this.ctimes[n] = buf.readDoubleLE(at + 16);
    this.inos[n] = buf.readDoubleLE(at + 24);
    this.modes[n] = buf.readUInt32LE(at + 32);
    buf.copy(this.oids, n * OID_BYTES, at + 36, at + 36 + OID_BYTES);
  }

  statAt(row: number): CachedStat {
    return {
      size: this.sizes[row] as number,
      mtimeMs: this.mtimes[row] as number,
      ctimeMs: this.ctimes[row] as number,
      ino: this.inos[row] as number,
      mode: this.modes[row] as number,
      oid: this.oidAt(row),
    };
  }

  /** The live rows in key order (code units). */
  sortedRows(): Uint32Array {
    const rows = new Uint32Array(this.live);
    let j = 0;
    for (let i = 0; i < this.keyOf.length; i++) if (this.isLive(i)) rows[j++] = i;
    if (this.sorted) return rows;
    const keys = this.keyOf;
    return rows.sort((a, b) => byCodeUnits(keys[a] as string, keys[b] as string));
  }

  *entries(): MapIterator<[string, CachedStat]> {
    for (let i = 0; i < this.keyOf.length; i++) {
      if (this.isLive(i)) yield [this.keyOf[i] as string, this.statAt(i)];
    }
  }

  *keys(): MapIterator<string> {
    for (let i = 0; i < this.keyOf.length; i++) if (this.isLive(i)) yield this.keyOf[i] as string;
  }

  *values(): MapIterator<CachedStat> {
    for (let i = 0; i < this.keyOf.length; i++) if (this.isLive(i)) yield this.statAt(i);
  }

  [Symbol.iterator](): MapIterator<[string, CachedStat]> {
    return this.entries();
  }

  forEach(
    fn: (value: CachedStat, key: string, map: ReadonlyMap<string, CachedStat>) => void,
  ): void {
    for (const [k, c] of this.entries()) fn(c, k, this);
  }
}

/** `entries` as a table in key order with `changes` applied (a null change removes the key). */
export function tableWithChanges(
  entries: ReadonlyMap<string, CachedStat>,
  changes: ReadonlyMap<string, CachedStat | null>,
): StatTable {
  const base =
    entries instanceof StatTable
      ? entries
      : tableOf([...entries].sort((a, b) => byCodeUnits(a[0], b[0])));
  const add = [...changes].sort((a, b) => byCodeUnits(a[0], b[0]));
  const out = new StatTable(base.size + add.length);
  const rows = base.sortedRows();
  let i = 0;
  let j = 0;
  while (i < rows.length || j < add.length) {
    const bk = i < rows.length ? base.keyAt(rows[i] as number) : undefined;
    const change = add[j];
    if (change === undefined || (bk !== undefined && bk < change[0])) {
      out.set(bk as string, base.statAt(rows[i++] as number));
      continue;
    }
    if (change[1] !== null) out.set(change[0], change[1]);
    j++;
    if (bk === change[0]) i++; // replaced or removed
  }
  return out;
}

function tableOf(pairs: readonly [string, CachedStat][]): StatTable {
  const t = new StatTable(pairs.length);
  for (const [k, c] of pairs) t.set(k, c);
  return t;
}
