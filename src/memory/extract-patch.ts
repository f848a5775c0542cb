import { isTimewarpError } from "../core/index.ts";
import { type FilePatch, parsePatch, patchStats } from "../diff/index.ts";
import type { DraftEvent } from "./phases.ts";

export interface PatchExtraction {
  events: DraftEvent[];
  warnings: string[];
}

const clip = (s: string, n = 4000) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function changeOf(p: FilePatch): NonNullable<DraftEvent["change"]> {
  if (p.oldPath === null) return "added";
  if (p.newPath === null) return "deleted";
  if (p.isRename === true) return "renamed";
  return "modified";
}

/**
 * One edit event per file of `patch.diff` (the diff library parses git's extended format and
 * plain unified diffs): `where` is the new path (the old one for a delete), with the first
 * hunk's line, the change kind, added/removed counts and the hunks as evidence. A patch that
 * does not parse is a warning naming the line, and no events.
 */
export function extractPatchEvents(text: string): PatchExtraction {
  let patches: FilePatch[];
  try {
    patches = parsePatch(text);
  } catch (error) {
    if (isTimewarpError(error)) return { events: [], warnings: [error.message] };
    throw error;
  }
  const events: DraftEvent[] = patches.map((p) => {
    const path = p.newPath ?? p.oldPath ?? "?";
    const first = p.hunks[0];
    const line = first !== undefined && first.newStart > 0 ? `:${first.newStart}` : "";
    const stats = patchStats(p);
    return {
      tool: "edit",
      where: `${path}${line}`,
      why: `${changeOf(p)} ${path}${p.isRename === true && p.oldPath !== null ? ` (from ${p.oldPath})` : ""} (+${stats.added} -${stats.removed})`,
      confidence: 1,
      evidence: clip(p.hunks.map((h) => [h.header, ...h.lines].join("\n")).join("\n")),
      source: "patch",
      change: changeOf(p),
      stats,
    };
  });
  return { events, warnings: patches.length === 0 ? ["no file diffs found"] : [] };
}
