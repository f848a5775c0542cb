import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { z } from "zod";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  TimewarpError,
  workspacePaths,
  writeFileAtomic,
} from "../core/index.ts";

/** Every file of a memory lab run directory, as the seed lays it out (not a SkillPilot run: runs/ has its own). */
export interface LabRunPaths {
  dir: string;
  run_id: string;
  raw: string;
  goal: string;
  events: string;
  guards: string;
  artifacts: string;
}

export function labRunPaths(dir: string): LabRunPaths {
  const abs = resolve(dir);
  return {
    dir: abs,
    run_id: basename(abs),
    raw: join(abs, "raw"),
    goal: join(abs, "goal.json"),
    events: join(abs, "events.jsonl"),
    guards: join(abs, "guards.jsonl"),
    artifacts: join(abs, "artifacts"),
  };
}

/** `.timewarp/memory/{runs,patterns,profiles}` and the active goal for hooks. */
export function memoryPaths(root: string): {
  runs: string;
  patterns: string;
  profiles: string;
  goal: string;
  eval: string;
} {
  const m = workspacePaths(root).memory;
  return {
    runs: join(m, "runs"),
    patterns: join(m, "patterns"),
    profiles: join(m, "profiles"),
    goal: workspacePaths(root).goal,
    eval: join(m, "eval"),
  };
}

/** A run given as a path (relative to the workspace or the current directory) or as an id under `.timewarp/memory/runs/`. RUN_INVALID when neither is a directory. */
export function resolveRunDir(root: string, ref: string): string {
  const candidates = [
    ...new Set([resolve(root, ref), resolve(ref), join(memoryPaths(root).runs, ref)]),
  ];
  for (const c of candidates) {
    try {
      if (statSync(c).isDirectory()) return c;
    } catch {
      // try the next reading
    }
  }
  throw new TimewarpError(
    ErrorCode.RUN_INVALID,
    `run ${JSON.stringify(ref)} not found: none of ${candidates.join(", ")} is a directory`,
    { data: { run: ref } },
  );
}

/** The raw sources present in `<run>/raw/`. */
export function rawSources(paths: LabRunPaths): {
  chat?: string;
  transcript?: string;
  /** `raw/trajectory.jsonl`, the steps `memory import` writes (src/memory/trajectory.ts). */
  trajectory?: string;
  patch?: string;
  term?: string;
  changed?: string;
} {
  const pick = (...names: string[]) =>
    names.map((n) => join(paths.raw, n)).find((p) => existsSync(p));
  const out: ReturnType<typeof rawSources> = {};
  const chat = pick("cursor.md", "chat.md", "specstory.md");
  const transcript = pick("transcript.jsonl");
  const trajectory = pick("trajectory.jsonl");
  const patch = pick("patch.diff");
  const term = pick("term.log");
  const changed = pick("changed_files.txt");
  if (chat) out.chat = chat;
  if (transcript) out.transcript = transcript;
  if (trajectory) out.trajectory = trajectory;
  if (patch) out.patch = patch;
  if (term) out.term = term;
  if (changed) out.changed = changed;
  return out;
}

/**
 * Read a JSONL file line by line against a schema: bad lines become warnings naming the line
 * (a torn last line from a killed writer among them); the good ones are kept.
 */
export function readJsonl<T>(
  path: string,
  schema: z.ZodType<T>,
): { items: T[]; warnings: string[] } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") {
      throw new TimewarpError(ErrorCode.RUN_INVALID, `${path} does not exist`, {
        data: { file: path },
      });
    }
    throw fromSystemError(error, `reading ${path}`);
  }
  const items: T[] = [];
  const warnings: string[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? "";
    if (raw.trim() === "") continue;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      warnings.push(
        `${basename(path)} line ${i + 1}: not valid JSON${i === lines.length - 1 ? " (torn last line)" : ""}, skipped`,
      );
      continue;
    }
    const r = schema.safeParse(json);
    if (r.success) items.push(r.data);
    else {
      const issue = r.error.issues[0];
      warnings.push(
        `${basename(path)} line ${i + 1}: ${issue ? `${issue.path.join(".") || "(root)"}: ${issue.message}` : "invalid"}, skipped`,
      );
    }
  }
  return { items, warnings };
}

/** Write records as JSONL, atomically (the whole file or nothing). */
export function writeJsonl(path: string, items: readonly unknown[]): void {
  writeFileAtomic(path, items.map((i) => `${JSON.stringify(i)}\n`).join(""));
}
