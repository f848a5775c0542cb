/**
 * Fetch the real public agent runs `npm run bench:memory -- --real DIR` reads, into a cache
 * outside the repo, with a manifest of exactly which files (repository, commit, path, sha256)
 * and under which license.
 *
 *   tsx scripts/fetch-trajectories.ts [--out DIR] [--from MIRRORS] [--limit N] [--head]
 *
 *   --out DIR      the cache (default ~/.cache/timewarp/trajectories)
 *   --from DIR     read local bare mirrors instead of GitHub: DIR/<owner>+<name>/repo or
 *                  DIR/<owner>+<name> (a bare git directory of the repository)
 *   --limit N      at most N trajectories per source (in path order; verdicts and goals follow their run)
 *   --head         use the mirror's HEAD when it lacks the pinned commit (the manifest says which)
 *
 * Without --from, each repository is cloned bare with `--filter=blob:none` into DIR/.git-cache
 * over https and only the chosen blobs are read. Nothing is written into the repo: small
 * excerpts for the tests live in test/fixtures/memory/real/ with their SOURCE.md.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { writeFileAtomic } from "../src/core/index.ts";

export interface Source {
  repo: string;
  /** The commit the runs were chosen at. */
  commit: string;
  /** SPDX id, or `NOASSERTION` for a public repository that states no license (fetched for local evaluation only, never copied into the repo). */
  license: string;
  /** The license file, copied beside the runs; absent when the repository has none. */
  license_path?: string;
  format: "swe-agent" | "mini-swe-agent" | "cursor" | "lab";
  note: string;
  /** The trajectories (one run each, or one session for `lab`) to take, from the commit's file list. */
  trajectories: (paths: string[]) => string[];
  /** The files that belong to a trajectory: its verdict (SWE-bench report.json), its goal, the lab's session files. */
  companions?: (trajectory: string, paths: Set<string>) => { path: string; kind: CompanionKind }[];
}

export type CompanionKind = "verdict" | "goal" | "session";

const GEMINI = "swebench_results/20251118_gemini-3-pro-74pct";

export const SOURCES: Source[] = [
  {
    repo: "SWE-agent/SWE-agent",
    commit: "3ea751c087f32b16e039a2233dd6eefecef325d5",
    license: "MIT",
    license_path: "LICENSE",
    format: "swe-agent",
    note: "SWE-agent's own test data and demonstrations (SWE-bench tasks, CTF challenges); no verdicts",
    trajectories: (paths) =>
      paths.filter(
        (p) =>
          p.endsWith(".traj") &&
          (p.startsWith("tests/test_data/trajectories/") ||
            p.startsWith("trajectories/demonstrations/")),
      ),
  },
  {
    repo: "SWE-agent/mini-swe-agent",
    commit: "a83fcae82d2a08f0ee0c688f9d137b3566c097f8",
    license: "MIT",
    license_path: "LICENSE.md",
    format: "mini-swe-agent",
    note: "mini-swe-agent's test data; no verdicts",
    trajectories: (paths) =>
      paths.filter((p) => p.startsWith("tests/test_data/") && p.endsWith(".traj.json")),
  },
  {
    repo: "gruckion/mini-swe-agent",
    commit: "d12a71affd95403b036b2bdbd827349b77bfffb9",
    license: "MIT",
    license_path: "LICENSE.md",
    format: "mini-swe-agent",
    note: "a fork of mini-swe-agent holding the 500 SWE-bench Verified runs of mini-swe-agent 1.15.0 with Gemini 3 Pro Preview (2025-11-18, published by SWE-bench/experiments) and each run's SWE-bench report.json",
    trajectories: (paths) =>
      paths.filter((p) => p.startsWith(`${GEMINI}/trajs/`) && p.endsWith(".traj.json")),
    companions: (trajectory, paths) => {
      const id = trajectory.split("/").at(-2) ?? "";
      const report = `${GEMINI}/logs/${id}/report.json`;
      return paths.has(report) ? [{ path: report, kind: "verdict" }] : [];
    },
  },
  {
    repo: "wgu9/cs224v-research",
    commit: "ccb5ffe293c5a640df92309a9405bc422d09b36f",
    license: "NOASSERTION",
    format: "cursor",
    note: "the seed's original agent-memory-lab (v3): real Cursor sessions split per question into runs (2_runs/<session>/<qNN>/raw/cursor.md + goal.json with the lab's field names); no license stated, so fetched for local evaluation only; no verdicts, no patches",
    trajectories: (paths) =>
      paths.filter((p) =>
        /^agent-memory-lab-v3\/data\/2_runs\/[^/]+\/q\d+\/raw\/cursor\.md$/.test(p),
      ),
    companions: (trajectory, paths) => {
      const goal = trajectory.replace(/raw\/cursor\.md$/, "goal.json");
      return paths.has(goal) ? [{ path: goal, kind: "goal" }] : [];
    },
  },
  {
    repo: "wgu9/cs224v-research",
    commit: "ccb5ffe293c5a640df92309a9405bc422d09b36f",
    license: "NOASSERTION",
    format: "lab",
    note: "the same lab's whole sessions (1_sessions/<session>: raw/full_conversation.md, session.json, pairs.json, pairs/<qNN>/{chat.md,goal.json}), for the lab importer",
    trajectories: (paths) =>
      paths.filter((p) =>
        /^agent-memory-lab-v3\/data\/1_sessions\/[^/]+\/raw\/full_conversation\.md$/.test(p),
      ),
    companions: (trajectory, paths) => {
      const dir = trajectory.replace(/raw\/full_conversation\.md$/, "");
      return [...paths]
        .filter((p) => p.startsWith(dir) && p !== trajectory)
        .sort()
        .map((p) => ({ path: p, kind: p.endsWith("goal.json") ? "goal" : "session" }));
    },
  },
];

