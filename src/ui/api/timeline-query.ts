import picomatch from "picomatch";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import type { IndexedRow, RowKind, TimelineRow } from "./timeline-rows.ts";

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

/** What the query asks the index about rows (pure lookups). */
export interface RowLookup {
  /** The agent of a session, when known. */
  agentOf(sessionId: string): string | null | undefined;
  /** True for a row another row already tells (a session's or a turn's own snapshot). */
  folded(row: TimelineRow): boolean;
}

export interface TimelinePage {
  /** Newest first. */
  rows: TimelineRow[];
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

export function formatTimelineCursor(r: IndexedRow): string {
  return CURSOR_PREFIX + Buffer.from(`${r.ms}.${r.row.key}`, "utf8").toString("base64url");
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

/** -1, 0, 1: where row `r` stands against a cursor position. */
function against(r: IndexedRow, at: { ms: number; key: string }): number {
  if (r.ms !== at.ms) return r.ms < at.ms ? -1 : 1;
  return r.row.key < at.key ? -1 : r.row.key > at.key ? 1 : 0;
}

/** A predicate for the filters; the glob is tested once per distinct path. */
export function rowFilter(filters: TimelineFilters, lookup: RowLookup): (r: IndexedRow) => boolean {
  const isMatch = filters.glob === undefined ? undefined : picomatch(filters.glob, { dot: true });
  const seen = new Map<string, boolean>();
  const pathOk = (p: string) => {
    let ok = seen.get(p);
    if (ok === undefined) {
      ok = isMatch?.(p) === true;
      seen.set(p, ok);
    }
    return ok;
  };
  const since = filters.sinceMs ?? Number.NEGATIVE_INFINITY;
  const until = filters.untilMs ?? Number.POSITIVE_INFINITY;
  return ({ ms, row }) => {
    if (ms < since || ms > until) return false;
    if (filters.kinds !== undefined && !filters.kinds.has(row.kind)) return false;
    if (filters.session !== undefined && row.session_id !== filters.session) return false;
    if (filters.agent !== undefined) {
      const agent =
        row.agent ?? (row.session_id === null ? undefined : lookup.agentOf(row.session_id));
      if (agent !== filters.agent) return false;
    }
    if (isMatch !== undefined && !(row.files ?? []).some(pathOk)) return false;
    return !lookup.folded(row);
  };
}

/**
 * One page of the timeline, newest first (pure: over rows in ascending order). `cursor` pages
 * back in time; `after` asks for the rows newer than a cursor (the live view's catch-up).
 */
export function queryRows(
  rows: readonly IndexedRow[],
  filters: TimelineFilters,
  page: { limit: number; cursor?: string; after?: string },
  lookup: RowLookup,
): TimelinePage {
  const before = page.cursor === undefined ? undefined : parseTimelineCursor(page.cursor);
  const after = page.after === undefined ? undefined : parseTimelineCursor(page.after);
  const keep = rowFilter(filters, lookup);
  const picked: IndexedRow[] = [];
  let total = 0;
  let head: IndexedRow | undefined;
  let more = false;
  for (let i = rows.length - 1; i >= 0; i--) {
    const r = rows[i];
    if (r === undefined || !keep(r)) continue;
    total++;
    head ??= r;
    if (before !== undefined && against(r, before) >= 0) continue;
    if (after !== undefined && against(r, after) <= 0) continue;
    if (picked.length < page.limit) picked.push(r);
    else more = true;
  }
  const last = picked[picked.length - 1];
  return {
    rows: picked.map((r) => r.row),
    next: after === undefined && more && last !== undefined ? formatTimelineCursor(last) : null,
    total,
    head: head === undefined ? null : formatTimelineCursor(head),
    truncated: after !== undefined && more,
  };
}
