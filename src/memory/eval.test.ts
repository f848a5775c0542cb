import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock } from "../core/index.ts";
import { evaluateRuns, formatEvalReport, rocAuc } from "./eval.ts";

describe("rocAuc", () => {
  it("is the chance a positive outscores a negative, ties half; null without both classes", () => {
    expect(
      rocAuc([
        { y: true, score: 0.9 },
        { y: false, score: 0.1 },
      ]),
    ).toBe(1);
    expect(
      rocAuc([
        { y: true, score: 0.1 },
        { y: false, score: 0.9 },
      ]),
    ).toBe(0);
    expect(
      rocAuc([
        { y: true, score: 0.5 },
        { y: false, score: 0.5 },
      ]),
    ).toBe(0.5);
    expect(
      rocAuc([
        { y: true, score: 1 },
        { y: true, score: 0.25 },
        { y: false, score: 0.6 },
        { y: false, score: 0 },
      ]),
    ).toBe(0.75);
    expect(rocAuc([{ y: false, score: 0.3 }])).toBeNull();
  });
});

describe("evaluateRuns", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /** The labelled fixtures plus a high-value run: a docs task that edits requirements.txt, leaves it out of its final patch, tests passing. */
  function runsDir(): { runs: string; profiles: string } {
    const root = mkdtempSync(join(tmpdir(), "tw-eval-"));
    dirs.push(root);
    const runs = join(root, "runs");
    cpSync(resolve(import.meta.dirname, "../../test/fixtures/memory/runs"), runs, {
      recursive: true,
    });
    const run = join(runs, "r09-doc-drift-put-back");
    mkdirSync(join(run, "raw"), { recursive: true });
    writeFileSync(
      join(run, "goal.json"),
      JSON.stringify({
        objective: "Translate the README to Chinese, documentation only",
        whitelist: ["README.md", "docs/"],
        blacklist: ["requirements*.txt"],
      }),
    );
    writeFileSync(
      join(run, "labels.json"),
      JSON.stringify({ drift_files: ["requirements.txt"], outcome: "resolved", user: "nina" }),
    );
    const cwd = "/home/dev/docs";
    const tool = (id: string, name: string, input: object) =>
      JSON.stringify({
        type: "assistant",
        cwd,
        message: { role: "assistant", content: [{ type: "tool_use", id, name, input }] },
      });
    const result = (id: string, content: string) =>
      JSON.stringify({
        type: "user",
        cwd,
        message: { role: "user", content: [{ type: "tool_result", tool_use_id: id, content }] },
      });
    writeFileSync(
      join(run, "raw/transcript.jsonl"),
      [
        JSON.stringify({
          type: "user",
          cwd,
          message: { role: "user", content: "Translate the README to Chinese." },
        }),
        tool("t1", "Edit", {
          file_path: `${cwd}/README.md`,
          old_string: "# Project",
          new_string: "# 项目",
        }),
        result("t1", "The file has been updated."),
        tool("t2", "Edit", {
          file_path: `${cwd}/requirements.txt`,
          old_string: "markdown",
          new_string: "markdown==3.5.2",
        }),
        result("t2", "The file has been updated."),
        tool("t3", "Bash", { command: "pytest tests/test_docs.py -q" }),
        result("t3", "...\n3 passed in 0.12s"),
      ].join("\n"),
    );
    writeFileSync(
      join(run, "raw/patch.diff"),
      "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# Project\n+# 项目\n",
    );
    writeFileSync(
      join(run, "raw/trajectory.jsonl"),
      [
        {
          i: 0,
          kind: "tool",
          tool: "Edit",
          call: "edit",
          paths: ["README.md"],
          ts: "2026-01-01T00:00:00Z",
        },
        {
          i: 1,
          kind: "tool",
          tool: "Edit",
          call: "edit",
          paths: ["requirements.txt"],
          ts: "2026-01-01T00:00:20Z",
        },
        {
          i: 2,
          kind: "tool",
          tool: "Bash",
          call: "shell",
          command: "pytest tests/test_docs.py -q",
          output: "3 passed in 0.12s",
          exit_code: 0,
          ts: "2026-01-01T00:00:45Z",
        },
      ]
        .map((x) => JSON.stringify(x))
        .join("\n"),
    );
    const profiles = join(root, "profiles");
    mkdirSync(profiles);
    writeFileSync(
      join(profiles, "nina.json"),
      JSON.stringify({ user_id: "nina", self_report: "novice", pref: "guided" }),
    );
    return { runs, profiles };
  }

  it("judges runs by evidence and reports the seed's metric set with bootstrap intervals, the same each time", async () => {
    const { runs, profiles } = runsDir();
    const clock = createFixedClock(new Date("2026-01-01T00:00:00Z"));
    const options = { runsDir: runs, clock, predictionsPath: null, profilesDir: profiles };
    const r = await evaluateRuns(options);
    expect(r.runs.map((x) => [x.run_id, x.outcome, x.high_value, x.card !== null])).toEqual([
      ["r01-doc-only-ok", "success", false, true],
      ["r02-doc-requirements-rollback", "failure", false, false],
      ["r03-dependency-fix", "success", false, true],
      ["r04-flaky-retry", "success", false, true],
      ["r05-test-tampering", "failure", false, false],
      ["r06-mixed-zh-en", "success", false, true],
      ["r07-specstory-fallback", "success", false, true],
      ["r08-node-test-slugify", "success", false, true],
      ["r09-doc-drift-put-back", "success", true, true],
    ]);
    expect(r.outcomes.success.resolved).toBe(1);
    expect(r.bootstrap).toEqual({ resamples: 1000, seed: 18 });
    const m = r.metrics;
    // labels: r02's requirements.txt, r05's test edit and `|| true`, r09's requirements.txt — all flagged
    expect(m.q1.drift_detection_rate).toMatchObject({ value: 1, ci95: [1, 1], n: 4 });
    expect(m.q1.false_positive_rate.n).toBeGreaterThan(10);
    expect(m.q1.false_positive_rate.value).toBeGreaterThan(0);
    // r09's drift was put back (it is not in the final patch); r02's and r05's never were
    expect(m.q1.unrecovered).toBe(3);
    expect(m.q3.view_match).toMatchObject({ value: 1, n: 1 });
    expect(m.q2.seconds.with_card.n + m.q2.seconds.without_card.n).toBe(1);
    expect([m.q2.seconds.with_card.value, m.q2.seconds.without_card.value]).toContain(45);
    expect(m.q2.reuse_rate.n).toBe(8);
    const ci = m.q2.first_try_success.all.ci95;
    expect(ci?.[0]).toBeLessThanOrEqual(m.q2.first_try_success.all.value ?? -1);
    // a second evaluation, with progress: one call per run, in order, before it is judged
    const seen: string[] = [];
    const again = await evaluateRuns({
      ...options,
      onProgress: (p) => seen.push(`${p.done}/${p.total} ${p.run}`),
    });
    expect(again.metrics).toEqual(m);
    expect(seen).toEqual(r.runs.map((x, i) => `${i}/${r.runs.length} ${x.run_id}`));
    const text = formatEvalReport(r).join("\n");
    expect(text).toContain("drift detection rate   1 [1, 1] (n 4)");
    expect(text).toContain("view match             1 [1, 1] (n 1)");
  });
});
