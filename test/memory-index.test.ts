import { readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock, parseConfig } from "../src/core/index.ts";
import {
  createCardIndex,
  distillCard,
  INDEX_FILE,
  type LabContext,
  loadLibrary,
  memoryPaths,
  openLibraryIndex,
  parseGoal,
  retrieveForTask,
  runGuards,
  STAMP_FILE,
  saveCard,
} from "../src/memory/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

const clock = createFixedClock(new Date("2026-01-01T00:00:00Z"));

function card(objective: string, file: string, i: number) {
  const g = parseGoal({ objective, whitelist: ["src/"], required_tests: [`npm test -- ${i}`] });
  if (!g.ok) throw new Error(g.issues.join("; "));
  const events = [
    {
      run_id: `r${i}`,
      step: 0,
      phase: "modify" as const,
      tool: "edit" as const,
      where: file,
      source: "patch" as const,
    },
  ];
  return distillCard({
    run_id: `r${i}`,
    goal: g.value.goal,
    events,
    guards: runGuards(g.value.goal, events),
    clock,
  });
}

const OBJECTIVES: [string, string][] = [
  ["Fix slugify so accented titles keep their letters", "src/slugify.js"],
  ["Pin urllib3 below 2 to fix the TLS handshake in the http client", "requirements.txt"],
  ["Translate the README into Chinese", "README.md"],
  ["Add exponential backoff to the retry helper", "src/retry.py"],
  ["Rename the userProfile schema field to display_name", "src/user_profile.ts"],
  ["配置 nginx 证书并重载", "deploy/nginx.conf"],
];

describe("persisted card index (library-index.ts)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  function workspace(userDir?: string): LabContext & { lib: string } {
    const tmp = makeTempDir("tw-idx-");
    cleanups.push(tmp.cleanup);
    const lib = memoryPaths(tmp.dir).patterns;
    OBJECTIVES.forEach(([o, f], i) => {
      saveCard(lib, card(o, f, i), clock);
    });
    const config = parseConfig(
      userDir !== undefined ? { memory: { user_patterns_dir: userDir } } : {},
      "test config",
    );
    return { root: tmp.dir, clock, config, lib };
  }

  it("is written on first use, reused while the cards are unchanged (a counted use re-stamps it), rebuilt when a card changes", () => {
    const ws = workspace();
    const q = "slugify drops accented unicode letters";
    const first = retrieveForTask(ws, q);
    expect(first.index).toEqual([{ dir: ws.lib, rebuilt: true }]);
    expect(first.cards.map((c) => c.card.pattern_id)).toEqual(["pc_fix_slugify_accented_titles"]);
    expect(JSON.parse(readFileSync(join(ws.lib, STAMP_FILE), "utf8"))).toMatchObject({
      schema_version: 1,
    });
    // the hit's file was rewritten (uses + 1): the stamp follows it, no rebuild
    const second = retrieveForTask(ws, q);
    expect(second.index[0]?.rebuilt).toBe(false);
    expect(second.cards[0]?.card.uses).toBe(2);
    expect(second.cards.map((c) => [c.card.pattern_id, c.score, c.coverage])).toEqual(
      first.cards.map((c) => [c.card.pattern_id, c.score, c.coverage]),
    );
    expect(retrieveForTask(ws, "configure nginx TLS certificates").cards).toEqual([]);
    // a new card: the fingerprint changes, the index is rebuilt and finds it
    saveCard(
      ws.lib,
      card("Configure nginx TLS certificates and reload", "deploy/nginx.conf", 9),
      clock,
    );
    const third = retrieveForTask(ws, "configure nginx TLS certificates", { record: false });
    expect(third.index[0]?.rebuilt).toBe(true);
    expect(third.cards[0]?.card.pattern_id).toBe("pc_configure_nginx_tls_certificates");
    expect(retrieveForTask(ws, q, { record: false }).index[0]?.rebuilt).toBe(false);
  });

  it("a card changed by someone else between open and re-stamp, or a damaged index file, means a rebuild", () => {
    const ws = workspace();
    const q = "retry helper exponential backoff";
    retrieveForTask(ws, q);
    const lib = openLibraryIndex(ws.lib);
    expect(lib.rebuilt).toBe(false);
    const hit = lib.index.search(q)[0];
    const stored = hit === undefined ? undefined : lib.stored(hit.card);
    expect(stored).toBeDefined();
    // another writer edits a different card (same size, new mtime) before we re-stamp ours
    const other = join(ws.lib, "pc_translate_readme_chinese.json");
    const text = readFileSync(other, "utf8");
    writeFileSync(other, text.replace("Translate", "Tr4nslate"));
    utimesSync(other, new Date(), new Date(Date.now() + 5000));
    lib.touched(stored ? [stored.file] : []);
    const after = retrieveForTask(ws, "Tr4nslate the README", { record: false });
    expect(after.index[0]?.rebuilt).toBe(true);
    expect(after.cards[0]?.card.title).toBe("Tr4nslate the README into Chinese");
    writeFileSync(join(ws.lib, INDEX_FILE), "{ torn");
    const torn = retrieveForTask(ws, q, { record: false });
    expect(torn.index[0]?.rebuilt).toBe(true);
    expect(torn.cards[0]?.card.pattern_id).toBe("pc_add_exponential_backoff_retry");
  });

  it("answers exactly as an index built from the cards; a user-level library is indexed too and shadowed by id", () => {
    const user = makeTempDir("tw-idx-user-");
    cleanups.push(user.cleanup);
    const ws = workspace(user.dir);
    // the user library holds a copy of one project card (shadowed) and one of its own
    saveCard(user.dir, card(...(OBJECTIVES[0] as [string, string]), 0), clock);
    saveCard(user.dir, card("Rotate the payment webhook secret", "src/webhook.ts", 7), clock);
    const queries = [
      "slugify accented letters",
      "urllib3 TLS handshake",
      "translate README Chinese",
      "nginx 证书",
      "payment webhook secret rotation",
      "userProfile display_name",
    ];
    const fresh = createCardIndex(loadLibrary([ws.lib]).cards.map((c) => c.card));
    retrieveForTask(ws, "warm up", { record: false });
    for (const q of queries.slice(0, 4)) {
      const persisted = openLibraryIndex(ws.lib).index.search(q);
      expect(persisted.map((h) => [h.card.pattern_id, h.score, h.matched])).toEqual(
        fresh.search(q).map((h) => [h.card.pattern_id, h.score, h.matched]),
      );
    }
    const r = retrieveForTask(ws, queries[4] ?? "", { record: false });
    expect(r.index.map((i) => i.rebuilt)).toEqual([false, false]);
    expect(r.library_size).toBe(7);
    expect(r.cards.map((c) => c.card.pattern_id)).toEqual(["pc_rotate_payment_webhook_secret"]);
    expect(readFileSync(join(user.dir, STAMP_FILE), "utf8")).toContain("fingerprint");
    const slug = retrieveForTask(ws, queries[0] ?? "");
    expect(slug.cards.map((c) => c.card.pattern_id)).toEqual(["pc_fix_slugify_accented_titles"]);
    // the use was counted in the project's copy, the one that shadows the user's
    expect(
      JSON.parse(readFileSync(join(ws.lib, "pc_fix_slugify_accented_titles.json"), "utf8")).uses,
    ).toBe(1);
  });
});
