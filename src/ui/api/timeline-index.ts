import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { JOB_ID_PATTERN, parseEventLine, workspacePaths } from "../../core/index.ts";
import { readManifest, runsRootFor } from "../../runs/index.ts";
import { listSessionStatus, type SessionListing } from "../../timemachine/index.ts";
import type { UiContext } from "../context.ts";
import { readBusLines, scanBusFrom, type TailedEvent } from "./bus-tail.ts";
import { type OrderedRows, queryRows, type TimelineFilters } from "./timeline-query.ts";
import {
  busKey,
  compareRows,
  type IndexedRow,
  rowOfEvent,
  rowsOfJob,
  type TimelineRow,
} from "./timeline-rows.ts";
import { BusRowTable } from "./timeline-store.ts";

/**
 * The timeline's index, kept by the dashboard's process: every bus line parsed once (each query
 * reads only what was appended since) into a few numbers per row (`timeline-store.ts`), each
 * SkillPilot job's manifest read again only when its run directory changed, the session records
 * only when their folder changed. No ledger record is opened: an edit's row comes from its bus
 * event (operation id, tool, files, session), whose line is read again for the page that shows it.
 */
export interface TimelineIndex {
  query(
    filters: TimelineFilters,
    page: { limit: number; cursor?: string; after?: string },
  ): TimelineResult;
}

export interface SessionInfo {
  session_id: string;
  agent: string | null;
  started_at: string | null;
  ended_at: string | null;
  last_seen: string | null;
  live: boolean;
  task_hint: string | null;
  snapshot_id: string | null;
}

export interface TimelineResult {
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
  /** The sessions the page's rows belong to. */
  sessions: Record<string, SessionInfo>;
  /** Every agent the workspace's sessions came from (the agent filter's choices). */
  agents: string[];
}

interface BusState {
  offset: number;
  ino: number;
  table: BusRowTable;
  /** The table's rows in time order; undefined while bus order is time order (the usual case). */
  sorted: Int32Array | undefined;
  inOrder: boolean;
  /**
   * A shell edit's operation id → its row: the `shell.changed` event that follows it names it
   * (only edits with the tool `shell` are named so: on-post-tool-use records them).
   */
  shellOps: Map<string, number>;
  /** Rows whose agent's tool a `shell.changed` event named (Bash, run_shell_command…). */
  agentTools: Map<number, string>;
  agents: Map<string, string>;
  /** snapshot id → the session that took it (an issue names its session's snapshot). */
  snapshotSession: Map<string, string>;
  /** Snapshots a session start or a turn took: their own rows say so. */
  folded: Set<string>;
  /** Snapshot rows not (yet) folded, by snapshot id. */
  snapshotRows: Map<string, number>;
  /** Per session, its turns as (ms, turn), oldest first. */
  turns: Map<string, { ms: number; turn: number }[]>;
}

const emptyBus = (): BusState => ({
  offset: 0,
  ino: 0,
  table: new BusRowTable(),
  sorted: undefined,
  inOrder: true,
  shellOps: new Map(),
  agentTools: new Map(),
  agents: new Map(),
  snapshotSession: new Map(),
  folded: new Set(),
  snapshotRows: new Map(),
  turns: new Map(),
});

const indexes = new WeakMap<UiContext, TimelineIndex>();

/** The index of a dashboard's workspace (one per server). */
export function timelineIndexOf(ctx: UiContext): TimelineIndex {
  let index = indexes.get(ctx);
  if (index === undefined) {
    index = createTimelineIndex(ctx.root);
    indexes.set(ctx, index);
  }
  return index;
}

export function createTimelineIndex(root: string): TimelineIndex {
  const paths = workspacePaths(root);
  let bus = emptyBus();
  const jobs = new Map<string, { mtime: number; rows: IndexedRow[] }>();
  let rows: OrderedRows = { order: new Int32Array(0), bus: bus.table, jobs: [] };
  let dirty = true;

  const refreshBus = () => {
    const scan = scanBusFrom(paths.events, bus, {
      reset: () => {
        bus = emptyBus();
        dirty = true;
      },
      event: (t) => {
        ingest(bus, t);
        dirty = true;
      },
    });
    bus.offset = scan.end;
    bus.ino = scan.ino;
  };
  const sessions = createSessionCache(root);

  return {
    query(filters, page) {
      refreshBus();
      if (refreshJobRows(root, jobs)) dirty = true;
      if (dirty) {
        rows = orderRows(bus, jobs);
        dirty = false;
      }
      const records = sessions.get();
      const agentOf = (id: string) => bus.agents.get(id) ?? records.get(id)?.agent ?? null;
      const picked = queryRows(rows, filters, page, { agentOf });
      const made = makeRows(paths.events, bus, rows, picked.refs).map((row) =>
        withTurn(row, bus.turns),
      );
      return {
        rows: made,
        next: picked.next,
        total: picked.total,
        head: picked.head,
        truncated: picked.truncated,
        sessions: sessionsOf(made, records, agentOf),
        agents: [
          ...new Set([
            ...bus.agents.values(),
            ...[...records.values()].flatMap((s) => (s.agent ? [s.agent] : [])),
          ]),
        ].sort(),
      };
    },
  };
}

