import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock } from "./clock.ts";
import { appendEvent, readEvents } from "./events.ts";

describe("event bus", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("appends one line per fact and reads them back, tolerating a torn last line", () => {
    const dir = mkdtempSync(join(tmpdir(), "tw-events-"));
    dirs.push(dir);
    const path = join(dir, "sub", "events.jsonl");
    const clock = createFixedClock(new Date("2026-02-28T15:30:12Z"));
    appendEvent(
      path,
      "snapshot.created",
      { snapshot_id: "s_1", files: 3, bytes: 10, partial: false },
      clock,
    );
    appendEvent(path, "issue.fixed", { issue_id: "i_1" }, clock);
    appendFileSync(path, '{"type":"issue.fixed","ts":"2026');
    const { events, skipped } = readEvents(path);
    expect(events.map((e) => e.type)).toEqual(["snapshot.created", "issue.fixed"]);
    expect(events[0]?.ts).toBe("2026-02-28T15:30:12.000Z");
    expect(skipped).toEqual([{ line: 3, reason: "torn last line" }]);
  });

  it("rejects an event whose data does not fit its schema", () => {
    const dir = mkdtempSync(join(tmpdir(), "tw-events-"));
    dirs.push(dir);
    const clock = createFixedClock(new Date());
    expect(() =>
      appendEvent(join(dir, "e.jsonl"), "snapshot.created", { snapshot_id: "s" } as never, clock),
    ).toThrow();
  });

  it("reads an absent bus as empty", () => {
    expect(readEvents("/nonexistent/events.jsonl")).toEqual({ events: [], skipped: [] });
  });
});
