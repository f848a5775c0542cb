import picomatch from "picomatch";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { type IndexData, idAt, lastPositionOf, splitFiles } from "./history-index.ts";

/** Filters of GetEditHistory, already validated. Times are epoch ms, inclusive. */
export interface HistoryFilters {
  sinceMs?: number;
  untilMs?: number;
  tools?: readonly string[];
  fileGlob?: string;
}

export interface HistoryPage {
  /** Index positions of the page, newest first. */
  positions: number[];
  /** Operations matching the filters, all pages together. */
  total: number;
  hasMore: boolean;
  nextCursor?: string;
}

const CURSOR_PREFIX = "c1.";

/** The cursor that continues after operation `id` (opaque to callers). */
export function formatCursor(id: string): string {
  return CURSOR_PREFIX + Buffer.from(id, "utf8").toString("base64url");
}

function parseCursor(cursor: string, index: IndexData): number {
  const id = cursor.startsWith(CURSOR_PREFIX)
    ? Buffer.from(cursor.slice(CURSOR_PREFIX.length), "base64url").toString("utf8")
    : "";
  // Cursors point near the newest end: a backward scan beats building the whole id map.
  const found = id === "" ? -1 : lastPositionOf(index, id);
  const at = found < 0 ? undefined : found;
  if (at === undefined) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `cursor ${JSON.stringify(cursor)} is not valid for this history (malformed, or its operation was removed by retention); start again without a cursor`,
    );
  }
  return at;
}

/**
 * One page of the history, newest first (pure: works on the parsed index only). Every filter is
 * answered from the index; a glob is tested once per distinct path, so 100k operations over a
 * few thousand files cost a few thousand glob matches.
 */
export function queryHistoryIndex(
  index: IndexData,
  filters: HistoryFilters,
  page: { limit: number; cursor?: string },
): HistoryPage {
  const n = index.count;
  const start = page.cursor === undefined ? n - 1 : parseCursor(page.cursor, index) - 1;
  // Tools and paths are interned: each filter is decided once per table entry, then looked up
  // by id per line (no string touched in the loop).
  let toolOk: Uint8Array | undefined;
  if (filters.tools && filters.tools.length > 0) {
    const wanted = new Set(filters.tools);
    toolOk = Uint8Array.from(index.tools, (t) => (wanted.has(t) ? 1 : 0));
  }
  const isMatch =
    filters.fileGlob === undefined ? undefined : picomatch(filters.fileGlob, { dot: true });
  // 0 = not yet tested, 1 = matches, 2 = does not
  const pathState = isMatch === undefined ? undefined : new Uint8Array(index.paths.length);
  const since = filters.sinceMs ?? Number.NEGATIVE_INFINITY;
  const until = filters.untilMs ?? Number.POSITIVE_INFINITY;
  const positions: number[] = [];
  let total = 0;
  let hasMore = false;
  const { ts, toolIds, pathIds, paths } = index;
  for (let i = n - 1; i >= 0; i--) {
    const t = ts[i] ?? 0;
    if (t < since || t > until) continue;
    if (toolOk !== undefined && toolOk[toolIds[i] ?? 0] !== 1) continue;
    if (pathState !== undefined && isMatch !== undefined) {
      const p = pathIds[i] ?? 0;
      let state = pathState[p];
      if (state === 0) {
        state = splitFiles(paths[p] ?? "").some((f) => isMatch(f)) ? 1 : 2;
        pathState[p] = state;
      }
      if (state !== 1) continue;
    }
    total++;
    if (i > start) continue;
    if (positions.length < page.limit) positions.push(i);
    else hasMore = true;
  }
  const last = positions[positions.length - 1];
  return {
    positions,
    total,
    hasMore,
    ...(hasMore && last !== undefined ? { nextCursor: formatCursor(idAt(index, last)) } : {}),
  };
}