export interface ManifestFile {
  format: string;
  kind: "trajectory" | CompanionKind;
  repo: string;
  commit: string;
  path: string;
  /** Where it is in the cache, relative to the manifest. */
  file: string;
  sha256: string;
  bytes: number;
  license: string;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function git(gitDir: string, args: string[], input?: string): Buffer {
  const r = spawnSync("git", ["--git-dir", gitDir, ...args], {
    input,
    maxBuffer: 1 << 30,
  });
  if (r.status !== 0)
    throw new Error(`git ${args.join(" ")} (${gitDir}): ${r.stderr.toString().trim()}`);
  return r.stdout;
}

function gitDirFor(source: Source, out: string, from: string | undefined): string {
  const slug = source.repo.replace("/", "+");
  if (from !== undefined) {
    for (const c of [join(from, slug, "repo"), join(from, slug)])
      if (existsSync(join(c, "HEAD"))) return c;
    throw new Error(
      `${source.repo}: no mirror under ${from} (looked for ${slug}/repo and ${slug})`,
    );
  }
  const dir = join(out, ".git-cache", slug);
  if (!existsSync(join(dir, "HEAD"))) {
    mkdirSync(dirname(dir), { recursive: true });
    const r = spawnSync(
      "git",
      ["clone", "--bare", "--filter=blob:none", `https://github.com/${source.repo}.git`, dir],
      { stdio: "inherit" },
    );
    if (r.status !== 0) throw new Error(`cloning ${source.repo} failed`);
  }
  return dir;
}

/** Read many blobs in one `git cat-file --batch`. */
function readBlobs(gitDir: string, commit: string, paths: string[]): Map<string, Buffer> {
  const outBuf = git(
    gitDir,
    ["cat-file", "--batch"],
    paths.map((p) => `${commit}:${p}\n`).join(""),
  );
  const blobs = new Map<string, Buffer>();
  let at = 0;
  for (const p of paths) {
    const nl = outBuf.indexOf(10, at);
    const header = outBuf.subarray(at, nl).toString();
    const m = /^\S+ blob (\d+)$/.exec(header);
    if (m === null) throw new Error(`${commit}:${p}: ${header}`);
    const size = Number(m[1]);
    blobs.set(p, outBuf.subarray(nl + 1, nl + 1 + size));
    at = nl + 1 + size + 1;
  }
  return blobs;
}

export function fetchTrajectories(options: {
  out: string;
  from?: string;
  limit?: number;
  head?: boolean;
  /** The runs to fetch (default SOURCES). */
  sources?: Source[];
}): { manifest: string; files: ManifestFile[]; warnings: string[] } {
  const out = resolve(options.out);
  mkdirSync(out, { recursive: true });
  const files: ManifestFile[] = [];
  const warnings: string[] = [];
  const sources: Record<string, unknown>[] = [];
  for (const source of options.sources ?? SOURCES) {
    const gitDir = gitDirFor(source, out, options.from);
    let commit = source.commit;
    const has = spawnSync("git", ["--git-dir", gitDir, "cat-file", "-e", `${commit}^{commit}`]);
    if (has.status !== 0) {
      if (options.from === undefined)
        git(gitDir, ["fetch", "--filter=blob:none", "origin", commit]);
      else if (options.head === true) {
        const headCommit = git(gitDir, ["rev-parse", "HEAD"]).toString().trim();
        warnings.push(`${source.repo}: mirror lacks ${commit}; using its HEAD ${headCommit}`);
        commit = headCommit;
      } else throw new Error(`${source.repo}: ${gitDir} lacks commit ${commit} (pass --head)`);
    }
    const all = git(gitDir, ["ls-tree", "-r", "--name-only", commit]).toString().split("\n");
    const set = new Set(all);
    let chosen = source.trajectories(all).sort();
    if (options.limit !== undefined) chosen = chosen.slice(0, options.limit);
    const wanted: { path: string; kind: ManifestFile["kind"] }[] = [];
    for (const t of chosen) {
      wanted.push({ path: t, kind: "trajectory" });
      wanted.push(...(source.companions?.(t, set) ?? []));
    }
    const license =
      source.license_path !== undefined
        ? [{ path: source.license_path, kind: "license" as const }]
        : [];
    const blobs = readBlobs(
      gitDir,
      commit,
      [...wanted, ...license].map((w) => w.path),
    );
    const slug = source.repo.replace("/", "+");
    for (const w of [...wanted, ...license]) {
      const data = blobs.get(w.path);
      if (data === undefined) continue;
      const rel = join(source.format, slug, w.path);
      mkdirSync(dirname(join(out, rel)), { recursive: true });
      writeFileAtomic(join(out, rel), data);
      if (w.kind === "license") continue;
      files.push({
        format: source.format,
        kind: w.kind,
        repo: source.repo,
        commit,
        path: w.path,
        file: rel,
        sha256: createHash("sha256").update(data).digest("hex"),
        bytes: data.length,
        license: source.license,
      });
    }
    sources.push({
      repo: source.repo,
      commit,
      license: source.license,
      ...(source.license_path !== undefined
        ? { license_file: join(source.format, slug, source.license_path) }
        : {}),
      format: source.format,
      note: source.note,
      trajectories: chosen.length,
      companions: wanted.length - chosen.length,
    });
  }
  const manifest = join(out, "manifest.json");
  writeFileAtomic(
    manifest,
    `${JSON.stringify({ schema_version: 1, fetched_at: new Date().toISOString(), sources, files }, null, 2)}\n`,
  );
  return { manifest, files, warnings };
}

if (
  import.meta.url === `file://${process.argv[1]}` ||
  process.argv[1]?.endsWith("fetch-trajectories.ts")
) {
  const limit = arg("--limit");
  const from = arg("--from");
  const r = fetchTrajectories({
    out: arg("--out") ?? join(homedir(), ".cache", "timewarp", "trajectories"),
    ...(from !== undefined ? { from } : {}),
    ...(limit !== undefined ? { limit: Number(limit) } : {}),
    head: process.argv.includes("--head"),
  });
  for (const w of r.warnings) console.error(`warning: ${w}`);
  const byFormat = new Map<string, number>();
  for (const f of r.files)
    if (f.kind === "trajectory") byFormat.set(f.format, (byFormat.get(f.format) ?? 0) + 1);
  console.log(
    `${r.files.length} files (${[...byFormat].map(([k, n]) => `${n} ${k}`).join(", ")} trajectories) → ${r.manifest}`,
  );
}
