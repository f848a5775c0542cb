import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { numberSteps, safeRunId } from "./import-common.ts";
import type { TrajectoryImporter, TrajectoryStep } from "./trajectory.ts";

/**
 * Cursor's "Export chat" markdown: a `# title`, `_Exported on <date> from Cursor (<version>)_`,
 * then turns, each opened by a line `**User**` or `**Cursor**` and closed by a `---` rule. The
 * whole file is kept as `raw/cursor.md` (the chat extractor reads it); the steps are its turns.
 */

const MARKER = /^\*\*(User|Cursor|Assistant)\*\*\s*$/;

export interface CursorTurn {
  role: "user" | "assistant";
  text: string;
  /** 0-based line of the marker, and the line after the turn's last (before the next marker). */
  start: number;
  end: number;
}

/**
 * The export's turns, in order, with where each lies in the file (the lab splits at user turns).
 * Cursor closes every turn with a `---` rule, so a marker is a turn when it is the first one or
 * follows a rule: a `**User**` inside a pasted conversation is the user's text, not a turn (the
 * original lab's sessions paste whole exports into a prompt). Markdown without rules (another
 * tool's export) has every marker as a turn.
 */
export function splitCursorTurns(text: string): { header: string; turns: CursorTurn[] } {
  const lines = text.split("\n");
  const all: { line: number; role: "user" | "assistant"; afterRule: boolean }[] = [];
  let previous = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const m = MARKER.exec(line);
    if (m)
      all.push({
        line: i,
        role: m[1] === "User" ? "user" : "assistant",
        afterRule: previous === "---",
      });
    if (line.trim() !== "") previous = line.trim();
  }
  const ruled = all.some((m, k) => k > 0 && m.afterRule);
  const marks = ruled ? all.filter((m, k) => k === 0 || m.afterRule) : all;
  const turns = marks.map((m, k) => {
    const end = marks[k + 1]?.line ?? lines.length;
    const body = lines.slice(m.line + 1, end);
    // the `---` rule that closes the turn belongs to no one
    while (body.length > 0 && /^\s*(---)?\s*$/.test(body[body.length - 1] ?? "")) body.pop();
    return { role: m.role, text: body.join("\n").trim(), start: m.line, end };
  });
  const header = lines.slice(0, all[0]?.line ?? lines.length).join("\n");
  return { header, turns };
}

export function turnsToSteps(turns: CursorTurn[]): TrajectoryStep[] {
  return numberSteps(
    turns.filter((t) => t.text !== "").map((t) => ({ kind: t.role, text: t.text })),
  );
}

export const cursorImporter: TrajectoryImporter = {
  format: "cursor",
  detect(_path, head) {
    if (/^_Exported on .+ from Cursor\b/m.test(head)) return true;
    return /^\*\*User\*\*\s*$/m.test(head) && /^\*\*Cursor\*\*\s*$/m.test(head);
  },
  read(path) {
    const text = readFileSync(path, "utf8");
    const { turns } = splitCursorTurns(text);
    const warnings =
      turns.length === 0 ? [`${basename(path)}: no **User** / **Cursor** turns found`] : [];
    return {
      runs: [
        {
          id: safeRunId(basename(path).replace(/\.(md|markdown)$/i, "")),
          steps: turnsToSteps(turns),
          source: { format: "cursor" },
          chat: text,
        },
      ],
      warnings,
    };
  },
};
