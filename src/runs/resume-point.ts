import { readFileSync } from "node:fs";
import { JOB_STATES, type JobState, type TimelineEvent, TimelineEventSchema } from "./protocol.ts";

/** The states a resumed job can continue from: those after START_SESSION, before SUMMARIZE. */
export const RESUMABLE_STATES = ["RESTORE", "RUN_SCRIPTS", "VALIDATE_OUTPUTS"] as const;
export type ResumableState = (typeof RESUMABLE_STATES)[number];

/** Where a job stopped, from its timeline: the state to continue from, and one left open. */
export type ResumePoint =
  | { ok: true; from: ResumableState; open: JobState | undefined }
  | { ok: false; stoppedIn: JobState | undefined };

/**
 * The last state a job entered, and whether it really exited (pure). A STATE_EXIT marked
 * `left_by` (written for a state a dead runner left open) is no real exit.
 */
export function lastStateOf(events: TimelineEvent[]): {
  state: JobState | undefined;
  exited: boolean;
} {
  let state: JobState | undefined;
  let exited = false;
  for (const e of events) {
    const s = JOB_STATES.find((x) => x === e.state);
    if (!s) continue;
    if (e.event === "STATE_ENTER") {
      state = s;
      exited = false;
    } else if (e.event === "STATE_EXIT" && s === state && e.data?.left_by === undefined) {
      exited = true;
    }
  }
  return { state, exited };
}

/** The state a dead runner left open (entered, never exited, nor marked left), if any. */
export function openStateOf(events: TimelineEvent[]): JobState | undefined {
  const last = lastStateOf(events);
  if (!last.state || last.exited) return undefined;
  const marked = events.some(
    (e, i) =>
      e.event === "STATE_EXIT" &&
      e.state === last.state &&
      e.data?.left_by !== undefined &&
      i > events.findLastIndex((x) => x.event === "STATE_ENTER"),
  );
  return marked ? undefined : last.state;
}

/**
 * The resume point of a job (pure): the last state entered, continued when it never exited,
 * the next one when it did. Only the states after START_SESSION (a live session, the design
 * restored or being restored) can be continued; a START_SESSION left open counts when the
 * manifest recorded the session.
 */
export function resumePointOf(events: TimelineEvent[], hasSession: boolean): ResumePoint {
  const { state, exited } = lastStateOf(events);
  const open = openStateOf(events);
  const at = state === undefined ? -1 : JOB_STATES.indexOf(state);
  const next = exited ? at + 1 : at;
  const from = JOB_STATES[Math.min(next, JOB_STATES.indexOf("VALIDATE_OUTPUTS"))];
  if (from === "START_SESSION" && hasSession) return { ok: true, from: "RESTORE", open };
  const resumable = RESUMABLE_STATES.find((s) => s === from);
  return resumable ? { ok: true, from: resumable, open } : { ok: false, stoppedIn: state };
}

export function readTimeline(path: string): TimelineEvent[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  const events: TimelineEvent[] = [];
  for (const line of text.split("\n")) {
    try {
      events.push(TimelineEventSchema.parse(JSON.parse(line)));
    } catch {
      // an empty last line
    }
  }
  return events;
}
