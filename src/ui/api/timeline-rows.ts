import type { BusEvent } from "../../core/index.ts";
import type { Manifest } from "../../runs/index.ts";

/**
 * The timeline's rows, pure: what each bus event and each SkillPilot job becomes on the
 * dashboard's timeline. A row carries what the page shows and what the filters need (session,
 * files, time), and the URL of its view.
 */
export type RowKind =
  | "session"
  | "turn"
  | "edit"
  | "revert"
  | "rewind"
  | "shell"
  | "snapshot"
  | "travel"
  | "return"
  | "recover"
  | "issue"
  | "guard"
  | "card"
  | "milestone"
  | "job"
  | "hook";

export const ROW_KINDS: readonly RowKind[] = [
  "session",
  "turn",
  "edit",
  "revert",
  "rewind",
  "shell",
  "snapshot",
  "travel",
  "return",
  "recover",
  "issue",
  "guard",
  "card",
  "milestone",
  "job",
  "hook",
];

/** Where an edit came from: the agent's own tool (a hook saw it), its shell, timewarp's tools (MCP or CLI), a revert. */
export type EditSource = "agent" | "shell" | "mcp" | "timewarp";

export interface TimelineRow {
  /** Unique and stable: `b<bus offset>` for a bus event, `j<job id>.<0|1>` for a job's start/end. */
  key: string;
  ts: string;
  kind: RowKind;
  /** started/resumed/ended, reported/fixed, warn/block, finished… (absent when the kind says it all). */
  action?: string;
  session_id: string | null;
  /** The agent, when the row itself says (sessions, turns); others take their session's. */
  agent?: string | null;
  /** The turn of its session the row happened in (filled per page). */
  turn?: number;
  title: string;
  files?: string[];
  /** The view that shows it: /edits/ID, /snapshots/ID, /issues/ID, /runs/JOB, /memory/RUN. */
  link?: string;
  operation_id?: string;
  snapshot_id?: string;
  backup_id?: string;
  issue_id?: string;
  job_id?: string;
  run_id?: string;
  tool?: string;
  source?: EditSource;
  /** A shell edit: the agent's tool that ran the command (Bash, run_shell_command…). */
  agent_tool?: string;
  status?: string;
  score?: number;
}

/** A row and its time in ms, the order key (`ms`, then `key`). */
export interface IndexedRow {
  ms: number;
  row: TimelineRow;
}

/** The v2 edit tools (seed names): timewarp's own, called through the MCP server or `timewarp edit`. */
const TIMEWARP_EDIT_TOOLS = new Set([
  "ApplyEditBlock",
  "ApplyWholeFileEdit",
  "ApplyRangedEdit",
  "ApplyUnifiedDiff",
  "Delete",
  "CreateDirectory",
]);

