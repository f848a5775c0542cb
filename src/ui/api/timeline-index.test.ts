import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspacePaths } from "../../core/index.ts";
import { createTimelineIndex } from "./timeline-index.ts";
import { BusRowTable } from "./timeline-store.ts";

/**
 * The index over a bus written line by line in a temp dir: more rows than the columns start
 * with, lines out of time order, a shell command naming the operation it made, a session's own
 * snapshot (folded) and a manual one, and lines appended between two queries.
 */
let root: string;
let bus: string;
const T0 = Date.parse("2026-03-01T10:00:00Z");
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const line = (type: string, ts: string, data: object) => `${JSON.stringify({ type, ts, data })}\n`;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "tw-timeline-index-"));
  bus = workspacePaths(root).events;
  mkdirSync(join(root, ".timewarp"), { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("the timeline index", () => {
  it("keeps thousands of rows in time order, each made again from its line", () => {
    const lines: string[] = [
      line("snapshot.created", at(0), { snapshot_id: "s_1", files: 3, bytes: 9, partial: false }),
      line("session.started", at(1), { session_id: "sa", snapshot_id: "s_1", agent: "codex" }),
    ];
    for (let i = 0; i < 3000; i++) {
      // every tenth edit is written late: its time is before the line above it
      const s = i % 10 === 9 ? 2 + i - 5 : 2 + i;
      lines.push(
        line("edit.recorded", at(s), {
          operation_id: `op${String(i).padStart(8, "0")}`,
          tool: i % 3 === 0 ? "shell" : "Edit",
          files: [`src/f${i % 7}.ts`, `docs/d${i % 5}.md`],
          session_id: i % 2 === 0 ? "sa" : null,
        }),
      );
    }
    writeFileSync(bus, lines.join(""));
    const index = createTimelineIndex(root);
    const all = index.query({}, { limit: 500 });
    // the session's own snapshot is told by the session's row
    expect(all.total).toBe(3001);
    const times = all.rows.map((r) => Date.parse(r.ts));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const newest = all.rows[0];
    expect(newest?.kind).toBe("edit");
    expect(newest?.files).toEqual(["src/f2.ts", "docs/d3.md"]);
    expect(newest?.operation_id).toBe("op00002998");

    // paging back reaches every row once
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = index.query({}, { limit: 400, ...(cursor ? { cursor } : {}) });
      for (const r of page.rows) seen.add(r.key);
      cursor = page.next ?? undefined;
    } while (cursor !== undefined);
    expect(seen.size).toBe(3001);

    const byGlob = index.query({ glob: "src/f6.ts", agent: "codex" }, { limit: 10 });
    // f6 is every 7th edit, codex's session every 2nd: i ≡ 6 (mod 14)
    expect(byGlob.total).toBe(Math.ceil((3000 - 6) / 14));
    expect(byGlob.rows.every((r) => r.files?.includes("src/f6.ts") && r.session_id === "sa")).toBe(
      true,
    );
    expect(index.query({ session: "nobody" }, { limit: 10 }).total).toBe(0);
  });

  it("gives a shell command's operation its session and tool, and reads what was appended", () => {
    writeFileSync(
      bus,
      line("edit.recorded", at(1), { operation_id: "shop000001", tool: "shell", files: ["a.ts"] }) +
        line("shell.changed", at(2), {
          files: ["a.ts"],
          session_id: "sb",
          tool: "Bash",
          operations: ["shop000001"],
        }),
    );
    const index = createTimelineIndex(root);
    const first = index.query({}, { limit: 10 });
    expect(first.rows).toHaveLength(1);
    expect(first.rows[0]).toMatchObject({ session_id: "sb", agent_tool: "Bash", source: "shell" });

    appendFileSync(
      bus,
      line("snapshot.created", at(3), { snapshot_id: "s_m", files: 1, bytes: 1, partial: false }),
    );
    const since = index.query({}, { limit: 10, after: first.head ?? "" });
    expect(since.rows.map((r) => r.snapshot_id)).toEqual(["s_m"]);
    expect(index.query({ session: "sb" }, { limit: 10 }).total).toBe(1);
  });
});

describe("BusRowTable", () => {
  it("keeps every row's numbers and files as its columns grow", () => {
    const table = new BusRowTable();
    for (let i = 0; i < 2500; i++)
      table.push({
        ms: i,
        start: i * 10,
        end: i * 10 + 10,
        kind: i % 2 === 0 ? "edit" : "guard",
        session: i % 4 === 0 ? null : `s${i % 3}`,
        agent: null,
        files: Array.from({ length: i % 4 }, (_, k) => `p${k}`),
      });
    expect(table.length).toBe(2500);
    const i = 2499;
    expect([table.ms[i], table.start[i], table.end[i], table.kindOf(i)]).toEqual([
      2499,
      24990,
      25000,
      "guard",
    ]);
    expect(table.sessions.at(table.session[i] ?? -1)).toBe("s0");
    expect(table.session[2496]).toBe(-1);
    const from = table.fileStart[i] ?? 0;
    const files = [...table.files.subarray(from, from + (table.fileCount[i] ?? 0))];
    expect(files.map((f) => table.paths.at(f))).toEqual(["p0", "p1", "p2"]);
    expect(table.paths.size).toBe(3);
  });
});
