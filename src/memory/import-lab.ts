import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { isRecord, safeRunId } from "./import-common.ts";
import { splitCursorTurns, turnsToSteps } from "./import-cursor.ts";
import type { ImportedRun, TrajectoryImporter } from "./trajectory.ts";

/**
 * The seed's original lab (`agent-memory-lab-v3`): `<lab>/data/1_sessions/<session>/` holds
 * `raw/full_conversation.md` (a Cursor export of the whole conversation) and, per question,
 * `pairs/qNN/goal.json` (`objective`, `allowed_paths`, `forbidden_paths`, `required_tests`,
 * `run_id`, `checkpoints`) beside `pairs/qNN/chat.md`. One run per question: the conversation
 * cut at each user turn (question N is the N-th), with that question's goal. The goal keeps the
 * lab's field names; the goal schema reads them as aliases.
 */

const FULL = join("raw", "full_conversation.md");

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The session directories under what the user named: a session, `1_sessions/`, its parent, or the lab root. */
function sessionDirs(path: string): string[] {
  if (existsSync(join(path, FULL))) return [path];
  for (const sessions of [path, join(path, "1_sessions"), join(path, "data", "1_sessions")]) {
    if (!isDir(sessions)) continue;
    const found = readdirSync(sessions)
      .sort()
      .map((name) => join(sessions, name))
      .filter((dir) => existsSync(join(dir, FULL)));
    if (found.length > 0) return found;
  }
  return [];
}

const USER = /^\*\*User\*\*\s*$/;

/** The first non-blank line after line `i`, trimmed. */
function nextText(lines: string[], i: number): string | undefined {
  for (let k = i + 1; k < lines.length; k++) {
    const t = (lines[k] ?? "").trim();
    if (t !== "") return t;
  }
  return undefined;
}

/**
 * The question a pair's `chat.md` asks: the first line of its user turn (after the lab's
 * `## Current Query-Answer` heading when the pair repeats the previous query as context).
 */
function pairQuestion(chat: string): string | undefined {
  const lines = chat.split("\n");
  const current = lines.findIndex((l) => /^##\s+Current Query-Answer\s*$/.test(l));
  for (let i = Math.max(0, current); i < lines.length; i++)
    if (USER.test(lines[i] ?? "")) return nextText(lines, i);
  return undefined;
}

/** Where each question starts in the conversation (0-based line), in question order. */
function questionStarts(
  dir: string,
  lines: string[],
  userTurns: number[],
  warnings: string[],
): { qid: string; line: number }[] {
  const session = basename(dir);
  const pairsDir = join(dir, "pairs");
  const pairs = isDir(pairsDir)
    ? readdirSync(pairsDir)
        .filter((n) => /^q\d+$/.test(n) && isDir(join(pairsDir, n)))
        .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)))
    : [];
  if (pairs.length === 0)
    return userTurns.map((line, k) => ({ qid: `q${String(k + 1).padStart(2, "0")}`, line }));
  // The lab cut the conversation itself (its pairs/qNN/chat.md): find each pair's question in
  // order, so the goal of qNN goes with the question the lab gave it, even where a prompt pastes
  // an earlier conversation and the lab counted its turns as questions.
  const starts: { qid: string; line: number }[] = [];
  let from = -1;
  for (const qid of pairs) {
    const chatFile = join(pairsDir, qid, "chat.md");
    const question = existsSync(chatFile)
      ? pairQuestion(readFileSync(chatFile, "utf8"))
      : undefined;
    let line: number | undefined;
    if (question !== undefined)
      for (let i = from + 1; i < lines.length && line === undefined; i++)
        if (USER.test(lines[i] ?? "") && nextText(lines, i) === question) line = i;
    if (line === undefined) {
      line = userTurns.find((t) => t > from);
      if (question !== undefined && line !== undefined)
        warnings.push(
          `${session}/pairs/${qid}: its question is not in raw/full_conversation.md after the previous one; the next user turn is taken`,
        );
    }
    if (line === undefined) {
      warnings.push(
        `${session}/pairs/${qid}: no user turn left in raw/full_conversation.md, skipped`,
      );
      continue;
    }
    starts.push({ qid, line });
    from = line;
  }
  return starts;
}

function readGoal(
  file: string,
  where: string,
  warnings: string[],
): Record<string, unknown> | undefined {
  if (!existsSync(file)) {
    warnings.push(`${where}: no goal.json, run imported without a goal`);
    return undefined;
  }
  try {
    const v: unknown = JSON.parse(readFileSync(file, "utf8"));
    if (isRecord(v)) return v;
    warnings.push(`${where}/goal.json: not a JSON object, run imported without a goal`);
  } catch (error) {
    warnings.push(
      `${where}/goal.json: not JSON (${error instanceof Error ? error.message : String(error)}), run imported without a goal`,
    );
  }
  return undefined;
}

function readSession(dir: string, warnings: string[]): ImportedRun[] {
  const session = basename(dir);
  const text = readFileSync(join(dir, FULL), "utf8");
  const { header, turns } = splitCursorTurns(text);
  const lines = text.split("\n");
  const userTurns = turns.filter((t) => t.role === "user").map((t) => t.start);
  const starts = questionStarts(dir, lines, userTurns, warnings);
  return starts.map(({ qid, line }, k) => {
    const slice = lines.slice(line, starts[k + 1]?.line ?? lines.length).join("\n");
    const goal = readGoal(
      join(dir, "pairs", qid, "goal.json"),
      `${session}/pairs/${qid}`,
      warnings,
    );
    const runId = typeof goal?.run_id === "string" ? goal.run_id : `${session}_${qid}`;
    return {
      id: safeRunId(runId),
      steps: turnsToSteps(splitCursorTurns(slice).turns),
      source: { format: "lab", session_id: session, question: qid },
      chat: `${header.trimEnd()}\n\n${slice}`,
      file: join(dir, FULL),
      ...(goal !== undefined ? { goal } : {}),
    };
  });
}

export const labImporter: TrajectoryImporter = {
  format: "lab",
  detect(path, head) {
    return head === "" && sessionDirs(path).length > 0;
  },
  read(path) {
    const warnings: string[] = [];
    const dirs = sessionDirs(path);
    if (dirs.length === 0)
      warnings.push(
        `${path}: no session with ${FULL} (expected <lab>/data/1_sessions/<session>/${FULL})`,
      );
    return { runs: dirs.flatMap((d) => readSession(d, warnings)), warnings };
  },
};
