import { describe, expect, it } from "vitest";
import type { TimelineEvent } from "./protocol.ts";
import { openStateOf, resumePointOf } from "./resume-point.ts";

const ev = (event: string, state: string, data?: Record<string, unknown>): TimelineEvent => ({
  schema_version: "1.0",
  ts: "2026-11-27T00:00:00.000Z",
  job_id: "j",
  level: "INFO",
  event,
  state,
  ...(data ? { data } : {}),
});
const through = (last: string): TimelineEvent[] => {
  const states = ["INIT", "LOAD_CONTRACT", "LOCATE_DB", "START_SESSION", "RESTORE", "RUN_SCRIPTS"];
  const out: TimelineEvent[] = [];
  for (const s of states.slice(0, states.indexOf(last) + 1))
    out.push(ev("STATE_ENTER", s), ev("STATE_EXIT", s));
  return out;
};

describe("resumePointOf", () => {
  it("continues the state left open, or the next one after a state that exited", () => {
    const open = [...through("RESTORE"), ev("STATE_ENTER", "RUN_SCRIPTS")];
    expect(resumePointOf(open, true)).toEqual({
      ok: true,
      from: "RUN_SCRIPTS",
      open: "RUN_SCRIPTS",
    });
    expect(resumePointOf(through("RESTORE"), true)).toEqual({
      ok: true,
      from: "RUN_SCRIPTS",
      open: undefined,
    });
    expect(resumePointOf(through("START_SESSION"), true)).toMatchObject({ from: "RESTORE" });
  });

  it("a state marked left by an earlier resume is continued, and not marked twice", () => {
    const events = [
      ...through("RESTORE"),
      ev("STATE_ENTER", "RUN_SCRIPTS"),
      ev("STATE_EXIT", "RUN_SCRIPTS", { left_by: "runner_gone" }),
    ];
    expect(resumePointOf(events, true)).toEqual({ ok: true, from: "RUN_SCRIPTS", open: undefined });
    expect(openStateOf(events)).toBeUndefined();
  });

  it("a job that stopped before its session was ready cannot be continued", () => {
    expect(
      resumePointOf([...through("LOAD_CONTRACT"), ev("STATE_ENTER", "LOCATE_DB")], false),
    ).toEqual({
      ok: false,
      stoppedIn: "LOCATE_DB",
    });
    expect(
      resumePointOf([...through("LOCATE_DB"), ev("STATE_ENTER", "START_SESSION")], false).ok,
    ).toBe(false);
    expect(resumePointOf([], false).ok).toBe(false);
  });
});
