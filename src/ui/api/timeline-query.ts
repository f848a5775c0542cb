import picomatch from "picomatch";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import { busKey, type IndexedRow, type RowKind } from "./timeline-rows.ts";
import { type BusRowTable, kindCode } from "./timeline-store.ts";

/** The timeline's filters, validated. Times are epoch ms, inclusive. */
export interface TimelineFilters {
  agent?: string;
  /** picomatch glob over workspace-relative paths: a row matches if any of its files does. */
  glob?: string;
  sinceMs?: number;
  untilMs?: number;
  kinds?: ReadonlySet<RowKind>;
  session?: string;
}

/** What the query asks the index about sessions (a pure lookup). */
export interface RowLookup {
  /** The agent of a session, when known. */
  agentOf(sessionId: string): string | null | undefined;
}

/**
 * Every row of the timeline in ascending order (time, then key): `order[i]` ≥ 0 is bus row
 * `order[i]` of `bus`, < 0 is job row `-order[i] - 1` of `jobs`.
 */
export interface OrderedRows {
  order: Int32Array;
  bus: BusRowTable;
  jobs: readonly IndexedRow[];
}

/** One page as row references (entries of `order`), newest first; the index makes the rows. */
export interface PickedPage {
  refs: number[];
  /** The cursor of the next (older) page, or null. */
  next: string | null;
  /** Rows matching the filters, all pages together. */
  total: number;
  /** The cursor of the newest matching row: `after=` it asks for what came since. */
  head: string | null;
  /** With `after`: more new rows matched than `limit` (the page shows the newest). */
  truncated: boolean;
}

const CURSOR_PREFIX = "t1.";

function formatTimelineCursor(ms: number, key: string): string {
  return CURSOR_PREFIX + Buffer.from(`${ms}.${key}`, "utf8").toString("base64url");
}

function parseTimelineCursor(cursor: string): { ms: number; key: string } {
  const text = cursor.startsWith(CURSOR_PREFIX)
    ? Buffer.from(cursor.slice(CURSOR_PREFIX.length), "base64url").toString("utf8")
    : "";
  const dot = text.indexOf(".");
  const ms = Number(text.slice(0, dot));
  if (dot < 1 || !Number.isFinite(ms))
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `cursor ${JSON.stringify(cursor)} is not a timeline cursor; start again without one`,
    );
  return { ms, key: text.slice(dot + 1) };
}

/** A row reference's time. */
export function msOfRef(rows: OrderedRows, ref: number): number {
  return ref >= 0 ? (rows.bus.ms[ref] ?? 0) : (rows.jobs[-ref - 1]?.ms ?? 0);
}

/** A row reference's key (`b<offset>` for a bus row, the job row's own). */
export function keyOfRef(rows: OrderedRows, ref: number): string {
  return ref >= 0 ? busKey(rows.bus.end[ref] ?? 0) : (rows.jobs[-ref - 1]?.row.key ?? "");
}

/** -1, 0, 1: where a row stands against a cursor position (the key only when times tie). */
function against(rows: OrderedRows, ref: number, at: { ms: number; key: string }): number {
  const ms = msOfRef(rows, ref);
  if (ms !== at.ms) return ms < at.ms ? -1 : 1;
  const key = keyOfRef(rows, ref);
  return key < at.key ? -1 : key > at.key ? 1 : 0;
}

/**
 * A predicate over row references for the filters. Bus rows are judged on their columns: each
 * glob is tested once per distinct path, each session's agent looked up once.
 */
