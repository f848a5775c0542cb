import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fetchTrajectories, type Source } from "../scripts/fetch-trajectories.ts";

/** scripts/fetch-trajectories.ts against a real bare git mirror in a temp dir (no network). */
const temps: string[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) rmSync(t, { recursive: true, force: true });
});

function mirror(): { mirrors: string; commit: string } {
  const root = mkdtempSync(join(tmpdir(), "tw-fetch-"));
  temps.push(root);
  const work = join(root, "work");
  const files: Record<string, string> = {
    LICENSE: "MIT License\n",
    "runs/trajs/a__a-1/a__a-1.traj.json": '{"messages":[]}\n',
    "runs/trajs/b__b-2/b__b-2.traj.json": '{"messages":[1]}\n',
    "runs/logs/a__a-1/report.json": '{"resolved":true}\n',
    "runs/other.txt": "not a run\n",
  };
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(work, p, ".."), { recursive: true });
    writeFileSync(join(work, p), text);
  }
  const git = (cwd: string, ...args: string[]) =>
    execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
  git(work, "init", "-q");
  git(work, "add", "-A");
  git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "runs");
  const commit = git(work, "rev-parse", "HEAD");
  const mirrors = join(root, "mirrors");
  mkdirSync(mirrors);
  git(root, "clone", "-q", "--bare", work, join(mirrors, "acme+runs", "repo"));
  return { mirrors, commit };
}

function source(commit: string): Source {
  return {
    repo: "acme/runs",
    commit,
    license: "MIT",
    license_path: "LICENSE",
    format: "mini-swe-agent",
    note: "test",
    trajectories: (paths) => paths.filter((p) => p.endsWith(".traj.json")),
    companions: (t, paths) => {
      const id = t.split("/").at(-2) ?? "";
      const r = `runs/logs/${id}/report.json`;
      return paths.has(r) ? [{ path: r, kind: "verdict" }] : [];
    },
  };
}

describe("fetch-trajectories", () => {
  it("copies the chosen runs and their verdicts with a manifest of repo, commit, path, sha256 and license", () => {
    const { mirrors, commit } = mirror();
    const out = join(mirrors, "..", "cache");
    const r = fetchTrajectories({ out, from: mirrors, sources: [source(commit)] });
    const manifest = JSON.parse(readFileSync(r.manifest, "utf8"));
    expect(manifest.files.map((f: { path: string; kind: string }) => [f.kind, f.path])).toEqual([
      ["trajectory", "runs/trajs/a__a-1/a__a-1.traj.json"],
      ["verdict", "runs/logs/a__a-1/report.json"],
      ["trajectory", "runs/trajs/b__b-2/b__b-2.traj.json"],
    ]);
    for (const f of manifest.files) {
      const data = readFileSync(join(out, f.file));
      expect(f).toMatchObject({ repo: "acme/runs", commit, license: "MIT", bytes: data.length });
      expect(f.sha256).toBe(createHash("sha256").update(data).digest("hex"));
    }
    // the experiments layout is kept, so the importer finds logs/<id>/report.json
    expect(manifest.files[1].file).toBe("mini-swe-agent/acme+runs/runs/logs/a__a-1/report.json");
    expect(readFileSync(join(out, manifest.sources[0].license_file), "utf8")).toBe("MIT License\n");
  });

  it("takes at most --limit runs per source and refuses a mirror without the pinned commit", () => {
    const { mirrors, commit } = mirror();
    const out = join(mirrors, "..", "cache");
    const r = fetchTrajectories({ out, from: mirrors, limit: 1, sources: [source(commit)] });
    expect(r.files.filter((f) => f.kind === "trajectory")).toHaveLength(1);
    const missing = "0".repeat(40);
    expect(() => fetchTrajectories({ out, from: mirrors, sources: [source(missing)] })).toThrow(
      /lacks commit/,
    );
    const head = fetchTrajectories({ out, from: mirrors, head: true, sources: [source(missing)] });
    expect(head.warnings[0]).toContain(`using its HEAD ${commit}`);
    expect(head.files[0]?.commit).toBe(commit);
  });
});
