import { accessSync, constants, readdirSync, statSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import type { Candidate, LocatorRecord } from "./protocol.ts";
import type { JobFailure } from "./taxonomy.ts";

/** What the locator decided: the record for the manifest, and the failure if there is one. */
export interface LocateResult {
  record: LocatorRecord;
  selected?: { enc_path: string; enc_dat_path: string };
  failure?: JobFailure;
}

const SKIP_DIRS = new Set([".skillpilot", ".timewarp", ".git", "node_modules"]);

function statCandidate(encPath: string): Candidate | undefined {
  try {
    const st = statSync(encPath);
    const dat = statSync(`${encPath}.dat`);
    if (!st.isFile() || !dat.isDirectory()) return undefined;
    return {
      path: encPath,
      enc_dat_path: `${encPath}.dat`,
      mtime: st.mtime.toISOString(),
      size: st.size,
    };
  } catch {
    return undefined;
  }
}

/** Every `<name>.enc` file under `cwd` with a `<name>.enc.dat/` directory beside it (depth-limited). */
export function scanDesigns(options: {
  cwd: string;
  name: string;
  maxDepth?: number;
}): Candidate[] {
  const found: Candidate[] = [];
  const maxDepth = options.maxDepth ?? 6;
  const walk = (dir: string, depth: number) => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const full = join(dir, e.name);
      if (e.isDirectory()) {
        if (SKIP_DIRS.has(e.name) || e.name.endsWith(".enc.dat") || depth >= maxDepth) continue;
        walk(full, depth + 1);
      } else if (e.name === `${options.name}.enc`) {
        const c = statCandidate(full);
        if (c) found.push(c);
      }
    }
  };
  walk(options.cwd, 0);
  return found.sort((a, b) => a.path.localeCompare(b.path));
}

/** Choose among scan results (pure): one is taken, several need `--select N` (1-based). */
export function chooseCandidate(
  candidates: readonly Candidate[],
  select: number | undefined,
):
  | { ok: true; candidate: Candidate; reason: "unique_scan_result" | "user_selected" }
  | { ok: false; failure: JobFailure } {
  if (candidates.length === 0) {
    return {
      ok: false,
      failure: {
        error_type: "LOCATOR_FAIL",
        detail_code: "NO_CANDIDATE",
        message: "no design found: expected an X.enc file with an X.enc.dat/ directory beside it",
      },
    };
  }
  if (select !== undefined) {
    const c = candidates[select - 1];
    if (!Number.isInteger(select) || select < 1 || !c) {
      return {
        ok: false,
        failure: {
          error_type: "LOCATOR_FAIL",
          detail_code: "SELECT_OUT_OF_RANGE",
          message: `--select ${select} is out of range: there are ${candidates.length} candidate(s)`,
        },
      };
    }
    return { ok: true, candidate: c, reason: "user_selected" };
  }
  const only = candidates[0];
  if (candidates.length === 1 && only)
    return { ok: true, candidate: only, reason: "unique_scan_result" };
  return {
    ok: false,
    failure: {
      error_type: "LOCATOR_FAIL",
      detail_code: "AMBIGUOUS",
      message: `${candidates.length} candidates found; choose one with --select N (see design.locator.candidates)`,
    },
  };
}

function isExplicit(query: string): boolean {
  return query.includes("/") || query.endsWith(".enc") || isAbsolute(query);
}

/**
 * Seed §3.4: an explicit path (`./AAA.enc`) is taken as given; a bare name (`AAA`) is searched
 * for under `cwd`. Several candidates with no `select` is LOCATOR_FAIL, candidates recorded.
 */
export function locateDesign(options: {
  cwd: string;
  query: string;
  select?: number;
}): LocateResult {
  const { cwd, query, select } = options;
  const unreadable = (path: string) => {
    try {
      accessSync(path, constants.R_OK);
      accessSync(`${path}.dat`, constants.R_OK | constants.X_OK);
      return false;
    } catch {
      return true;
    }
  };
  if (isExplicit(query)) {
    const encPath = resolve(cwd, query);
    const candidate = statCandidate(encPath);
    const record: LocatorRecord = { mode: "explicit_path", query };
    if (!candidate) {
      return {
        record,
        failure: {
          error_type: "LOCATOR_FAIL",
          detail_code: "NOT_FOUND",
          message: `${query}: expected a file ${relative(cwd, encPath) || encPath} with a directory ${relative(cwd, encPath)}.dat beside it`,
        },
      };
    }
    record.candidates = [candidate];
    if (unreadable(encPath)) {
      return {
        record,
        failure: {
          error_type: "LOCATOR_FAIL",
          detail_code: "UNREADABLE",
          message: `${encPath} or its .dat directory is not readable`,
        },
      };
    }
    const selected = { enc_path: candidate.path, enc_dat_path: candidate.enc_dat_path };
    return { record: { ...record, selected, selection_reason: "direct_match" }, selected };
  }
  const candidates = scanDesigns({ cwd, name: query });
  const record: LocatorRecord = { mode: "cwd_scan", query, candidates };
  const choice = chooseCandidate(candidates, select);
  if (!choice.ok) {
    return {
      record,
      failure: {
        ...choice.failure,
        message:
          choice.failure.detail_code === "NO_CANDIDATE"
            ? `no ${query}.enc with ${query}.enc.dat/ beside it under ${cwd}`
            : choice.failure.message,
      },
    };
  }
  const c = choice.candidate;
  if (unreadable(c.path)) {
    return {
      record,
      failure: {
        error_type: "LOCATOR_FAIL",
        detail_code: "UNREADABLE",
        message: `${c.path} or its .dat directory is not readable`,
      },
    };
  }
  const selected = { enc_path: c.path, enc_dat_path: c.enc_dat_path };
  return { record: { ...record, selected, selection_reason: choice.reason }, selected };
}
