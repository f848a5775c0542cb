import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ErrorCode, fromSystemError, TimewarpError, workspacePaths } from "../core/index.ts";
import { extractBusEvents } from "./extract-bus.ts";
import { extractChatEvents } from "./extract-chat.ts";
import { extractTermEvents } from "./extract-term.ts";
import { extractTranscriptEvents } from "./extract-transcript.ts";
import { readGoal } from "./goal.ts";
import { assignPhases, type DraftEvent } from "./phases.ts";
import { labRunPaths, rawSources, writeJsonl } from "./run-dir.ts";
import type { EventSource, MemoryEvent } from "./schemas.ts";

/** The sources `memory events --from` accepts. */
export const EXTRACT_SOURCES = ["chat", "transcript", "patch", "term", "ledger", "bus"] as const;
export type ExtractSource = (typeof EXTRACT_SOURCES)[number];

/** Below this mean edit confidence a chat is not trusted alone (seed: "置信度低"). */
export const CHAT_CONFIDENCE_FLOOR = 0.6;

export interface ExtractOptions {
  /** One source only; default: the seed's fallback chain. */
  from?: ExtractSource;
  /** Workspace root, for `bus` and `ledger` (default: the run's workspace is unknown, so they need it). */
  root?: string;
  /** Write `<run>/events.jsonl` (default true). */
  write?: boolean;
}

export interface ExtractResult {
  run_id: string;
  events: MemoryEvent[];
  /** The sources used, in the order they contributed. */
  sources: EventSource[];
  /** True when the chat was not trusted alone and the fallbacks added to it. */
  fallback: boolean;
  chat_confidence: number | null;
  warnings: string[];
  path: string;
}

/**
 * Extract `<run>/events.jsonl` from the raw sources. Default chain (seed): a Claude Code
 * transcript when present (exact), followed by the test runs of `term.log` when there is one; else the chat, and when its confidence is below 0.6, it is
 * truncated or it shows no edit, the changed-file list (git work tree named by goal.repo, or
 * raw/changed_files.txt) and `patch.diff`; `term.log` supplies the tests the chat did not show.
 * RUN_INVALID when the run has no raw source at all.
 */
export async function extractRunEvents(
  runDir: string,
  options: ExtractOptions = {},
): Promise<ExtractResult> {
  const paths = labRunPaths(runDir);
  const raw = rawSources(paths);
  const warnings: string[] = [];
  const sources: EventSource[] = [];
  let drafts: DraftEvent[] = [];
  let fallback = false;
  let chatConfidence: number | null = null;
  const need = (file: string | undefined, what: string): string => {
    if (file === undefined) {
      throw new TimewarpError(ErrorCode.RUN_INVALID, `${paths.raw} has no ${what}`, {
        data: { run: paths.dir },
      });
    }
    return file;
  };
  const readText = (file: string) => {
    try {
      return readFileSync(file, "utf8");
    } catch (error) {
      throw fromSystemError(error, `reading ${file}`);
    }
  };
  const fromChat = (file: string) => {
    const r = extractChatEvents(readText(file));
    warnings.push(...r.warnings.map((w) => `raw/${file.split("/").pop()}: ${w}`));
    chatConfidence = r.confidence;
    sources.push("chat");
    return r;
  };
  const fromPatch = async (file: string) => {
    const { extractPatchEvents } = await import("./extract-patch.ts");
    const r = extractPatchEvents(readText(file));
    warnings.push(...r.warnings.map((w) => `raw/patch.diff: ${w}`));
    sources.push("patch");
    return r.events;
  };
  const fromTerm = (file: string) => {
    const r = extractTermEvents(readText(file));
    warnings.push(...r.warnings.map((w) => `raw/term.log: ${w}`));
    sources.push("term");
    return r.events;
  };
  const from = options.from;
  if (from === "chat")
    drafts = fromChat(need(raw.chat, "chat export (cursor.md, chat.md or specstory.md)")).events;
  else if (from === "transcript") {
    const r = await extractTranscriptEvents(
      need(raw.transcript, "transcript.jsonl"),
      options.root ? { root: options.root } : {},
    );
    warnings.push(...r.warnings.map((w) => `raw/transcript.jsonl: ${w}`));
    sources.push("transcript");
    drafts = r.events;
  } else if (from === "patch") drafts = await fromPatch(need(raw.patch, "patch.diff"));
  else if (from === "term") drafts = fromTerm(need(raw.term, "term.log"));
  else if (from === "bus" || from === "ledger") {
    const root = options.root;
    if (root === undefined)
      throw new TimewarpError(ErrorCode.INVALID_INPUT, `--from ${from} needs the workspace root`);
    if (from === "bus") {
      const r = extractBusEvents(workspacePaths(root).events);
      warnings.push(...r.warnings);
      sources.push("bus");
      drafts = r.events;
    } else {
      const { extractLedgerEvents } = await import("./extract-ledger.ts");
      const r = await extractLedgerEvents(root);
      warnings.push(...r.warnings);
      sources.push("ledger");
      drafts = r.events;
    }
  } else if (raw.transcript !== undefined) {
    const r = await extractTranscriptEvents(
      raw.transcript,
      options.root ? { root: options.root } : {},
    );
    warnings.push(...r.warnings.map((w) => `raw/transcript.jsonl: ${w}`));
    sources.push("transcript");
    drafts = r.events;
    // The terminal log holds the test runs made outside the agent's session (the user's own
    // `npm test`, a CI log): they come after what the transcript recorded.
    if (raw.term !== undefined)
      drafts.push(...fromTerm(raw.term).filter((d) => d.tool === "shell"));
  } else {
    if (
      raw.chat === undefined &&
      raw.patch === undefined &&
      raw.term === undefined &&
      raw.changed === undefined
    ) {
      throw new TimewarpError(
        ErrorCode.RUN_INVALID,
        `${paths.dir}: empty run, raw/ holds none of cursor.md, chat.md, specstory.md, transcript.jsonl, patch.diff, term.log, changed_files.txt`,
        { data: { run: paths.dir } },
      );
    }
    let chatEdits = 0;
    if (raw.chat !== undefined) {
      const r = fromChat(raw.chat);
      drafts = r.events;
      chatEdits = r.events.filter((e) => e.tool === "edit").length;
      fallback = r.truncated || chatEdits === 0 || r.confidence < CHAT_CONFIDENCE_FLOOR;
      if (fallback)
        warnings.push(
          `chat confidence ${r.confidence}${r.truncated ? ", truncated" : ""}${chatEdits === 0 ? ", no edits" : ""}: using the fallbacks`,
        );
    } else fallback = true;
    if (fallback) {
      const changed = changedFiles(paths.dir, raw.changed, warnings);
      if (changed.length > 0) {
        sources.push("git");
        merge(
          drafts,
          changed.map((f) => ({
            tool: "edit",
            where: f.path,
            why: "in the changed-file list",
            confidence: 0.8,
            source: "git",
            ...(f.added ? { change: "added" as const } : {}),
          })),
        );
      }
      if (raw.patch !== undefined) merge(drafts, await fromPatch(raw.patch));
    }
    if (raw.term !== undefined && !drafts.some((d) => d.tool === "shell"))
      drafts.push(...fromTerm(raw.term));
  }
  const events = assignPhases(paths.run_id, drafts);
  if (options.write !== false) {
    mkdirSync(paths.dir, { recursive: true });
    writeJsonl(paths.events, events);
  }
  return {
    run_id: paths.run_id,
    events,
    sources,
    fallback,
    chat_confidence: chatConfidence,
    warnings,
    path: paths.events,
  };
}

