import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import type { Clock } from "./clock.ts";
import { errnoCode, fromSystemError } from "./errors.ts";

/**
 * The one registry of bus events: dotted lowercase names, each with the schema of its `data`.
 * The union type of all events is derived from it. Schemas are loose (`passthrough`) so that a
 * newer writer's extra fields never break an older reader.
 */
export const EventRegistry = {
  "workspace.initialized": z.object({}).passthrough(),
  "snapshot.created": z
    .object({ snapshot_id: z.string(), files: z.number(), bytes: z.number(), partial: z.boolean() })
    .passthrough(),
  "snapshot.deleted": z.object({ snapshot_id: z.string() }).passthrough(),
  "gc.completed": z.object({ removed_objects: z.number(), freed_bytes: z.number() }).passthrough(),
  "session.started": z.object({ session_id: z.string(), snapshot_id: z.string() }).passthrough(),
  "session.ended": z.object({ session_id: z.string() }).passthrough(),
  /** The session started again under its id (`--continue`): no new snapshot, it keeps its own. */
  "session.resumed": z.object({ session_id: z.string(), snapshot_id: z.string() }).passthrough(),
  /** A user prompt's turn checkpoint; `stored: false` when nothing had changed since the last. */
  "turn.checkpointed": z
    .object({
      session_id: z.string(),
      turn: z.number(),
      snapshot_id: z.string(),
      stored: z.boolean(),
    })
    .passthrough(),
  /** The code was put back to before a turn (`operation_id`: the ledger operation that did it). */
  "turn.rewound": z
    .object({ session_id: z.string(), turn: z.number(), operation_id: z.string() })
    .passthrough(),
  "travel.completed": z.object({ snapshot_id: z.string(), backup_id: z.string() }).passthrough(),
  "return.completed": z.object({ backup_id: z.string() }).passthrough(),
  "recover.completed": z.object({ outcome: z.string() }).passthrough(),
  /**
   * Before rewriting the workspace, recover kept what no record held (a late write) as a patch
   * (`patch_path`, from the backup to the workspace; `files`, the paths it touches).
   */
  "recover.kept": z
    .object({ backup_id: z.string(), patch_path: z.string(), files: z.array(z.string()) })
    .passthrough(),
  "issue.reported": z.object({ issue_id: z.string(), snapshot_id: z.string() }).passthrough(),
  "issue.fixed": z.object({ issue_id: z.string() }).passthrough(),
  "edit.applied": z
    .object({ operation_id: z.string(), tool: z.string(), files: z.array(z.string()) })
    .passthrough(),
  "edit.recorded": z
    .object({ operation_id: z.string(), tool: z.string(), files: z.array(z.string()) })
    .passthrough(),
  "edit.reverted": z
    .object({ operation_id: z.string(), reverted: z.array(z.string()) })
    .passthrough(),
  "milestone.created": z.object({ milestone_id: z.string() }).passthrough(),
  /** A milestone boundary hint (tests passed, the user said a stage is done), read by ledger proposals. */
  "milestone.signal": z.object({ kind: z.string(), note: z.string().optional() }).passthrough(),
  "shell.changed": z.object({ files: z.array(z.string()) }).passthrough(),
  "job.started": z.object({ job_id: z.string(), skill: z.string() }).passthrough(),
  "job.finished": z.object({ job_id: z.string(), status: z.string() }).passthrough(),
  "guard.checked": z.object({ action: z.string(), score: z.number() }).passthrough(),
  "card.created": z.object({ pattern_id: z.string() }).passthrough(),
  /** Cards (and the goal line) a session start or a prompt offered the agent (hooks' memory offer). */
  "card.offered": z
    .object({ session_id: z.string(), pattern_ids: z.array(z.string()), goal: z.boolean() })
    .passthrough(),
  "hook.failed": z.object({ event: z.string(), message: z.string() }).passthrough(),
  /**
   * A cache or index failed its integrity check and was dropped, never trusted (issue 16): the
   * next read rebuilds it (for the stat cache, one full re-hash).
   */
  "cache.discarded": z.object({ file: z.string(), reason: z.string() }).passthrough(),
} as const;

export type EventName = keyof typeof EventRegistry;

export type BusEvent = {
  [K in EventName]: { type: K; ts: string; data: z.infer<(typeof EventRegistry)[K]> };
}[EventName];

/**
 * Append one fact to the bus (`.timewarp/events.jsonl`) as a single write of one line, so
 * concurrent appenders never interleave inside a line.
 */
export function appendEvent<K extends EventName>(
  eventsPath: string,
  type: K,
  data: z.input<(typeof EventRegistry)[K]>,
  clock: Clock,
): void {
  const parsed = EventRegistry[type].parse(data);
  const line = `${JSON.stringify({ type, ts: clock.now().toISOString(), data: parsed })}\n`;
  let fd: number | undefined;
  try {
    mkdirSync(dirname(eventsPath), { recursive: true });
    fd = openSync(eventsPath, "a", 0o644);
    writeSync(fd, line);
  } catch (error) {
    throw fromSystemError(error, `appending to ${eventsPath}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export interface ReadEventsResult {
  events: BusEvent[];
  /** Lines that were not valid events, with their 1-based line numbers (a torn last line among them). */
  skipped: { line: number; reason: string }[];
}

/** Read the bus, tolerating a torn last line (a writer killed mid-append) and unknown event types. */
export function readEvents(eventsPath: string): ReadEventsResult {
  let text: string;
  try {
    text = readFileSync(eventsPath, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return { events: [], skipped: [] };
    throw fromSystemError(error, `reading ${eventsPath}`);
  }
  const events: BusEvent[] = [];
  const skipped: { line: number; reason: string }[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i];
    if (raw === undefined || raw.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      skipped.push({ line: i + 1, reason: i === lines.length - 1 ? "torn last line" : "not JSON" });
      continue;
    }
    const event = parseBusEvent(value);
    if (event) events.push(event);
    else skipped.push({ line: i + 1, reason: "not a known event" });
  }
  return { events, skipped };
}

/**
 * One line of the bus as a known event, or undefined (not JSON, an unknown type, data that does
 * not fit): for readers that tail the bus from a byte offset (the dashboard's timeline and stream).
 */
export function parseEventLine(line: string): BusEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  return parseBusEvent(value);
}

const EnvelopeSchema = z.object({ type: z.string(), ts: z.string(), data: z.unknown() });

function parseBusEvent(value: unknown): BusEvent | undefined {
  const envelope = EnvelopeSchema.safeParse(value);
  if (!envelope.success || !(envelope.data.type in EventRegistry)) return undefined;
  const type = envelope.data.type as EventName;
  const data = EventRegistry[type].safeParse(envelope.data.data);
  if (!data.success) return undefined;
  return { type, ts: envelope.data.ts, data: data.data } as BusEvent;
}
