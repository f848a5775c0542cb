import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isTempName } from "../core/index.ts";
import {
  type Ack,
  AckSchema,
  type DebugIndex,
  DebugIndexSchema,
  RequestSchema,
  type Summary,
  SummarySchema,
  type TimelineEvent,
} from "./protocol.ts";
import type { QueuedRequest } from "./queued-request.ts";
import { readTimeline } from "./resume-point.ts";
import { type RunPaths, runPathsFor } from "./run-dir.ts";

/** summary.json of a run directory, or null while there is none (or it does not read). */
export function readSummary(runDir: string): Summary | null {
  try {
    return SummarySchema.parse(JSON.parse(readFileSync(join(runDir, "summary.json"), "utf8")));
  } catch {
    return null;
  }
}

/** One state of the job as its timeline shows it: entered, left (null while open), how long. */
export interface StateSpan {
  state: string;
  entered_at: string;
  exited_at: string | null;
  duration_ms: number | null;
  /** `data.left_by` of its STATE_EXIT (`runner_gone`: closed for a runner that died). */
  left_by: string | null;
}

/** The states of a timeline, in order (pure): each STATE_ENTER with its STATE_EXIT. */
export function stateSpans(events: readonly TimelineEvent[]): StateSpan[] {
  const spans: StateSpan[] = [];
  const open = new Map<string, StateSpan>();
  for (const e of events) {
    if (e.state === undefined) continue;
    if (e.event === "STATE_ENTER") {
      const span: StateSpan = {
        state: e.state,
        entered_at: e.ts,
        exited_at: null,
        duration_ms: null,
        left_by: null,
      };
      spans.push(span);
      open.set(e.state, span);
    } else if (e.event === "STATE_EXIT") {
      const span = open.get(e.state);
      if (span === undefined) continue;
      open.delete(e.state);
      span.exited_at = e.ts;
      span.duration_ms = Date.parse(e.ts) - Date.parse(span.entered_at);
      const by = e.data?.left_by;
      span.left_by = typeof by === "string" ? by : null;
    }
  }
  return spans;
}

/** Where a request is in queue/: waiting, claimed by the tool, done (renamed so, or acked), refused, or a duplicate set aside. */
export type QueueState = "waiting" | "claimed" | "done" | "refused" | "duplicate";

/** A request and its ack, paired by id. */
export interface RequestPair {
  request_id: string;
  /** queue/ file names for this id (a duplicate adds one). */
  queue_files: string[];
  queue_state: QueueState;
  request: QueuedRequest | null;
  ack: Ack | null;
  /** `ack/<id>.json` when there is one. */
  ack_file: string | null;
}

const QUEUE_NAME = /^(.+?)\.json(\.claimed(\.done|\.refused)?|\.duplicate-\d+)?$/;

function queueStateOf(suffix: string | undefined): QueueState {
  if (suffix === undefined) return "waiting";
  if (suffix.startsWith(".duplicate")) return "duplicate";
  if (suffix.endsWith(".done")) return "done";
  if (suffix.endsWith(".refused")) return "refused";
  return "claimed";
}

function names(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => !isTempName(n))
      .sort();
  } catch {
    return [];
  }
}

function parseFile<T>(path: string, schema: { parse(v: unknown): T }): T | null {
  try {
    return schema.parse(JSON.parse(readFileSync(path, "utf8")));
  } catch {
    return null;
  }
}

/** Every request of queue/ with its ack (and acks with no request: a supervisor's for a foreign file). */
export function pairRequests(paths: RunPaths): RequestPair[] {
  const byId = new Map<string, RequestPair>();
  const pairOf = (id: string): RequestPair => {
    let p = byId.get(id);
    if (p === undefined) {
      p = {
        request_id: id,
        queue_files: [],
        queue_state: "waiting",
        request: null,
        ack: null,
        ack_file: null,
      };
      byId.set(id, p);
    }
    return p;
  };
  for (const name of names(paths.queue)) {
    const m = QUEUE_NAME.exec(name);
    if (m?.[1] === undefined) continue;
    const p = pairOf(m[1]);
    p.queue_files.push(name);
    const state = queueStateOf(m[2]);
    if (state === "duplicate") continue;
    p.queue_state = state;
    p.request ??= parseFile(join(paths.queue, name), RequestSchema);
  }
  for (const name of names(paths.ack)) {
    if (!name.endsWith(".json")) continue;
    const p = pairOf(name.slice(0, -".json".length));
    p.ack = parseFile(join(paths.ack, name), AckSchema);
    p.ack_file = `ack/${name}`;
    // The tool writes the ack, then renames its claim `.done`: a session that ended right after
    // its last ack can leave that rename undone. The ack is the protocol's answer, so the
    // request is done.
    if (p.ack !== null && p.queue_state === "claimed") p.queue_state = "done";
  }
  return [...byId.values()].sort((a, b) => a.request_id.localeCompare(b.request_id));
}

/** A file of a run directory: its path relative to it, its size, and whether it is a symlink. */
export interface RunFile {
  path: string;
  bytes: number;
  symlink: boolean;
}

/** Every file under `dir` (relative to `base`), symlinks listed as links and not followed. */
function walkFiles(base: string, rel: string, out: RunFile[] = []): RunFile[] {
  for (const name of names(join(base, rel))) {
    const path = rel === "" ? name : `${rel}/${name}`;
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(join(base, path));
    } catch {
      continue;
    }
    if (st.isDirectory()) walkFiles(base, path, out);
    else if (st.isFile() || st.isSymbolicLink())
      out.push({ path, bytes: st.size, symlink: st.isSymbolicLink() });
  }
  return out;
}

/** What a job's run directory holds, for a reader: the timeline, requests and acks, files, bundle. */
export interface JobFiles {
  timeline: TimelineEvent[];
  states: StateSpan[];
  requests: RequestPair[];
  /** reports/… files (links included: a reader decides whether it may follow them). */
  reports: RunFile[];
  /** session/… files: logs, heartbeat, ready.json, errorInfo. */
  session: RunFile[];
  summary_md: string | null;
  debug_bundle: { index: DebugIndex | null; files: RunFile[] } | null;
}

/** Read a run directory's facts as they are (seed §2.3); writes nothing. */
export function readJobFiles(runDir: string): JobFiles {
  const paths = runPathsFor(runDir);
  const timeline = readTimeline(paths.timeline);
  let summaryMd: string | null = null;
  try {
    summaryMd = readFileSync(paths.summaryMd, "utf8");
  } catch {
    summaryMd = null;
  }
  const bundleFiles = walkFiles(runDir, "debug_bundle");
  return {
    timeline,
    states: stateSpans(timeline),
    requests: pairRequests(paths),
    reports: walkFiles(runDir, "reports"),
    session: walkFiles(runDir, "session"),
    summary_md: summaryMd,
    debug_bundle:
      bundleFiles.length === 0
        ? null
        : {
            index: parseFile(join(paths.debugBundle, "index.json"), DebugIndexSchema),
            files: bundleFiles,
          },
  };
}
