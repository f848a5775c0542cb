import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, REPO_ROOT, runCli } from "./helpers/cli.ts";

const FIXTURES = resolve(REPO_ROOT, "test/fixtures/memory/runs");

/** A git work tree holding a copy of the labelled runs under .timewarp/memory/runs. */
function workspace(cleanups: (() => void)[]): string {
  const tmp = makeTempDir("tw-mem-");
  cleanups.push(tmp.cleanup);
  execFileSync("git", ["init", "-q", tmp.dir]);
  cpSync(FIXTURES, join(tmp.dir, ".timewarp/memory/runs"), { recursive: true });
  return tmp.dir;
}

type Body = Record<string, unknown> & { error?: { code: string; message: string } };
const json = (args: string[], cwd: string) => {
  const r = runCli([...args, "--json"], { cwd });
  return { status: r.status, body: r.json() as Body };
};

// Each CLI call starts tsx from source (seconds on this machine): this file checks the surface;
// memory-steps.test.ts checks the same steps in-process.
describe("timewarp memory (CLI)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("e2e: a good doc-only run makes a card; the doc-only run that edits requirements.txt rolls back and previews that card", () => {
    const ws = workspace(cleanups);
    mkdirSync(join(ws, ".timewarp/memory/profiles"), { recursive: true });
    writeFileSync(
      join(ws, ".timewarp/memory/profiles/nina.json"),
      JSON.stringify({ user_id: "nina", self_report: "novice" }),
    );
    const ok = json(["memory", "e2e", "r01-doc-only-ok", "--user", "nina"], ws);
    expect(ok.status).toBe(0);
    expect(ok.body).toMatchObject({
      run_id: "r01-doc-only-ok",
      card: { pattern_id: "pc_translate_readme_usage_docs" },
      guards: { rollback: 0, successful: true },
      view: { view: "guided", reason: "self_report=novice" },
    });
    const run = join(ws, ".timewarp/memory/runs/r01-doc-only-ok");
    for (const f of [
      "events.jsonl",
      "guards.jsonl",
      "artifacts/reflection.txt",
      "artifacts/pattern.pc_translate_readme_usage_docs.json",
      "artifacts/view_preview.md",
    ]) {
      expect(existsSync(join(run, f)), f).toBe(true);
    }
    expect(readFileSync(join(run, "artifacts/view_preview.md"), "utf8")).toContain("### Steps");
    expect(
      existsSync(join(ws, ".timewarp/memory/patterns/pc_translate_readme_usage_docs.json")),
    ).toBe(true);

    const bad = json(["memory", "e2e", "r02-doc-requirements-rollback"], ws);
    expect(bad.body).toMatchObject({
      card: null,
      verdict: { outcome: "failure", high_value: false },
      card_skipped: expect.stringContaining("drift left in place: requirements.txt"),
      guards: { rollback: 1, successful: false },
      fired: [
        {
          file: "requirements.txt",
          action: "rollback",
          auto_fixable: true,
          fix_cmd: "git checkout -- requirements.txt",
        },
      ],
      retrieved: ["pc_translate_readme_usage_docs"],
    });
    const preview = readFileSync(
      join(ws, ".timewarp/memory/runs/r02-doc-requirements-rollback/artifacts/view_preview.md"),
      "utf8",
    );
    expect(preview).toContain("pc_translate_readme_usage_docs");
    const guards = readFileSync(
      join(ws, ".timewarp/memory/runs/r02-doc-requirements-rollback/guards.jsonl"),
      "utf8",
    )
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(guards.map((g: { action: string }) => g.action)).toEqual(["ok", "ok", "rollback"]);
    expect(Object.keys(guards[2]).sort()).toEqual(
      [
        "action",
        "auto_fixable",
        "drift_score",
        "evidence_guard",
        "file",
        "fix_cmd",
        "phase",
        "plan_guard",
        "reasons",
        "run_id",
        "scope_guard",
        "step",
        "test_guard",
        "tool",
      ].sort(),
    );
  });

  it("eval over the labelled fixtures: drift precision/recall/ROC-AUC, reuse, SWE-bench predictions; runs untouched", () => {
    const ws = workspace(cleanups);
    const before = readdirSync(join(ws, ".timewarp/memory/runs/r03-dependency-fix")).sort();
    const r = json(
      ["memory", "eval", join(ws, ".timewarp/memory/runs"), "--out", join(ws, "pred.jsonl")],
      ws,
    );
    expect(r.status).toBe(0);
    expect(r.body).toMatchObject({
      // r08: the agent's first attempt fails the suite after its edit — a warn the labels do not call drift
      detection: { precision: 0.75, recall: 1, fp: 1, fn: 0 },
      roc_auc: 1,
      reuse: { reused: 2, correct: 7, judged: 7 },
      predictions: { count: 3 },
      bootstrap: { resamples: 1000, seed: 18 },
      metrics: {
        q1: { drift_detection_rate: { value: 1, ci95: [1, 1], n: 3 }, unrecovered: 3 },
        q2: { reuse_rate: { value: 0.286, n: 7 } },
      },
    });
    const preds = readFileSync(join(ws, "pred.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(preds.map((p: { instance_id: string }) => p.instance_id)).toEqual([
      "demo__httpclient-1234",
      "r04-flaky-retry",
      "r07-specstory-fallback",
    ]);
    expect(Object.keys(preds[0]).sort()).toEqual([
      "instance_id",
      "model_name_or_path",
      "model_patch",
    ]);
    expect(preds[0].model_patch).toContain("+urllib3<2");
    expect(readdirSync(join(ws, ".timewarp/memory/runs/r03-dependency-fix")).sort()).toEqual(
      before,
    );
  });

  it("npm demo flow: transcript + real `node --test` output make a successful run, a card, and retrieval finds it", () => {
    const ws = workspace(cleanups);
    const r = json(["memory", "e2e", "r08-node-test-slugify", "--user", "demo"], ws);
    expect(r.status).toBe(0);
    expect(r.body).toMatchObject({
      sources: ["transcript", "term"],
      card: { pattern_id: "pc_fix_slugify_accented_titles" },
      card_skipped: null,
      guards: {
        successful: true,
        rollback: 0,
        checkpoints_reached: ["reproduce", "modify", "test", "regress"],
        missing_checkpoints: [],
        required_tests: [{ test: "accented titles keep their letters", ran: true, passed: true }],
      },
    });
    const events = readFileSync(
      join(ws, ".timewarp/memory/runs/r08-node-test-slugify/events.jsonl"),
      "utf8",
    )
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(events.map((e: { phase: string; source: string }) => `${e.phase}/${e.source}`)).toEqual([
      "reproduce/transcript",
      "modify/transcript",
      "test/term",
      "regress/term",
    ]);
    expect(events[2].result).toMatchObject({ framework: "node", passed: 2, failed: 1 });
    expect(events[2].result.tests).toContainEqual({
      name: "accented titles keep their letters",
      status: "fail",
    });
    const found = json(["memory", "retrieve", "slugify drops accented unicode letters"], ws);
    expect(found.status).toBe(0);
    expect(
      (found.body.cards as { card: { pattern_id: string } }[]).map((c) => c.card.pattern_id),
    ).toEqual(["pc_fix_slugify_accented_titles"]);
    const none = json(["memory", "retrieve", "configure nginx TLS certificates"], ws);
    expect(none.body.cards).toEqual([]);
    expect(none.body.library_size).toBe(1);
  });

  it("errors are one JSON document with a code and a non-zero exit; humans get text", () => {
    const ws = workspace(cleanups);
    mkdirSync(join(ws, ".timewarp/memory/runs/empty/raw"), { recursive: true });
    writeFileSync(join(ws, ".timewarp/memory/runs/empty/goal.json"), '{"objective": "x"}');
    const empty = json(["memory", "events", "empty"], ws);
    expect(empty.status).toBe(1);
    expect(empty.body.error).toMatchObject({
      code: "RUN_INVALID",
      message: expect.stringContaining("empty run"),
    });
    const flag = json(["memory", "events", "empty", "--from", "carrier-pigeon"], ws);
    expect(flag.status).toBe(2);
    expect(flag.body.error?.code).toBe("INVALID_INPUT");
    const human = runCli(["memory", "e2e", "r05-test-tampering"], { cwd: ws });
    expect(human.status).toBe(0);
    expect(human.stdout).toContain("rollback tests/test_calc.py");
    expect(human.stdout).toContain("verdict: failure — required test `pytest tests/test_calc.py`");
  });
});
