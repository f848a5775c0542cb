import { readFileSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, fromSystemError } from "../core/index.ts";
import { normalizePath } from "./goal.ts";
import type { Goal } from "./schemas.ts";

/**
 * The files `git status --porcelain` (v1) lists as modified, added, deleted, renamed (the new
 * name) or untracked: what was already dirty when the run started. Ignored files (`!!`) are not.
 * Quoted paths (`"caf\303\251.md"`) are unquoted. An untracked directory shows as `dir/` and
 * covers what is below it; `git status --porcelain -uall` lists its files instead. Pure.
 */
export function baselineFromGitStatus(porcelain: string): string[] {
  const out = new Set<string>();
  for (const line of porcelain.replace(/\r\n/g, "\n").split("\n")) {
    if (line.length < 4 || line[2] !== " ") continue;
    const xy = line.slice(0, 2);
    if (xy === "!!" || !/^[ MADRCU?T]{2}$/.test(xy)) continue;
    let rest = line.slice(3);
    // "R  old -> new": the file now lives at new
    if (/[RC]/.test(xy)) {
      const arrow = rest.lastIndexOf(" -> ");
      if (arrow >= 0) rest = rest.slice(arrow + 4);
    }
    const path = unquote(rest);
    if (path !== "") out.add(path);
  }
  return [...out];
}

/** Git's C-style quoting of unusual paths: `\"`, `\\`, `\t`, `\n` and octal bytes (UTF-8). */
function unquote(p: string): string {
  if (!(p.startsWith('"') && p.endsWith('"') && p.length >= 2)) return p;
  const bytes: number[] = [];
  const body = p.slice(1, -1);
  const simple: Record<string, number> = { n: 10, t: 9, r: 13, '"': 34, "\\": 92, a: 7, b: 8 };
  for (let i = 0; i < body.length; i++) {
    const c = body[i] ?? "";
    if (c !== "\\") {
      bytes.push(...Buffer.from(c, "utf8"));
      continue;
    }
    const next = body[i + 1] ?? "";
    const oct = body.slice(i + 1, i + 4);
    if (/^[0-7]{3}$/.test(oct)) {
      bytes.push(Number.parseInt(oct, 8));
      i += 3;
    } else {
      bytes.push(simple[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/** Where a run's automatic baseline came from. */
export type BaselineSource = "goal" | "baseline.txt" | "git-status.txt" | "none";

/**
 * The goal with its baseline filled when it lists none: `<run>/raw/baseline.txt` (one path per
 * line, `#` comments) if present, else `<run>/raw/git-status.txt` (the output of
 * `git status --porcelain` the caller saved when the run started). A baseline in goal.json wins.
 */
export function withRunBaseline(
  runDir: string,
  goal: Goal,
): { goal: Goal; source: BaselineSource } {
  if (goal.baseline.length > 0) return { goal, source: "goal" };
  const read = (name: string): string | undefined => {
    const file = join(runDir, "raw", name);
    try {
      return readFileSync(file, "utf8");
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return undefined;
      throw fromSystemError(error, `reading ${file}`);
    }
  };
  const list = read("baseline.txt");
  if (list !== undefined) {
    const baseline = list
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#"))
      .map((l) => normalizePath(l).path);
    return { goal: { ...goal, baseline }, source: "baseline.txt" };
  }
  const status = read("git-status.txt");
  if (status !== undefined)
    return { goal: { ...goal, baseline: baselineFromGitStatus(status) }, source: "git-status.txt" };
  return { goal, source: "none" };
}