/**
 * Add fallback edits: a path the chat already has is upgraded in place (exact evidence, higher
 * confidence, the change kind) so its position and `why` stay; new paths are appended.
 */
function merge(into: DraftEvent[], extra: DraftEvent[]): void {
  for (const e of extra) {
    const same = into.find(
      (d) => d.tool === "edit" && d.where !== undefined && stripLine(d.where) === e.where,
    );
    if (same === undefined) {
      into.push(e);
      continue;
    }
    same.confidence = Math.max(same.confidence ?? 0, e.confidence ?? 0);
    if (e.evidence !== undefined && same.source !== "transcript") same.evidence = e.evidence;
    if (e.change !== undefined) same.change = e.change;
    if (e.stats !== undefined) same.stats = e.stats;
    if (e.source === "patch") same.source = "patch";
  }
}

function stripLine(where: string): string {
  return where.replace(/:\d+(-\d+)?$/, "");
}

/** The changed-file list: `git diff --name-only HEAD` + untracked (added) files of goal.repo, else raw/changed_files.txt. */
function changedFiles(
  runDir: string,
  listFile: string | undefined,
  warnings: string[],
): { path: string; added: boolean }[] {
  let repo: string | undefined;
  try {
    repo = readGoal(labRunPaths(runDir).goal).goal.repo;
  } catch {
    repo = undefined;
  }
  if (repo !== undefined) {
    const cwd = resolve(runDir, repo);
    try {
      const git = (args: string[]) =>
        execFileSync("git", ["-C", cwd, ...args], {
          encoding: "utf8",
          stdio: ["ignore", "pipe", "pipe"],
        })
          .split("\n")
          .filter((l) => l !== "");
      const untracked = git(["ls-files", "--others", "--exclude-standard"]);
      const tracked = git(["diff", "--name-only", "HEAD"]).filter((p) => !untracked.includes(p));
      return [
        ...tracked.map((path) => ({ path, added: false })),
        ...untracked.map((path) => ({ path, added: true })),
      ];
    } catch (error) {
      warnings.push(
        `git changed-file list in ${cwd} failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
      );
    }
  }
  if (listFile === undefined) return [];
  return readFileSync(listFile, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((path) => ({ path, added: false }));
}
