import picomatch from "picomatch";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { type IndexData, splitFiles } from "./history-index.ts";

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
  const found = id === "" ? -1 : index.ids.lastIndexOf(id);
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
  const start =
    page.cursor === undefined ? index.ids.length - 1 : parseCursor(page.cursor, index) - 1;
  const tools = filters.tools && filters.tools.length > 0 ? new Set(filters.tools) : undefined;
  const isMatch =
    filters.fileGlob === undefined ? undefined : picomatch(filters.fileGlob, { dot: true });
  // Keyed by the raw paths field: most operations touch one file, so this is one lookup per line.
  const seen = new Map<string, boolean>();
  const fileOk = (raw: string): boolean => {
    if (isMatch === undefined) return true;
    let m = seen.get(raw);
    if (m === undefined) {
      m = splitFiles(raw).some((f) => isMatch(f));
      seen.set(raw, m);
    }
    return m;
  };
  const since = filters.sinceMs ?? Number.NEGATIVE_INFINITY;
  const until = filters.untilMs ?? Number.POSITIVE_INFINITY;
  const positions: number[] = [];
  let total = 0;
  let hasMore = false;
  const { ts, tools: toolCol, filesRaw } = index;
  for (let i = index.ids.length - 1; i >= 0; i--) {
    const t = ts[i] ?? 0;
    if (t < since || t > until) continue;
    if (tools !== undefined && !tools.has(toolCol[i] ?? "")) continue;
    if (!fileOk(filesRaw[i] ?? "")) continue;
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
    ...(hasMore && last !== undefined ? { nextCursor: formatCursor(index.ids[last] ?? "") } : {}),
  };
}