export function rowFilter(
  rows: OrderedRows,
  filters: TimelineFilters,
  lookup: RowLookup,
): (ref: number) => boolean {
  const { bus } = rows;
  const since = filters.sinceMs ?? Number.NEGATIVE_INFINITY;
  const until = filters.untilMs ?? Number.POSITIVE_INFINITY;
  const kinds = filters.kinds === undefined ? undefined : kindMask(filters.kinds);
  const session = filters.session === undefined ? undefined : sessionNumber(bus, filters.session);
  const agentOk = filters.agent === undefined ? undefined : agentTest(bus, filters.agent, lookup);
  const pathOk = filters.glob === undefined ? undefined : pathTest(bus, filters.glob);
  const bare = (filters.agent ?? filters.glob ?? filters.session) === undefined;
  return (ref) => {
    if (ref < 0) {
      // a job's row: no session, agent or files, so only time and kind filter it
      const job = rows.jobs[-ref - 1];
      if (job === undefined || !bare || job.ms < since || job.ms > until) return false;
      return filters.kinds === undefined || filters.kinds.has(job.row.kind);
    }
    const ms = bus.ms[ref] ?? 0;
    if (ms < since || ms > until || bus.folded[ref] === 1) return false;
    if (kinds !== undefined && kinds[bus.kind[ref] ?? 0] !== 1) return false;
    if (session !== undefined && bus.session[ref] !== session) return false;
    if (agentOk !== undefined && !agentOk(ref)) return false;
    if (pathOk === undefined) return true;
    const from = bus.fileStart[ref] ?? 0;
    const to = from + (bus.fileCount[ref] ?? 0);
    for (let f = from; f < to; f++) if (pathOk(bus.files[f] ?? -1)) return true;
    return false;
  };
}

/** A session's number; a session no row names matches none (-2: not even the rows with none). */
function sessionNumber(bus: BusRowTable, session: string): number {
  const n = bus.sessions.find(session);
  return n < 0 ? -2 : n;
}

function kindMask(kinds: ReadonlySet<RowKind>): Uint8Array {
  const mask = new Uint8Array(256);
  for (const k of kinds) {
    const code = kindCode(k);
    if (code >= 0) mask[code] = 1;
  }
  return mask;
}

/** A row's agent is its own, else its session's (looked up once per session). */
function agentTest(bus: BusRowTable, agent: string, lookup: RowLookup): (ref: number) => boolean {
  const own = bus.agents.find(agent);
  const bySession = new Int8Array(bus.sessions.size); // 0 not yet asked, 1 yes, -1 no
  return (ref) => {
    const a = bus.agent[ref] ?? -1;
    if (a >= 0) return a === own;
    const s = bus.session[ref] ?? -1;
    if (s < 0) return false;
    if (bySession[s] === 0) {
      const id = bus.sessions.at(s);
      bySession[s] = id !== null && lookup.agentOf(id) === agent ? 1 : -1;
    }
    return bySession[s] === 1;
  };
}

function pathTest(bus: BusRowTable, glob: string): (path: number) => boolean {
  const isMatch = picomatch(glob, { dot: true });
  const seen = new Int8Array(bus.paths.size); // 0 not yet tested, 1 matches, -1 does not
  return (p) => {
    if (p < 0) return false;
    if (seen[p] === 0) seen[p] = isMatch(bus.paths.at(p) ?? "") ? 1 : -1;
    return seen[p] === 1;
  };
}

/**
 * One page of the timeline, newest first (pure). `cursor` pages back in time; `after` asks for
 * the rows newer than a cursor (the live view's catch-up).
 */
export function queryRows(
  rows: OrderedRows,
  filters: TimelineFilters,
  page: { limit: number; cursor?: string; after?: string },
  lookup: RowLookup,
): PickedPage {
  const before = page.cursor === undefined ? undefined : parseTimelineCursor(page.cursor);
  const after = page.after === undefined ? undefined : parseTimelineCursor(page.after);
  const keep = rowFilter(rows, filters, lookup);
  const refs: number[] = [];
  let total = 0;
  let head: number | undefined;
  let more = false;
  for (let i = rows.order.length - 1; i >= 0; i--) {
    const ref = rows.order[i] ?? 0;
    if (!keep(ref)) continue;
    total++;
    head ??= ref;
    if (before !== undefined && against(rows, ref, before) >= 0) continue;
    if (after !== undefined && against(rows, ref, after) <= 0) continue;
    if (refs.length < page.limit) refs.push(ref);
    else more = true;
  }
  const last = refs[refs.length - 1];
  const cursorOf = (ref: number) => formatTimelineCursor(msOfRef(rows, ref), keyOfRef(rows, ref));
  return {
    refs,
    next: after === undefined && more && last !== undefined ? cursorOf(last) : null,
    total,
    head: head === undefined ? null : cursorOf(head),
    truncated: after !== undefined && more,
  };
}
