import { isAbsolute, relative, sep } from "node:path";
import { type CallKind, clipOutput, type TrajectoryStep } from "./trajectory.ts";

/**
 * What the importers share (pure): reading JSON lines with a warning per bad line, naming a
 * tool call's kind from its name, edit diffs from old/new text, clipping inputs and outputs.
 */

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** One JSON value per non-blank line; a line that is not JSON (a torn write) is a warning naming it. */
export function parseJsonLines(
  text: string,
  label: string,
): { records: { line: number; value: unknown }[]; warnings: string[] } {
  const records: { line: number; value: unknown }[] = [];
  const warnings: string[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (line.trim() === "") continue;
    try {
      records.push({ line: i + 1, value: JSON.parse(line) });
    } catch (error) {
      warnings.push(
        `${label}:${i + 1}: not a JSON record, skipped (${error instanceof Error ? error.message : String(error)})`,
      );
    }
  }
  return { records, warnings };
}

/** The first JSON value of a `.jsonl` head (the first 64 KiB may end mid-line): its first full line. */
export function firstJsonLine(head: string): Record<string, unknown> | undefined {
  for (const line of head.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const v: unknown = JSON.parse(line);
      return isRecord(v) ? v : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** The JSON lines of a head that parse (the last one may be cut by the 64 KiB limit). */
export function headJsonLines(head: string, max = 50): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of head.split("\n")) {
    if (out.length >= max) break;
    if (line.trim() === "") continue;
    try {
      const v: unknown = JSON.parse(line);
      if (isRecord(v)) out.push(v);
    } catch {
      // a line cut by the head's end, or not JSON at all
    }
  }
  return out;
}

/** A tool's kind from its name alone (the contract: the extractor decides what a command did). */
export function callKind(table: Record<string, CallKind>, tool: string): CallKind {
  return table[tool] ?? "other";
}

/** `-old`/`+new` lines for an edit tool that gives the replaced text and its replacement. */
export function replacementDiff(oldText: string, newText: string): string {
  const lines = (text: string, mark: string) =>
    text === ""
      ? []
      : text
          .replace(/\n$/, "")
          .split("\n")
          .map((l) => `${mark}${l}`);
  return [...lines(oldText, "-"), ...lines(newText, "+")].join("\n");
}

/** Clip every string of a tool input, so one huge `content` does not make the step huge. */
export function clipInput(input: unknown): Record<string, unknown> | undefined {
  if (!isRecord(input)) return undefined;
  const clip = (v: unknown): unknown => {
    if (typeof v === "string") return clipOutput(v, 4000);
    if (Array.isArray(v)) return v.map(clip);
    if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clip(x)]));
    return v;
  };
  return clip(input) as Record<string, unknown>;
}

/** A path as the agent wrote it, made relative to the session's directory when it lies inside. */
export function sessionPath(path: string, cwd: string | undefined): string {
  if (cwd === undefined || !isAbsolute(path)) return path;
  const rel = relative(cwd, path);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return path;
  return rel.split(sep).join("/");
}

/** Number the steps in order (the importers build them without `i`). */
export function numberSteps(steps: Omit<TrajectoryStep, "i">[]): TrajectoryStep[] {
  return steps.map((s, i) => ({ i, ...s }));
}

/** A file-system-safe run id from an agent's session id or a file name. */
export function safeRunId(raw: string): string {
  const id = raw
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[-.]+|-+$/g, "")
    .slice(0, 120);
  return id === "" ? "run" : id;
}