export function editSource(tool: string): EditSource {
  if (tool === "shell") return "shell";
  if (TIMEWARP_EDIT_TOOLS.has(tool)) return "mcp";
  if (tool === "ReverseOp" || tool === "Rewind") return "timewarp";
  return "agent";
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const strs = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

function filesTitle(files: string[]): string {
  if (files.length === 0) return "(no file)";
  return files.length === 1 ? (files[0] ?? "") : `${files[0]} +${files.length - 1} more`;
}

/** The row key of a bus event: its line's end offset, zero-padded so keys sort as offsets. */
export function busKey(end: number): string {
  return `b${String(end).padStart(13, "0")}`;
}

/**
 * The row a bus event becomes, or undefined for events the timeline leaves out (bookkeeping:
 * gc, caches, signals, offers; guard checks that passed; a shell command's event when its
 * files were recorded as an operation: that edit row shows it).
 *
 * Rows are object literals with their optional fields set after: Node 20's V8 makes an object
 * spread (`{ ...base, … }`) through a slow path that costs kilobytes of heap per row, which at
 * 10,000 rows was most of the dashboard's memory.
 */
export function rowOfEvent(key: string, e: BusEvent): TimelineRow | undefined {
  const d = e.data as Record<string, unknown>;
  return (
    sessionRow(key, e, d) ?? editRow(key, e, d) ?? workspaceRow(key, e, d) ?? memoryRow(key, e, d)
  );
}

/** The row of a session's start, resume or end; a turn; a rewind. */
function sessionRow(key: string, e: BusEvent, d: Record<string, unknown>): TimelineRow | undefined {
  const ts = e.ts;
  switch (e.type) {
    case "session.started":
    case "session.resumed":
    case "session.ended": {
      const action = e.type.slice("session.".length);
      const row: TimelineRow = {
        key,
        ts,
        kind: "session",
        action,
        session_id: e.data.session_id,
        agent: str(d.agent) ?? null,
        title: `session ${action}`,
      };
      const snapshot = str(d.snapshot_id);
      if (snapshot) {
        row.snapshot_id = snapshot;
        row.link = `/snapshots/${snapshot}`;
      }
      return row;
    }
    case "turn.checkpointed":
      return {
        key,
        ts,
        kind: "turn",
        session_id: e.data.session_id,
        agent: str(d.agent) ?? null,
        turn: e.data.turn,
        title: str(d.prompt) ?? `turn ${e.data.turn}`,
        snapshot_id: e.data.snapshot_id,
        link: `/snapshots/${e.data.snapshot_id}`,
      };
    case "turn.rewound":
      return {
        key,
        ts,
        kind: "rewind",
        session_id: e.data.session_id,
        title: `code rewound to before turn ${e.data.turn}`,
        operation_id: e.data.operation_id,
        link: `/edits/${e.data.operation_id}`,
      };
    default:
      return undefined;
  }
}

/** The row of an edit, a revert, a shell command's change that was not recorded. */
function editRow(key: string, e: BusEvent, d: Record<string, unknown>): TimelineRow | undefined {
  const ts = e.ts;
  switch (e.type) {
    case "edit.applied":
    case "edit.recorded":
      return {
        key,
        ts,
        kind: "edit",
        session_id: str(d.session_id) ?? null,
        title: filesTitle(e.data.files),
        files: e.data.files,
        tool: e.data.tool,
        source: editSource(e.data.tool),
        operation_id: e.data.operation_id,
        link: `/edits/${e.data.operation_id}`,
      };
    case "edit.reverted":
      return {
        key,
        ts,
        kind: "revert",
        session_id: str(d.session_id) ?? null,
        title: `reverted ${e.data.reverted.join(", ") || "(nothing)"}`,
        operation_id: e.data.operation_id,
        source: "timewarp",
        link: `/edits/${e.data.operation_id}`,
      };
    case "shell.changed": {
      if (strs(d.operations).length > 0) return undefined;
      const row: TimelineRow = {
        key,
        ts,
        kind: "shell",
        session_id: str(d.session_id) ?? null,
        title: `shell changed ${filesTitle(e.data.files)} (not recorded)`,
        files: e.data.files,
        source: "shell",
      };
      const tool = str(d.tool);
      if (tool) row.agent_tool = tool;
      return row;
    }
    default:
      return undefined;
  }
}

/** The row of snapshots, travels, returns, recovery, issues. */
function workspaceRow(
  key: string,
  e: BusEvent,
  d: Record<string, unknown>,
): TimelineRow | undefined {
  const ts = e.ts;
  switch (e.type) {
    case "snapshot.created":
      return {
        key,
        ts,
        kind: "snapshot",
        session_id: null,
        title: `snapshot of ${e.data.files} files${e.data.partial ? " (partial)" : ""}`,
        snapshot_id: e.data.snapshot_id,
        link: `/snapshots/${e.data.snapshot_id}`,
      };
    case "travel.completed":
      return {
        key,
        ts,
        kind: "travel",
        session_id: null,
        title: `travelled to ${e.data.snapshot_id}`,
        snapshot_id: e.data.snapshot_id,
        backup_id: e.data.backup_id,
        link: `/snapshots/${e.data.snapshot_id}`,
      };
    case "return.completed":
      return {
        key,
        ts,
        kind: "return",
        session_id: null,
        title: `returned to the present (${e.data.backup_id})`,
        backup_id: e.data.backup_id,
        link: `/snapshots/${e.data.backup_id}`,
      };
    case "recover.completed":
      return {
        key,
        ts,
        kind: "recover",
        session_id: null,
        title: `recovered: ${e.data.outcome}${str(d.kept_path) ? `; late work kept in ${str(d.kept_path)}` : ""}`,
      };
    case "issue.reported":
    case "issue.fixed": {
      const action = e.type.slice("issue.".length);
      const row: TimelineRow = {
        key,
        ts,
        kind: "issue",
        action,
        session_id: null,
        title: `issue ${e.data.issue_id} ${action}`,
        issue_id: e.data.issue_id,
        link: `/issues/${e.data.issue_id}`,
      };
      const snapshot = str(d.snapshot_id);
      if (snapshot) row.snapshot_id = snapshot;
      return row;
    }
    default:
      return undefined;
  }
}

/** The row of guard warnings and blocks, cards, milestones, hook failures. */
function memoryRow(key: string, e: BusEvent, d: Record<string, unknown>): TimelineRow | undefined {
  const ts = e.ts;
  switch (e.type) {
    case "guard.checked": {
      if (e.data.action !== "warn" && e.data.action !== "rollback") return undefined;
      const files = strs(d.paths).concat(strs(d.files));
      const action = e.data.action === "rollback" ? "block" : "warn";
      const row: TimelineRow = {
        key,
        ts,
        kind: "guard",
        action,
        session_id: str(d.session_id) ?? null,
        title: `guard ${action === "block" ? "blocked" : "warned on"} ${filesTitle(files)}`,
        files,
        score: e.data.score,
        link: "/memory",
      };
      const tool = str(d.tool);
      if (tool) row.tool = tool;
      return row;
    }
    case "card.created": {
      const row: TimelineRow = {
        key,
        ts,
        kind: "card",
        session_id: null,
        title: `pattern card ${e.data.pattern_id}`,
        link: "/memory",
      };
      const run = str(d.run_id);
      if (run) {
        row.run_id = run;
        row.link = `/memory/${run}`;
      }
      return row;
    }
    case "milestone.created":
      return {
        key,
        ts,
        kind: "milestone",
        session_id: null,
        title: `milestone ${e.data.milestone_id}`,
      };
    case "hook.failed": {
      const row: TimelineRow = {
        key,
        ts,
        kind: "hook",
        action: "failed",
        session_id: null,
        title: `hook ${e.data.event} failed: ${e.data.message}`,
      };
      const agent = str(d.agent);
      if (agent) row.agent = agent;
      return row;
    }
    default:
      return undefined;
  }
}

/** A job's rows: its start, and its end once it has one. */
export function rowsOfJob(m: Manifest): IndexedRow[] {
  const title = `${m.skill.name} on ${m.design.enc_path.split("/").pop() ?? m.design.enc_path}`;
  const started: TimelineRow = {
    key: `j${m.job_id}.0`,
    ts: m.created_at,
    kind: "job",
    action: "started",
    session_id: null,
    title: `job started: ${title}`,
    job_id: m.job_id,
    link: `/runs/${m.job_id}`,
  };
  if (m.finished_at === undefined) started.status = m.status;
  const rows: IndexedRow[] = [{ ms: Date.parse(m.created_at), row: started }];
  if (m.finished_at !== undefined)
    rows.push({
      ms: Date.parse(m.finished_at),
      row: {
        key: `j${m.job_id}.1`,
        ts: m.finished_at,
        kind: "job",
        action: "finished",
        session_id: null,
        title: `job ${m.status === "PASS" ? "passed" : "failed"}: ${title}${m.error_type && m.error_type !== "OK" ? ` (${m.error_type})` : ""}`,
        job_id: m.job_id,
        link: `/runs/${m.job_id}`,
        status: m.status,
      },
    });
  return rows.filter((r) => Number.isFinite(r.ms));
}

/** Row order: time, then key (the bus's own order for events of one millisecond). */
export function compareRows(a: IndexedRow, b: IndexedRow): number {
  return a.ms - b.ms || (a.row.key < b.row.key ? -1 : a.row.key > b.row.key ? 1 : 0);
}
