import { lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import { join } from "node:path";
import picomatch from "picomatch";
import type { Contract } from "./contract.ts";
import type { JobFailure } from "./taxonomy.ts";

/** One file under reports/, as the inventory and the validator see it. */
export interface ReportFile {
  /** Relative to the run directory: `reports/…`. */
  path: string;
  size: number;
  mtime: string;
}

/**
 * Every regular file under `<runDir>/reports/`. A symlink counts only when its real path stays
 * inside reports/ (seed §7.3: glob matches must all land under reports/).
 */
export function inventoryReports(runDir: string): ReportFile[] {
  const root = join(runDir, "reports");
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
  } catch {
    return [];
  }
  const out: ReportFile[] = [];
  const walk = (dir: string, rel: string) => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (name.includes(".tw-tmp-")) continue;
      const full = join(dir, name);
      const relPath = `${rel}/${name}`;
      try {
        const l = lstatSync(full);
        if (l.isDirectory()) {
          walk(full, relPath);
          continue;
        }
        if (l.isSymbolicLink()) {
          const real = realpathSync(full);
          if (!real.startsWith(`${realRoot}/`)) continue;
        }
        const st = statSync(full);
        if (st.isFile()) out.push({ path: relPath, size: st.size, mtime: st.mtime.toISOString() });
      } catch {
        // vanished or dangling: not an output
      }
    }
  };
  walk(root, "reports");
  return out;
}

export interface OutputCheck {
  path: string;
  non_empty: boolean;
  matched: string[];
  empty: string[];
}

export interface ValidateOutputsResult {
  ok: boolean;
  checks: OutputCheck[];
  missing: string[];
  empty: string[];
  failure?: JobFailure;
}

/**
 * Seed §8 (pure over an inventory): each required glob must match at least one file
 * (OUTPUT_MISSING), and with `non_empty` every match must have size > 0 (OUTPUT_EMPTY).
 * When both happen, OUTPUT_MISSING is reported (a missing file is the larger gap).
 */
export function checkOutputs(
  contract: Contract,
  files: readonly ReportFile[],
): ValidateOutputsResult {
  const checks: OutputCheck[] = [];
  const missing: string[] = [];
  const empty: string[] = [];
  for (const req of contract.outputs.required) {
    const isMatch = picomatch(req.path, { dot: false });
    const matched = files.filter((f) => isMatch(f.path));
    const emptyHere = req.non_empty ? matched.filter((f) => f.size === 0).map((f) => f.path) : [];
    if (matched.length === 0) missing.push(req.path);
    empty.push(...emptyHere);
    checks.push({
      path: req.path,
      non_empty: req.non_empty,
      matched: matched.map((f) => f.path),
      empty: emptyHere,
    });
  }
  let failure: JobFailure | undefined;
  if (missing.length > 0) {
    failure = {
      error_type: "OUTPUT_MISSING",
      message: `required output(s) missing: ${missing.join(", ")}`,
    };
  } else if (empty.length > 0) {
    failure = {
      error_type: "OUTPUT_EMPTY",
      message: `required output(s) empty: ${empty.join(", ")}`,
    };
  }
  return failure
    ? { ok: false, checks, missing, empty, failure }
    : { ok: true, checks, missing, empty };
}

/** validate_outputs on disk: inventory reports/, then check the contract. */
export function validateOutputs(runDir: string, contract: Contract): ValidateOutputsResult {
  return checkOutputs(contract, inventoryReports(runDir));
}
