import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { JOB_ID_PATTERN, workspacePaths } from "../../core/index.ts";
import { readManifest, runsRootFor } from "../../runs/index.ts";
import { listSessionStatus, type SessionListing } from "../../timemachine/index.ts";
import type { UiContext } from "../context.ts";
import { scanBusFrom, type TailedEvent } from "./bus-tail.ts";
import { queryRows, type TimelineFilters, type TimelinePage } from "./timeline-query.ts";
import {
  busKey,
  compareRows,
  type IndexedRow,
  rowOfEvent,
  rowsOfJob,
  type TimelineRow,
} from "./timeline-rows.ts";

/**
 * The timeline's index, kept by the dashboard's process: every bus line parsed once (each query
 * reads only what was appended since), each SkillPilot job's manifest read again only when its
 * run directory changed, the session records only when their folder changed. No ledger record
 * is opened: an edit's row comes from its bus event (operation id, tool, files, session).
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

export interface TimelineResult extends TimelinePage {
  /** The sessions the page's rows belong to. */
  sessions: Record<string, SessionInfo>;
  /** Every agent the workspace's sessions came from (the agent filter's choices). */
  agents: string[];
}

interface BusState {
  offset: number;
  ino: number;
  rows: IndexedRow[];
  sorted: boolean;
  /** operation id → its edit row (a shell command's event names the operations it made). */
  ops: Map<string, TimelineRow>;
  agents: Map<string, string>;
  /** snapshot id → the session that took it (an issue names its session's snapshot). */
  snapshotSession: Map<string, string>;
  /** Snapshots a session start or a turn took: their own rows say so. */
  folded: Set<string>;
  /** Per session, its turns as (ms, turn), oldest first. */
  turns: Map<string, { ms: number; turn: number }[]>;
}

const emptyBus = (): BusState => ({
  offset: 0,
  ino: 0,
  rows: [],
  sorted: true,
  ops: new Map(),
  agents: new Map(),
  snapshotSession: new Map(),
  folded: new Set(),
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
  let merged: IndexedRow[] = [];
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

  const refreshJobs = () => {
    if (refreshJobRows(root, jobs)) dirty = true;
  };
  const sessions = createSessionCache(root);

  return {
    query(filters, page) {
      refreshBus();
      refreshJobs();
      if (dirty) {
        if (!bus.sorted) {
          bus.rows.sort(compareRows);
          bus.sorted = true;
        }
        const jobRows = [...jobs.values()].flatMap((j) => j.rows).sort(compareRows);
        merged = mergeSorted(bus.rows, jobRows);
        dirty = false;
      }
      const records = sessions.get();
      const agentOf = (id: string) => bus.agents.get(id) ?? records.get(id)?.agent ?? null;
      const result = queryRows(merged, filters, page, {
        agentOf,
        folded: (row) =>
          row.kind === "snapshot" &&
          row.snapshot_id !== undefined &&
          bus.folded.has(row.snapshot_id),
      });
      const rows = result.rows.map((row) => withTurn(row, bus.turns));
      return {
        ...result,
        rows,
        sessions: sessionsOf(rows, records, agentOf),
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
    bus.folded.add(e.data.snapshot_id);
  } else if (e.type === "turn.checkpointed") {
    bus.folded.add(e.data.snapshot_id);
    if (typeof d.agent === "string" && !bus.agents.has(e.data.session_id))
      bus.agents.set(e.data.session_id, d.agent);
    const list = bus.turns.get(e.data.session_id) ?? [];
    list.push({ ms: Date.parse(e.ts), turn: e.data.turn });
    bus.turns.set(e.data.session_id, list);
  } else if (e.type === "shell.changed" && Array.isArray(d.operations)) {
    for (const op of d.operations) {
      const row = typeof op === "string" ? bus.ops.get(op) : undefined;
      if (row === undefined) continue;
      if (row.session_id === null && typeof d.session_id === "string")
        row.session_id = d.session_id;
      if (typeof d.tool === "string") row.agent_tool = d.tool;
    }
  }
  const row = rowOfEvent(busKey(t.end), e);
  if (row === undefined) return;
  if (row.kind === "edit" && row.operation_id !== undefined) bus.ops.set(row.operation_id, row);
  if (row.kind === "issue" && row.snapshot_id !== undefined)
    row.session_id = bus.snapshotSession.get(row.snapshot_id) ?? null;
  const ms = Date.parse(e.ts);
  if (!Number.isFinite(ms)) return;
  const last = bus.rows[bus.rows.length - 1];
  if (last !== undefined && ms < last.ms) bus.sorted = false;
  bus.rows.push({ ms, row });
}

/** The row with the turn of its session it happened in (the last turn started before it). */
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
  return found === undefined ? row : { ...row, turn: found };
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

function mergeSorted(a: IndexedRow[], b: IndexedRow[]): IndexedRow[] {
  if (b.length === 0) return a;
  const out: IndexedRow[] = new Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as IndexedRow;
    const y = b[j] as IndexedRow;
    if (compareRows(x, y) <= 0) {
      out[k++] = x;
      i++;
    } else {
      out[k++] = y;
      j++;
    }
  }
  while (i < a.length) out[k++] = a[i++] as IndexedRow;
  while (j < b.length) out[k++] = b[j++] as IndexedRow;
  return out;
}
