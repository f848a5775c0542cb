import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ErrorCode, fromSystemError, TimewarpError, workspacePaths } from "../core/index.ts";
import { extractBusEvents } from "./extract-bus.ts";
import { extractChatEvents } from "./extract-chat.ts";
import { extractTermEvents } from "./extract-term.ts";
import { extractTrajectoryEvents } from "./extract-trajectory.ts";
import { extractTranscriptEvents } from "./extract-transcript.ts";
import { readGoal } from "./goal.ts";
import { assignPhases, type DraftEvent } from "./phases.ts";
import { labRunPaths, rawSources, writeJsonl } from "./run-dir.ts";
import type { EventSource, MemoryEvent } from "./schemas.ts";

/** The sources `memory events --from` accepts. */
export const EXTRACT_SOURCES = [
  "chat",
  "transcript",
  "trajectory",
  "patch",
  "term",
  "ledger",
  "bus",
] as const;
export type ExtractSource = (typeof EXTRACT_SOURCES)[number];

/** Below this mean edit confidence a chat is not trusted alone (seed: "置信度低"). */
export const CHAT_CONFIDENCE_FLOOR = 0.6;

/** The confidence a prose claim of an edit keeps when the run's facts do not show it. */
export const CLAIM_CONFIDENCE = 0.3;

/** Most exact first: the source an event names when several saw it. */
const EXACTNESS: readonly EventSource[] = [
  "ledger",
  "bus",
  "transcript",
  "trajectory",
  "patch",
  "git",
  "term",
  "chat",
];

export interface ExtractOptions {
  /** One source only; default: every source the run has, combined. */
  from?: ExtractSource;
  /** Workspace root, for `bus` and `ledger`, and to make a trajectory's absolute paths relative. */
  root?: string;
  /** Write `<run>/events.jsonl` (default true). */
  write?: boolean;
}

export interface ExtractResult {
  run_id: string;
  events: MemoryEvent[];
  /** The sources used, in the order they contributed. */
  sources: EventSource[];
  /** True when the chat is the run's timeline and was not trusted alone (low confidence, truncated, no edit). */
  fallback: boolean;
  chat_confidence: number | null;
  warnings: string[];
  path: string;
}

