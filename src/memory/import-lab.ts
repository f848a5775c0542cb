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

function readSession(dir: string, warnings: string[]): ImportedRun[] {
  const session = basename(dir);
  const text = readFileSync(join(dir, FULL), "utf8");
  const { header, turns } = splitCursorTurns(text);
  const lines = text.split("\n");
  const questions = turns.filter((t) => t.role === "user");
  const pairsDir = join(dir, "pairs");
  const pairs = isDir(pairsDir)
    ? readdirSync(pairsDir).filter((n) => /^q\d+$/.test(n) && isDir(join(pairsDir, n)))
    : [];
  if (pairs.length !== questions.length)
    warnings.push(
      `${session}: ${questions.length} questions in raw/full_conversation.md but ${pairs.length} pairs/qNN directories; questions are matched by their number`,
    );
  const runs: ImportedRun[] = [];
  questions.forEach((q, k) => {
    const qid = `q${String(k + 1).padStart(2, "0")}`;
    const next = questions[k + 1];
    const mine = turns.filter(
      (t) => t.start >= q.start && (next === undefined || t.start < next.start),
    );
    const chat = [header.trimEnd(), "", ...lines.slice(q.start, next?.start ?? lines.length)].join(
      "\n",
    );
    let goal: Record<string, unknown> | undefined;
    const goalFile = join(pairsDir, qid, "goal.json");
    if (existsSync(goalFile)) {
      try {
        const v: unknown = JSON.parse(readFileSync(goalFile, "utf8"));
        if (isRecord(v)) goal = v;
        else
          warnings.push(
            `${session}/pairs/${qid}/goal.json: not a JSON object, run imported without a goal`,
          );
      } catch (error) {
        warnings.push(
          `${session}/pairs/${qid}/goal.json: not JSON (${error instanceof Error ? error.message : String(error)}), run imported without a goal`,
        );
      }
    } else warnings.push(`${session}/pairs/${qid}: no goal.json, run imported without a goal`);
    const runId = typeof goal?.run_id === "string" ? goal.run_id : `${session}_${qid}`;
    runs.push({
      id: safeRunId(runId),
      steps: turnsToSteps(mine),
      source: { format: "lab", session_id: session, question: qid },
      chat,
      file: join(dir, FULL),
      ...(goal !== undefined ? { goal } : {}),
    });
  });
  return runs;
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