/** Every row in time order: the bus's (sorted once if the bus is out of order) and the jobs'. */
function orderRows(
  bus: BusState,
  jobs: Map<string, { mtime: number; rows: IndexedRow[] }>,
): OrderedRows {
  const { table } = bus;
  if (!bus.inOrder && (bus.sorted === undefined || bus.sorted.length !== table.length)) {
    const perm = Int32Array.from({ length: table.length }, (_, i) => i);
    perm.sort((a, b) => (table.ms[a] ?? 0) - (table.ms[b] ?? 0) || a - b);
    bus.sorted = perm;
  }
  const jobRows = [...jobs.values()].flatMap((j) => j.rows).sort(compareRows);
  const order = new Int32Array(table.length + jobRows.length);
  const busAt = (i: number) => (bus.sorted === undefined ? i : (bus.sorted[i] ?? 0));
  let i = 0;
  let j = 0;
  let k = 0;
  // at one millisecond a bus row's key (`b…`) sorts before a job's (`j…`)
  while (i < table.length || j < jobRows.length) {
    const b = i < table.length ? busAt(i) : -1;
    const job = jobRows[j];
    if (b >= 0 && (job === undefined || (table.ms[b] ?? 0) <= job.ms)) {
      order[k++] = b;
      i++;
    } else {
      order[k++] = -j - 1;
      j++;
    }
  }
  return { order, bus: table, jobs: jobRows };
}

/**
 * The rows of a page: a bus row is made again from its line (read back by offset), with what
 * later events added (its session, the agent's tool); a job's row is kept whole.
 */
function makeRows(
  busPath: string,
  bus: BusState,
  rows: OrderedRows,
  refs: readonly number[],
): TimelineRow[] {
  const { table } = bus;
  const spans = refs
    .filter((r) => r >= 0)
    .map((r): [number, number] => [table.start[r] ?? 0, table.end[r] ?? 0]);
  const lines = readBusLines(busPath, spans);
  let n = 0;
  return refs.map((ref) => {
    const job = ref < 0 ? rows.jobs[-ref - 1] : undefined;
    if (job !== undefined) return Object.assign({}, job.row);
    const line = lines[n++];
    const event = line === undefined ? undefined : parseEventLine(line);
    const key = busKey(table.end[ref] ?? 0);
    const row =
      (event === undefined ? undefined : rowOfEvent(key, event)) ?? lostRow(table, ref, key);
    row.session_id = table.sessions.at(table.session[ref] ?? -1);
    const tool = bus.agentTools.get(ref);
    if (tool !== undefined) row.agent_tool = tool;
    return row;
  });
}

/** A row whose line no longer reads (the bus was replaced between two reads): what the index knows. */
function lostRow(table: BusRowTable, ref: number, key: string): TimelineRow {
  return {
    key,
    ts: new Date(table.ms[ref] ?? 0).toISOString(),
    kind: table.kindOf(ref),
    session_id: null,
    title: "(this event no longer reads from the bus)",
  };
}

/** Each job's rows, its manifest read again only when its run directory changed. True if any did. */
function refreshJobRows(
  root: string,
  jobs: Map<string, { mtime: number; rows: IndexedRow[] }>,
): boolean {
  const dir = runsRootFor(root);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => JOB_ID_PATTERN.test(n));
  } catch {
    names = [];
  }
  let changed = false;
  const present = new Set(names);
  for (const id of jobs.keys())
    if (!present.has(id)) {
      jobs.delete(id);
      changed = true;
    }
  for (const id of names) {
    let mtime: number;
    try {
      mtime = statSync(join(dir, id)).mtimeMs;
    } catch {
      continue;
    }
    if (jobs.get(id)?.mtime === mtime) continue;
    const m = readManifest(join(dir, id));
    jobs.set(id, { mtime, rows: m === undefined ? [] : rowsOfJob(m) });
    changed = true;
  }
  return changed;
}

/** The session records by id, read again only when their folder changed. */
function createSessionCache(root: string): { get(): Map<string, SessionListing> } {
  const folder = workspacePaths(root).sessions;
  let cache: { mtime: number; byId: Map<string, SessionListing> } | undefined;
  return {
    get() {
      let mtime: number;
      try {
        mtime = statSync(folder).mtimeMs;
      } catch {
        return new Map();
      }
      if (cache?.mtime !== mtime) {
        try {
          const list = listSessionStatus(root);
          cache = { mtime, byId: new Map(list.map((s) => [s.session_id, s])) };
        } catch {
          // a record that does not read: the timeline still shows what the bus says
          cache = { mtime, byId: cache?.byId ?? new Map() };
        }
      }
      return cache.byId;
    },
  };
}

