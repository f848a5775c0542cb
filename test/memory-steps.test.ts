import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock, parseConfig } from "../src/core/index.ts";
import {
  distillRun,
  extractRun,
  guardRun,
  type LabContext,
  retrieveForTask,
  viewCard,
} from "../src/memory/index.ts";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";

const FIXTURES = resolve(REPO_ROOT, "test/fixtures/memory/runs");

function workspace(cleanups: (() => void)[], git = true): LabContext & { runs: string } {
  const tmp = makeTempDir("tw-mem-");
  cleanups.push(tmp.cleanup);
  if (git) execFileSync("git", ["init", "-q", tmp.dir]);
  cpSync(FIXTURES, join(tmp.dir, ".timewarp/memory/runs"), { recursive: true });
  return {
    root: tmp.dir,
    clock: createFixedClock(new Date("2026-01-01T00:00:00Z")),
    runs: join(tmp.dir, ".timewarp/memory/runs"),
  };
}

const code = (f: () => unknown) => {
  try {
    f();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error("expected an error");
};

describe("memory steps on disk (library API)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("each step alone: events (--from), guards, card, retrieve (counts uses), view routed by profile", async () => {
    const ws = workspace(cleanups);
    expect(await extractRun(ws, "r03-dependency-fix")).toMatchObject({
      sources: ["transcript", "patch"],
      fallback: false,
    });
    const patchOnly = await extractRun(ws, "r03-dependency-fix", { from: "patch" });
    expect(patchOnly).toMatchObject({
      sources: ["patch"],
      events: [{ tool: "edit", where: "requirements.txt:1", change: "modified" }],
    });
    await extractRun(ws, "r03-dependency-fix");
    const g = guardRun(ws, "r03-dependency-fix");
    expect(g.summary).toMatchObject({
      successful: true,
      rollback: 0,
      required_tests: [{ ran: true, passed: true }],
    });
    const card = distillRun(ws, "r03-dependency-fix");
    expect(card.card).toMatchObject({
      pattern_id: "pc_fix_import_error_http",
      triggers: expect.arrayContaining(["dependency fix"]),
    });
    expect(readFileSync(join(ws.root, ".timewarp/events.jsonl"), "utf8")).toContain(
      '"card.created"',
    );
    const hit = retrieveForTask(ws, "ImportError from urllib3 in the http client", { limit: 2 });
    expect(hit.cards.map((c) => [c.card.pattern_id, c.card.uses])).toEqual([
      ["pc_fix_import_error_http", 1],
    ]);
    expect(retrieveForTask(ws, "render a 3D teapot with WebGL")).toMatchObject({
      cards: [],
      library_size: 1,
    });
    mkdirSync(join(ws.root, ".timewarp/memory/profiles"), { recursive: true });
    writeFileSync(
      join(ws.root, ".timewarp/memory/profiles/ann.json"),
      JSON.stringify({ user_id: "ann", self_report: "expert", hist_first_try_success: 0.9 }),
    );
    expect(viewCard(ws, "pc_fix_import_error_http", { user: "ann" })).toMatchObject({
      route: { view: "terse" },
      profile_found: true,
    });
    const guided = viewCard(ws, "pc_fix_import_error_http", { user: "ann", difficulty: "high" });
    expect(guided).toMatchObject({ route: { view: "guided", reason: "difficulty=high" } });
    expect(guided.text).toContain("### Steps");
    expect(viewCard(ws, "pc_fix_import_error_http", { user: "nobody" })).toMatchObject({
      route: { view: "terse" },
      profile_found: false,
    });
    expect(code(() => viewCard(ws, "pc_nope", { user: "ann" })).code).toBe("CARD_NOT_FOUND");
    expect(code(() => viewCard(ws, "pc_fix_import_error_http", { user: "../etc" })).code).toBe(
      "INVALID_INPUT",
    );
  });

  it("an unsuccessful run yields no card unless forced; a reflect command can add to the card, and a failing one is only a warning", async () => {
    const ws = workspace(cleanups);
    await extractRun(ws, "r05-test-tampering");
    const no = distillRun(ws, "r05-test-tampering");
    expect(no.card).toBeNull();
    expect(no.verdict.outcome).toBe("failure");
    expect(no.skipped).toContain("drift left in place: tests/test_calc.py");
    expect(readFileSync(no.reflection, "utf8")).toContain("test tampering");
    await extractRun(ws, "r07-specstory-fallback");
    const script = join(ws.root, "reflect.sh");
    writeFileSync(
      script,
      '#!/bin/sh\ncat >/dev/null\necho \'{"anti_patterns": ["call requests.get without a timeout"]}\'\n',
      { mode: 0o755 },
    );
    const withReflect = distillRun(
      { ...ws, config: configWith({ reflect_command: [script] }) },
      "r07-specstory-fallback",
    );
    expect(withReflect.card?.anti_patterns).toContain("call requests.get without a timeout");
    expect(withReflect.card?.provenance.reflected).toBe(true);
    const broken = distillRun(
      { ...ws, config: configWith({ reflect_command: [join(ws.root, "missing-llm")] }) },
      "r07-specstory-fallback",
    );
    expect(broken.card).not.toBeNull();
    expect(broken.warnings.some((w) => w.startsWith("reflect_command failed"))).toBe(true);
  });

  it("a user-level library receives cards too and serves retrieval in another project", async () => {
    const a = workspace(cleanups);
    const shared = join(a.root, "shared-patterns");
    await extractRun(a, "r04-flaky-retry");
    distillRun({ ...a, config: configWith({ user_patterns_dir: shared }) }, "r04-flaky-retry");
    const b = workspace(cleanups);
    const hits = retrieveForTask(
      { ...b, config: configWith({ user_patterns_dir: shared }) },
      "exponential backoff for the retry helper",
    );
    expect(hits.cards.map((c) => c.card.pattern_id)).toEqual(["pc_add_exponential_backoff_retry"]);
  });

  it("bad input: empty run, missing run, bad goal, torn events line with contradictory lists, truncated chat", async () => {
    const ws = workspace(cleanups, false);
    mkdirSync(join(ws.runs, "empty/raw"), { recursive: true });
    writeFileSync(join(ws.runs, "empty/goal.json"), '{"objective": "x"}');
    await expect(extractRun(ws, "empty")).rejects.toMatchObject({
      code: "RUN_INVALID",
      message: expect.stringContaining("empty run"),
    });
    await expect(extractRun(ws, "no-such-run")).rejects.toMatchObject({ code: "RUN_INVALID" });
    expect(code(() => guardRun(ws, "r01-doc-only-ok")).code).toBe("RUN_INVALID"); // no events.jsonl yet

    writeFileSync(
      join(ws.runs, "r01-doc-only-ok/goal.json"),
      '{"objective": "x", "thresholds": {"warn": 0.9, "rollback": 0.5}}',
    );
    await extractRun(ws, "r01-doc-only-ok");
    const goal = code(() => guardRun(ws, "r01-doc-only-ok"));
    expect(goal).toMatchObject({
      code: "GOAL_INVALID",
      message: expect.stringContaining("thresholds.warn"),
    });

    const r2 = join(ws.runs, "r02-doc-requirements-rollback");
    writeFileSync(
      join(r2, "goal.json"),
      JSON.stringify({
        objective: "docs only",
        whitelist: ["README.md", "requirements.txt"],
        blacklist: ["requirements.txt"],
      }),
    );
    await extractRun(ws, "r02-doc-requirements-rollback");
    const events = readFileSync(join(r2, "events.jsonl"), "utf8");
    writeFileSync(join(r2, "events.jsonl"), `${events}{"run_id":"r02","step":9,"pha`);
    const g = guardRun(ws, "r02-doc-requirements-rollback");
    expect(g.warnings).toEqual([
      'goal: "requirements.txt" is in both whitelist and blacklist; the blacklist wins',
      "events.jsonl line 4: not valid JSON (torn last line), skipped",
    ]);
    expect(g.summary).toMatchObject({ events: 3, rollback: 1 });
    // no git work tree and no ledger operation: the rollback says it cannot fix itself
    expect(g.records[2]).toMatchObject({ action: "rollback", auto_fixable: false });

    const chat = join(ws.runs, "r06-mixed-zh-en/raw/cursor.md");
    writeFileSync(chat, readFileSync(chat, "utf8").replace(/```\n\nI ran[\s\S]*$/, ""));
    const cut = await extractRun(ws, "r06-mixed-zh-en");
    expect(
      cut.warnings.some((w) =>
        /raw\/cursor\.md: line \d+: code fence opened and never closed/.test(w),
      ),
    ).toBe(true);
    expect(cut.fallback).toBe(true);
    expect(cut.events.filter((e) => e.tool === "edit").map((e) => e.where)).toEqual([
      "README.md",
      "docs/guide.md",
    ]);
  });

  it("the changed-file list from git is a fallback source when the chat is not enough", async () => {
    const ws = workspace(cleanups);
    const repo = join(ws.root, "repo");
    mkdirSync(repo);
    execFileSync("git", ["init", "-q", repo]);
    writeFileSync(join(repo, "a.txt"), "a\n");
    execFileSync("git", ["-C", repo, "add", "."]);
    execFileSync("git", [
      "-C",
      repo,
      "-c",
      "user.email=t@t",
      "-c",
      "user.name=t",
      "commit",
      "-qm",
      "init",
    ]);
    writeFileSync(join(repo, "a.txt"), "b\n");
    writeFileSync(join(repo, "new.md"), "n\n");
    const run = join(ws.runs, "git-run");
    mkdirSync(join(run, "raw"), { recursive: true });
    writeFileSync(
      join(run, "goal.json"),
      JSON.stringify({ objective: "touch a", whitelist: ["a.txt"], repo: "../../../../repo" }),
    );
    writeFileSync(
      join(run, "raw/cursor.md"),
      "# t\n_Exported on x from Cursor (1)_\n\n---\n\n**User**\n\ndo it\n\n---\n\n**Cursor**\n\nI will look into it.\n",
    );
    const r = await extractRun(ws, run);
    expect(r.sources).toEqual(["chat", "git"]);
    expect(
      r.events
        .filter((e) => e.tool === "edit")
        .map((e) => e.where)
        .sort(),
    ).toEqual(["a.txt", "new.md"]);
    const g = guardRun(ws, run);
    expect(
      g.records.filter((x) => x.action === "rollback").map((x) => [x.file, x.fix_cmd]),
    ).toEqual([["new.md", "rm -f -- new.md"]]);
  });
});

function configWith(memory: { reflect_command?: string[]; user_patterns_dir?: string }) {
  return parseConfig({ memory }, "test config");
}
