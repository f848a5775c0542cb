import { isAbsolute, relative, sep } from "node:path";
import ignore, { type Ignore } from "ignore";
import { ErrorCode, readJsonValue, TimewarpError, validate } from "../core/index.ts";
import { type Goal, GoalSchema } from "./schemas.ts";

/** A validated goal plus the warnings a person should see (e.g. contradictory lists). */
export interface ParsedGoal {
  goal: Goal;
  warnings: string[];
}

export type GoalResult = { ok: true; value: ParsedGoal } | { ok: false; issues: string[] };

/** Validate a goal document; issues name the field (`weights.scope: …`). Pure. */
export function parseGoal(value: unknown): GoalResult {
  const result = validate(GoalSchema, value);
  if (!result.ok) return result;
  const goal = result.value;
  const warnings: string[] = [];
  const black = new Set(goal.blacklist);
  for (const pattern of goal.whitelist) {
    if (black.has(pattern)) {
      warnings.push(
        `goal: ${JSON.stringify(pattern)} is in both whitelist and blacklist; the blacklist wins`,
      );
    }
  }
  return { ok: true, value: { goal, warnings } };
}

/** Read and validate `goal.json`; GOAL_INVALID naming the file and the field, or saying it is absent. */
export function readGoal(path: string): ParsedGoal {
  const parsed = parseGoal(
    readJsonValue(path, {
      code: ErrorCode.GOAL_INVALID,
      missing: "every run needs a goal.json",
    }),
  );
  if (!parsed.ok) {
    throw new TimewarpError(ErrorCode.GOAL_INVALID, `${path}: ${parsed.issues.join("; ")}`, {
      data: { file: path, issues: parsed.issues },
    });
  }
  return parsed.value;
}

/** A goal with its glob lists compiled once (a PreToolUse hook checks many paths per call). */
export interface CompiledGoal {
  goal: Goal;
  /** Which list decides a path, and the rule that matched (for reasons). */
  classify: (path: string) => PathClass;
}

export interface PathClass {
  /** The path, normalized to forward slashes and relative to the workspace. */
  path: string;
  whitelisted: string | null;
  blacklisted: string | null;
  protectedBy: string | null;
  baseline: boolean;
  /** Absolute or escaping the workspace (`../`): never in scope. */
  outside: boolean;
}

/** Compile the goal's gitignore-like lists (`ignore`): `docs/` matches everything under docs. */
export function compileGoal(goal: Goal): CompiledGoal {
  const white = matcher(goal.whitelist);
  const black = matcher(goal.blacklist);
  const prot = matcher(goal.protected);
  const baseline = new Set(goal.baseline.map((p) => normalizePath(p).path));
  // `dir/` (an untracked directory in `git status`) covers the files below it
  const baselineDirs = goal.baseline
    .filter((p) => p.trim().endsWith("/"))
    .map((p) => `${normalizePath(p).path}/`);
  const inBaseline = (path: string) =>
    baseline.has(path) || baselineDirs.some((d) => path.startsWith(d));
  // a run edits few distinct paths many times: classify each once
  const cache = new Map<string, PathClass>();
  const classify = (raw: string): PathClass => {
    const { path, outside } = normalizePath(raw);
    if (outside || path === "") {
      return {
        path,
        whitelisted: null,
        blacklisted: null,
        protectedBy: null,
        baseline: false,
        outside: true,
      };
    }
    return {
      path,
      whitelisted: white(path),
      blacklisted: black(path),
      protectedBy: prot(path),
      baseline: inBaseline(path),
      outside: false,
    };
  };
  return {
    goal,
    classify(raw) {
      let hit = cache.get(raw);
      if (hit === undefined) {
        hit = classify(raw);
        if (cache.size < 100_000) cache.set(raw, hit);
      }
      return hit;
    },
  };
}

function matcher(patterns: readonly string[]): (path: string) => string | null {
  if (patterns.length === 0) return () => null;
  const ig: Ignore = ignore().add(patterns as string[]);
  return (path) => {
    const r = ig.checkIgnore(path);
    return r.ignored ? (r.rule?.pattern ?? "?") : null;
  };
}

/**
 * Workspace-relative, forward slashes, no `./`. `root` relativizes absolute paths (Claude Code's
 * `file_path` is absolute); an absolute path outside the root, or one climbing out with `..`, is `outside`.
 */
export function normalizePath(raw: string, root?: string): { path: string; outside: boolean } {
  let p = raw.trim();
  if (root !== undefined && isAbsolute(p)) p = relative(root, p);
  p = p.split(sep).join("/").replace(/\\/g, "/");
  while (p.startsWith("./")) p = p.slice(2);
  p = p.replace(/\/{2,}/g, "/");
  if (p.startsWith("/") || /^[A-Za-z]:\//.test(p)) return { path: p, outside: true };
  const parts: string[] = [];
  for (const part of p.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length === 0) return { path: p, outside: true };
      parts.pop();
    } else parts.push(part);
  }
  return { path: parts.join("/"), outside: false };
}
