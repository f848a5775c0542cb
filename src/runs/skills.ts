import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { checkContract } from "./contract.ts";
import { exampleSkillsDir } from "./package-paths.ts";

/** Where subskills are looked up, first match wins: the workspace's, then the package's examples. */
export function skillSearchRoots(cwd: string): string[] {
  return [
    join(cwd, "subskills"),
    join(cwd, ".skillpilot", "subskills"),
    join(exampleSkillsDir(), "subskills"),
  ];
}

/** A subskill folder found on disk (its contract may still be invalid). */
export interface SkillEntry {
  name: string;
  dir: string;
  source: "workspace" | "package";
  version: string | null;
  valid: boolean;
  issues: string[];
  description: string | null;
}

function describe(name: string, dir: string, source: SkillEntry["source"]): SkillEntry {
  const c = checkContract(dir);
  return c.ok
    ? {
        name,
        dir,
        source,
        version: c.value.contract.version,
        valid: true,
        issues: [],
        description: c.value.contract.description ?? null,
      }
    : { name, dir, source, version: null, valid: false, issues: c.issues, description: null };
}

/** Every subskill under the search roots, the first of each name. */
export function listSkills(cwd: string): SkillEntry[] {
  const seen = new Map<string, SkillEntry>();
  const examples = join(exampleSkillsDir(), "subskills");
  for (const root of skillSearchRoots(cwd)) {
    let names: string[];
    try {
      names = readdirSync(root).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = join(root, name);
      if (seen.has(name) || !existsSync(join(dir, "contract.yaml"))) continue;
      seen.set(name, describe(name, dir, root === examples ? "package" : "workspace"));
    }
  }
  return [...seen.values()];
}

/**
 * Resolve `SKILL` for `skill run`: a path to a subskill folder (anything with a `/`), or a name
 * looked up in the search roots. SKILL_NOT_FOUND lists what exists.
 */
export function findSkill(cwd: string, query: string): { name: string; dir: string } {
  if (query.includes("/")) {
    const dir = resolve(cwd, query);
    if (existsSync(dir) && statSync(dir).isDirectory()) {
      return { name: dir.split("/").filter(Boolean).pop() ?? query, dir };
    }
    throw new TimewarpError(ErrorCode.SKILL_NOT_FOUND, `subskill folder ${dir} does not exist`, {
      data: { query },
    });
  }
  for (const root of skillSearchRoots(cwd)) {
    const dir = join(root, query);
    if (existsSync(join(dir, "contract.yaml"))) return { name: query, dir };
  }
  const available = listSkills(cwd).map((s) => s.name);
  throw new TimewarpError(
    ErrorCode.SKILL_NOT_FOUND,
    `no subskill ${JSON.stringify(query)} in ${skillSearchRoots(cwd).join(", ")} (have: ${available.join(", ") || "none"})`,
    { data: { query, available } },
  );
}