/**
 * Extract `<run>/events.jsonl` from the raw sources, combined — each adds what it knows, and
 * every event names the most exact source that saw it (`source`) and the others (`also`):
 * - the timeline: the steps (`trajectory.jsonl`, else a Claude Code `transcript.jsonl`), else the chat;
 * - edits from facts: `patch.diff` (the final change) and the changed-file list (git work tree
 *   named by goal.repo, or raw/changed_files.txt) upgrade the timeline's edit of the same file in
 *   place or add the file; a chat's edit claim is only a claim: when the run has facts for edits
 *   and none shows the file, it stays at confidence ≤ 0.3 marked `claim`;
 * - tests: `term.log`'s runs fill in the result of the same command in the timeline, else are added.
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
  const fromChat = async (file: string) => {
    const r = await extractChatEvents(readText(file));
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
  const fromTerm = async (file: string) => {
    const r = await extractTermEvents(readText(file));
    warnings.push(...r.warnings.map((w) => `raw/term.log: ${w}`));
    sources.push("term");
    return r.events;
  };
  const fromTranscript = async (file: string) => {
    const r = await extractTranscriptEvents(file, options.root ? { root: options.root } : {});
    warnings.push(...r.warnings.map((w) => `raw/transcript.jsonl: ${w}`));
    sources.push("transcript");
    return r.events;
  };
  /** A messages-only trajectory's conversation, read as a chat when the run has no chat export. */
  let stepsChat: string | undefined;
  const fromTrajectory = async (file: string) => {
    const r = await extractTrajectoryEvents(file, options.root ? { root: options.root } : {});
    warnings.push(...r.warnings.map((w) => `raw/trajectory.jsonl: ${w}`));
    sources.push("trajectory");
    stepsChat = r.chat;
    return r.events;
  };
  const from = options.from;
  if (from === "chat")
    drafts = (await fromChat(need(raw.chat, "chat export (cursor.md, chat.md or specstory.md)")))
      .events;
  else if (from === "transcript")
    drafts = await fromTranscript(need(raw.transcript, "transcript.jsonl"));
  else if (from === "trajectory")
    drafts = await fromTrajectory(need(raw.trajectory, "trajectory.jsonl"));
  else if (from === "patch") drafts = await fromPatch(need(raw.patch, "patch.diff"));
  else if (from === "term") drafts = await fromTerm(need(raw.term, "term.log"));
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
  } else {
    if (Object.keys(raw).length === 0) {
      throw new TimewarpError(
        ErrorCode.RUN_INVALID,
        `${paths.dir}: empty run, raw/ holds none of trajectory.jsonl, transcript.jsonl, cursor.md, chat.md, specstory.md, patch.diff, term.log, changed_files.txt`,
        { data: { run: paths.dir } },
      );
    }
    // 1. the timeline: the steps when the run has them, else the chat
    const steps =
      raw.trajectory !== undefined
        ? await fromTrajectory(raw.trajectory)
        : raw.transcript !== undefined
          ? await fromTranscript(raw.transcript)
          : undefined;
    let chat = raw.chat !== undefined ? await fromChat(raw.chat) : undefined;
    if (chat === undefined && stepsChat !== undefined) {
      chat = await extractChatEvents(stepsChat);
      warnings.push(...chat.warnings.map((w) => `raw/trajectory.jsonl (as a chat): ${w}`));
      chatConfidence = chat.confidence;
      sources.push("chat");
    }
    // a run of messages only (a conversation imported as steps) has its chat as the timeline
    if (steps !== undefined && (steps.length > 0 || chat === undefined)) drafts = steps;
    else if (chat !== undefined) {
      drafts = chat.events;
      const chatEdits = chat.events.filter((e) => e.tool === "edit").length;
      fallback = chat.truncated || chatEdits === 0 || chat.confidence < CHAT_CONFIDENCE_FLOOR;
      if (fallback)
        warnings.push(
          `chat confidence ${chat.confidence}${chat.truncated ? ", truncated" : ""}${chatEdits === 0 ? ", no edits" : ""}: not trusted alone`,
        );
    }
    // 2. edits from facts: the final patch, the changed-file list
    const facts: DraftEvent[] = [];
    if (raw.patch !== undefined) facts.push(...(await fromPatch(raw.patch)));
    const changed = changedFiles(paths.dir, raw.changed, warnings);
    if (changed.length > 0) {
      sources.push("git");
      facts.push(
        ...changed.map(
          (f): DraftEvent => ({
            tool: "edit",
            where: f.path,
            why: "in the changed-file list",
            confidence: 0.8,
            source: "git",
            ...(f.added ? { change: "added" as const } : {}),
          }),
        ),
      );
    }
    const stepEdits = steps?.some((e) => e.tool === "edit") === true;
    const chatIsTimeline = drafts === chat?.events;
    const hasEditFacts = stepEdits || raw.patch !== undefined || changed.length > 0;
    mergeEdits(drafts, facts);
    // 3. the chat beside the steps: its edits are claims (its tests and plans the steps hold exactly)
    if (!chatIsTimeline && chat !== undefined)
      mergeEdits(
        drafts,
        chat.events.filter((e) => e.tool === "edit"),
      );
    if (hasEditFacts) markClaims(drafts);
    // 4. tests from the terminal log
    if (raw.term !== undefined) mergeTests(drafts, await fromTerm(raw.term));
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

const rank = (s: EventSource | undefined) => {
  const i = EXACTNESS.indexOf(s ?? "chat");
  return i < 0 ? EXACTNESS.length : i;
};

function stripLine(where: string): string {
  return where.replace(/:\d+(-\d+)?$/, "");
}

/** Two names of one file: equal, or one is the other under a directory (`/testbed/src/a.py`, `src/a.py`). */
function samePath(a: string, b: string): boolean {
  const x = stripLine(a).replace(/^\.\//, "");
  const y = stripLine(b).replace(/^\.\//, "");
  return x === y || x.endsWith(`/${y}`) || y.endsWith(`/${x}`);
}

/** `s` becomes the event's source; the one it had moves to `also`. */
function promote(e: DraftEvent, s: EventSource | undefined): void {
  if (s === undefined || s === e.source) return;
  const old = e.source;
  e.source = s;
  e.also = (e.also ?? []).filter((x) => x !== s);
  if (old !== undefined && !e.also.includes(old)) e.also.push(old);
  if (e.also.length === 0) delete e.also;
}

function addAlso(e: DraftEvent, s: EventSource | undefined): void {
  if (s === undefined || s === e.source || e.also?.includes(s) === true) return;
  e.also = [...(e.also ?? []), s];
}

/**
 * Merge edits of another source into the timeline: every timeline edit of the same file records
 * the source (`also`), and the most exact source becomes `source` (with the other's evidence when
 * it has none or was prose); the change kind and counts of the patch are kept; the confidence is
 * the higher. A file the timeline lacks is added after its last edit.
 */
function mergeEdits(into: DraftEvent[], extra: readonly DraftEvent[]): void {
  for (const e of extra) {
    if (e.where === undefined) continue;
    const same = into.filter(
      (d) => d.tool === "edit" && d.where !== undefined && samePath(d.where, e.where ?? ""),
    );
    if (same.length === 0) {
      let at = -1;
      into.forEach((d, i) => {
        if (d.tool === "edit") at = i;
      });
      if (at < 0) {
        // no edit in the timeline: the change came before the last test run seen, if two or more
        const tests = into.flatMap((d, i) => (d.tool === "shell" ? [i] : []));
        at = tests.length >= 2 ? (tests[tests.length - 1] ?? into.length) - 1 : into.length - 1;
      }
      into.splice(at + 1, 0, { ...e });
      continue;
    }
    for (const d of same) {
      const exactFirst = rank(e.source) < rank(d.source);
      if (exactFirst) {
        promote(d, e.source);
        if (e.evidence !== undefined) d.evidence = e.evidence;
        if (e.where !== undefined && !e.where.startsWith("/")) d.where = e.where;
      } else addAlso(d, e.source);
      d.confidence = Math.max(d.confidence ?? 0, e.confidence ?? 0);
      if (d.evidence === undefined && e.evidence !== undefined) d.evidence = e.evidence;
      if (e.change !== undefined && (e.source === "patch" || d.change === undefined))
        d.change = e.change;
      if (e.stats !== undefined) d.stats = e.stats;
      if (d.also?.length === 0) delete d.also;
    }
  }
}

/** A chat edit no fact saw: a claim, kept at low confidence. */
function markClaims(drafts: DraftEvent[]): void {
  for (const d of drafts) {
    if (d.tool !== "edit" || d.source !== "chat") continue;
    d.confidence = Math.min(d.confidence ?? CLAIM_CONFIDENCE, CLAIM_CONFIDENCE);
    d.claim = true;
  }
}

const normCmd = (c: string | undefined) => (c ?? "").replace(/\s+/g, " ").trim();

/**
 * The terminal log's test runs. When every one of them is a run the timeline already has (same
 * command and counts, in order) the log is a copy of the steps and only adds provenance (`also`).
 * Otherwise a timeline run of the same command with no result, or only prose's, takes the log's
 * result (the log becomes its source); the other runs happened outside the agent's session (the
 * user's `npm test`, a CI log) and are added at the end.
 */
function mergeTests(into: DraftEvent[], term: readonly DraftEvent[]): void {
  const runs = term.filter((t) => t.tool === "shell");
  const timeline = into.filter((d) => d.tool === "shell" && d.phase === undefined);
  const sameCmd = (d: DraftEvent, t: DraftEvent) => {
    const a = normCmd(d.cmd);
    const b = normCmd(t.cmd);
    return a === b || a.endsWith(` ${b}`) || b.endsWith(` ${a}`);
  };
  const sameCounts = (d: DraftEvent, t: DraftEvent) =>
    d.result !== undefined &&
    t.result !== undefined &&
    d.result.passed === t.result.passed &&
    d.result.failed === t.result.failed &&
    d.result.skipped === t.result.skipped;
  const fill = (d: DraftEvent, t: DraftEvent) => {
    if (d.result === undefined || d.source === "chat") {
      if (t.result !== undefined) d.result = t.result;
      promote(d, "term");
      d.confidence = Math.max(d.confidence ?? 0, t.confidence ?? 0);
    } else addAlso(d, "term");
  };
  const pairs: [DraftEvent, DraftEvent][] = [];
  let from = 0;
  for (const t of runs) {
    const k = timeline.findIndex(
      (d, i) => i >= from && sameCmd(d, t) && (d.result === undefined || sameCounts(d, t)),
    );
    if (k < 0) break;
    const d = timeline[k];
    if (d !== undefined) pairs.push([d, t]);
    from = k + 1;
  }
  if (runs.length > 0 && pairs.length === runs.length) {
    for (const [d, t] of pairs) fill(d, t);
    return;
  }
  const used = new Set<DraftEvent>();
  for (const t of runs) {
    const same = timeline.find(
      (d) => !used.has(d) && sameCmd(d, t) && (d.result === undefined || d.source === "chat"),
    );
    if (same === undefined) into.push({ ...t });
    else {
      used.add(same);
      fill(same, t);
    }
  }
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