/** One bus event into the index: its row, and what later rows need to know. */
function ingest(bus: BusState, t: TailedEvent): void {
  const e = t.event;
  const d = e.data as Record<string, unknown>;
  if (e.type === "session.started" || e.type === "session.resumed") {
    if (typeof d.agent === "string") bus.agents.set(e.data.session_id, d.agent);
    bus.snapshotSession.set(e.data.snapshot_id, e.data.session_id);
    fold(bus, e.data.snapshot_id);
  } else if (e.type === "turn.checkpointed") {
    fold(bus, e.data.snapshot_id);
    if (typeof d.agent === "string" && !bus.agents.has(e.data.session_id))
      bus.agents.set(e.data.session_id, d.agent);
    const list = bus.turns.get(e.data.session_id) ?? [];
    list.push({ ms: Date.parse(e.ts), turn: e.data.turn });
    bus.turns.set(e.data.session_id, list);
  } else if (e.type === "shell.changed" && Array.isArray(d.operations)) {
    shellChanged(bus, d);
  }
  const row = rowOfEvent(busKey(t.end), e);
  const ms = Date.parse(e.ts);
  if (row === undefined || !Number.isFinite(ms)) return;
  const session =
    row.kind === "issue" && row.snapshot_id !== undefined
      ? (bus.snapshotSession.get(row.snapshot_id) ?? null)
      : row.session_id;
  const { table } = bus;
  if (table.length > 0 && ms < (table.ms[table.length - 1] ?? 0)) bus.inOrder = false;
  const i = table.push({
    ms,
    start: t.start,
    end: t.end,
    kind: row.kind,
    session,
    agent: row.agent ?? null,
    files: row.files ?? [],
  });
  if (row.kind === "edit" && row.tool === "shell" && row.operation_id !== undefined)
    bus.shellOps.set(row.operation_id, i);
  if (row.kind === "snapshot" && row.snapshot_id !== undefined) {
    if (bus.folded.has(row.snapshot_id)) table.folded[i] = 1;
    else bus.snapshotRows.set(row.snapshot_id, i);
  }
}

/** A session's or a turn's snapshot: its own row is left out (the session's or turn's tells it). */
function fold(bus: BusState, snapshotId: string): void {
  bus.folded.add(snapshotId);
  const i = bus.snapshotRows.get(snapshotId);
  if (i === undefined) return;
  bus.table.folded[i] = 1;
  bus.snapshotRows.delete(snapshotId);
}

/** A shell command's event names the operations it made: their rows get its session and tool. */
function shellChanged(bus: BusState, d: Record<string, unknown>): void {
  const { table } = bus;
  for (const op of d.operations as unknown[]) {
    const i = typeof op === "string" ? bus.shellOps.get(op) : undefined;
    if (i === undefined) continue;
    if (table.session[i] === -1 && typeof d.session_id === "string")
      table.session[i] = table.sessions.intern(d.session_id);
    if (typeof d.tool === "string") bus.agentTools.set(i, d.tool);
  }
}

/** The row (made for this page) given the turn of its session it happened in: the last one started before it. */
function withTurn(
  row: TimelineRow,
  turns: Map<string, { ms: number; turn: number }[]>,
): TimelineRow {
  if (row.session_id === null || row.kind === "turn" || row.kind === "session") return row;
  const list = turns.get(row.session_id);
  if (list === undefined) return row;
  const ms = Date.parse(row.ts);
  let lo = 0;
  let hi = list.length - 1;
  let found: number | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const t = list[mid];
    if (t !== undefined && t.ms <= ms) {
      found = t.turn;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (found !== undefined) row.turn = found;
  return row;
}

function sessionsOf(
  rows: TimelineRow[],
  records: Map<string, SessionListing>,
  agentOf: (id: string) => string | null,
): Record<string, SessionInfo> {
  const out: Record<string, SessionInfo> = {};
  for (const row of rows) {
    const id = row.session_id;
    if (id === null || out[id] !== undefined) continue;
    const s = records.get(id);
    out[id] = {
      session_id: id,
      agent: agentOf(id),
      started_at: s?.started_at ?? null,
      ended_at: s?.ended_at ?? null,
      last_seen: s?.last_seen ?? null,
      live: s?.live ?? false,
      task_hint: s?.task_hint ?? null,
      snapshot_id: s?.snapshot_id ?? null,
    };
  }
  return out;
}
