/**
 * `npm run demo` — the main job: a full agent session on a copy of examples/demo-project, driven
 * through the same doors an agent uses (hooks on stdin, MCP tools over stdio, the CLI), with every
 * step printed beside the file that holds its evidence.
 *
 *   npm run demo                 # in a fresh temp dir
 *   npm run demo -- DIR          # in DIR (created if absent; must be empty)
 *
 * Nothing is written outside the demo directory.
 */
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const REPO = resolve(import.meta.dirname, "..");
const ENTRY = join(REPO, "src", "cli", "entry.ts");
// The CLI runs from source through tsx's loader, resolved from this repo (not from the demo dir).
const TSX_LOADER = import.meta.resolve("tsx");
const started = performance.now();
const tty = process.stdout.isTTY === true && process.env.NO_COLOR === undefined;
const bold = (s: string) => (tty ? `\x1b[1m${s}\x1b[22m` : s);
const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[22m` : s);
const green = (s: string) => (tty ? `\x1b[32m${s}\x1b[39m` : s);
const red = (s: string) => (tty ? `\x1b[31m${s}\x1b[39m` : s);

// ── the demo directory: <demo>/project is the agent's workspace, <demo>/agent its transcript ──
const demoDir = resolve(process.argv[2] ?? mkdtempSync(join(tmpdir(), "timewarp-demo-")));
mkdirSync(demoDir, { recursive: true });
if (readdirSync(demoDir).length > 0)
  fail(`${demoDir} is not empty; give an empty or new directory`);
const project = join(demoDir, "project");
const agentDir = join(demoDir, "agent");
cpSync(join(REPO, "examples", "demo-project"), project, { recursive: true });
mkdirSync(agentDir);
const transcript = join(agentDir, "transcript.jsonl");
cpSync(join(REPO, "examples", "transcripts", "claude-session.jsonl"), transcript);
cpSync(join(REPO, "examples", "design"), join(project, "design"), { recursive: true });
const SESSION = "7f3c2a10-demo-4b8e-9d11-5a6b7c8d9e0f";
// The agent's PATH has timewarp on it as npm installs it: `timewarp` (here: the CLI from source)
// beside a link to bin/timewarp-hook. The install wires this checkout's own bin/ by its path, so
// the hooks would run without them.
const binDir = join(agentDir, "bin");
mkdirSync(binDir);
symlinkSync(join(REPO, "bin", "timewarp-hook"), join(binDir, "timewarp-hook"));
writeFileSync(
  join(binDir, "timewarp"),
  `#!/bin/sh\nexec '${process.execPath}' --import '${TSX_LOADER}' '${ENTRY}' "$@"\n`,
);
chmodSync(join(binDir, "timewarp"), 0o755);
const env = {
  ...process.env,
  NO_COLOR: "1",
  CLAUDE_PROJECT_DIR: project,
  HOME: agentDir,
  PATH: `${binDir}:${process.env.PATH ?? ""}`,
};

let stepNo = 0;
function step(title: string): void {
  stepNo++;
  console.log(`\n${bold(`${String(stepNo).padStart(2, " ")}. ${title}`)}`);
}
function say(text: string): void {
  for (const line of text.split("\n")) console.log(`    ${line}`);
}
function evidence(path: string): void {
  console.log(`    ${dim("evidence:")} ${relative(demoDir, path) || "."}`);
}
function fail(message: string): never {
  console.error(red(`demo failed: ${message}`));
  stopWatcher();
  process.exit(1);
}
/** The session-start hook starts the project's watch daemon; the demo leaves no process behind. */
function stopWatcher(): void {
  spawnSync(process.execPath, ["--import", TSX_LOADER, ENTRY, "watch", "stop"], {
    cwd: project,
    env,
    encoding: "utf8",
  });
}

/** The CLI, as a hook or a person runs it, from source. */
function cli(
  args: string[],
  input?: string,
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ["--import", TSX_LOADER, ENTRY, ...args], {
    cwd: project,
    env,
    input: input ?? "",
    encoding: "utf8",
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
function cliJson<T>(args: string[]): T {
  const r = cli([...args, "--json"]);
  if (r.status !== 0) fail(`timewarp ${args.join(" ")}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}
let hooksRun = 0;
/**
 * A hook as Claude Code runs it: the command line the install wrote into .claude/settings.json
 * for the payload's `hook_event_name`, through `sh -c`, the payload on stdin.
 */
function hook(payload: Record<string, unknown> & { hook_event_name: string }): {
  status: number | null;
  stdout: string;
  stderr: string;
} {
  hooksRun++;
  const settings = JSON.parse(readFileSync(join(project, ".claude", "settings.json"), "utf8")) as {
    hooks: Record<string, { hooks: { command: string }[] }[]>;
  };
  const command = settings.hooks[payload.hook_event_name]?.[0]?.hooks[0]?.command;
  if (command === undefined) fail(`no ${payload.hook_event_name} hook was installed`);
  const r = spawnSync("sh", ["-c", command], {
    cwd: project,
    env,
    input: JSON.stringify({
      session_id: SESSION,
      transcript_path: transcript,
      cwd: project,
      ...payload,
    }),
    encoding: "utf8",
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
function runTests(label: string): { passed: boolean; log: string } {
  const r = spawnSync(process.execPath, ["--test"], { cwd: project, encoding: "utf8", env });
  const log = `$ npm test   # ${label}\n${r.stdout}${r.stderr}`;
  const pass = /# pass (\d+)/.exec(r.stdout)?.[1] ?? "?";
  const failed = /# fail (\d+)/.exec(r.stdout)?.[1] ?? "?";
  say(`node --test: ${pass} passed, ${failed} failed ${r.status === 0 ? green("✓") : red("✗")}`);
  return { passed: r.status === 0, log };
}

type ToolResult = {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content?: { text?: string }[];
};
async function tool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const r = (await client.callTool({ name, arguments: args })) as ToolResult;
  if (r.isError) fail(`${name}: ${(r.content ?? []).map((c) => c.text ?? "").join("")}`);
  return r.structuredContent ?? {};
}

console.log(bold("timewarp demo"));
say(`demo directory: ${demoDir}`);
say(
  `the agent's workspace is project/ (a copy of examples/demo-project: slugify drops accented letters)`,
);

// 1. wiring
step("Install timewarp into the project for Claude Code");
const install = cliJson<{ files: { path: string; action: string }[] }>(["install", "claude-code"]);
for (const f of install.files ?? []) say(`${f.action.padEnd(9)} ${f.path}`);
evidence(join(project, ".claude", "settings.json"));

// 2. session start through the hook
step("Session start (the SessionStart hook): a snapshot of the workspace");
const t0 = performance.now();
const ss = hook({ hook_event_name: "SessionStart", source: "startup" });
if (ss.status !== 0) fail(`session-start hook: ${ss.stderr}`);
const status = cliJson<{ session_snapshot_id: string; mode: string }>(["status"]);
say(
  `snapshot ${status.session_snapshot_id} in ${Math.round(performance.now() - t0)} ms (process start included)`,
);
// The hook starts the watch daemon in the background; later scans visit only what it saw change.
const watching = (() => {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const w = cliJson<{ running: boolean; pid: number | null; directories: number | null }>([
      "watch",
      "status",
    ]);
    if (w.running || Date.now() > deadline) return w;
    spawnSync("sleep", ["0.1"]);
  }
})();
say(
  watching.running
    ? `watch daemon pid ${watching.pid} watches ${watching.directories} directories: later scans visit only what changed`
    : "no watch daemon (TIMEWARP_WATCH=0 or watch: false): scans walk the tree",
);
evidence(join(project, ".timewarp", "snapshots", status.session_snapshot_id, "snapshot.json"));

// 3. MCP: the agent's tools
const transport = new StdioClientTransport({
  command: process.execPath,
  args: ["--import", TSX_LOADER, ENTRY, "mcp"],
  cwd: project,
  env: env as Record<string, string>,
  stderr: "pipe",
});
const client = new Client({ name: "timewarp-demo", version: "0.1.0" });
await client.connect(transport);
const { tools } = await client.listTools();

step(`Edits through the MCP tools (${tools.length} tools offered): a dry run, then the real edit`);
const editArgs = {
  path: "docs/usage.md",
  searchBlock: 'slugify("Hello, World!"); // "hello-world"',
  replaceBlock:
    'slugify("Hello, World!"); // "hello-world"\nslugify("Crème brûlée"); // "creme-brulee"',
  description: "document accented titles",
};
const dry = await tool(client, "ApplyEditBlock", { ...editArgs, dryRun: true });
say("ApplyEditBlock dryRun → previewDiff (nothing written):");
say(
  String(dry.previewDiff)
    .trimEnd()
    .split("\n")
    .map((l) => dim(l))
    .join("\n"),
);
const real = await tool(client, "ApplyEditBlock", editArgs);
say(`ApplyEditBlock → operation ${real.snapshotId}`);
evidence(join(project, ".timewarp", "history", "index.json"));

// 4. the agent's own Edit tool, seen by the hooks
step("The agent's own Edit tool, recorded by PreToolUse/PostToolUse hooks");
const slugifyPath = join(project, "src", "slugify.js");
const original = readFileSync(slugifyPath, "utf8");
const attempt = original.replace(
  '.replace(/[^a-z0-9]+/g, "-")',
  '.replace(/[^\\p{L}0-9]+/gu, "-")',
);
const editInput = {
  file_path: slugifyPath,
  old_string: '.replace(/[^a-z0-9]+/g, "-")',
  new_string: '.replace(/[^\\p{L}0-9]+/gu, "-")',
};
hook({
  hook_event_name: "PreToolUse",
  tool_name: "Edit",
  tool_use_id: "toolu_02",
  tool_input: editInput,
});
writeFileSync(slugifyPath, attempt);
hook({
  hook_event_name: "PostToolUse",
  tool_name: "Edit",
  tool_use_id: "toolu_02",
  tool_input: editInput,
  tool_response: { filePath: slugifyPath, success: true },
});
const termLog: string[] = [];
const first = runTests("after the agent's first attempt");
termLog.push(first.log);

// 5. an edit made through the shell, caught
step("An edit made through the shell (Bash), caught by the stat-cache rescan");
const shellCmd = "printf '\\n## Status\\n\\nAccents: work in progress.\\n' >> README.md";
hook({
  hook_event_name: "PreToolUse",
  tool_name: "Bash",
  tool_use_id: "toolu_sh",
  tool_input: { command: shellCmd },
});
spawnSync("sh", ["-c", shellCmd], { cwd: project });
const post = hook({
  hook_event_name: "PostToolUse",
  tool_name: "Bash",
  tool_use_id: "toolu_sh",
  tool_input: { command: shellCmd },
  tool_response: { stdout: "", exit_code: 0 },
});
if (post.status !== 0) fail(`post-tool-use: ${post.stderr}`);
const history = await tool(client, "GetEditHistory", { limit: 10 });
for (const h of history.history as {
  id: string;
  tool: string;
  affectedFiles: string[];
  description: string;
}[]) {
  say(`${h.id}  ${h.tool.padEnd(16)} ${h.affectedFiles.join(", ")}`);
}
evidence(join(project, ".timewarp", "history"));

// 6. friction issue
step("A friction issue (issue_report): the chat exported from the transcript, secrets redacted");
const issue = await tool(client, "issue_report", {
  task_context: "Make slugify keep accented letters (Crème brûlée → creme-brulee)",
  symptom:
    "Three regex attempts either drop the letters or keep the accents; the accent test keeps failing",
  success_criteria:
    "node --test passes, including 'accented titles keep their letters', with no other test changed",
  suspected_cause:
    "The character class only allows [a-z]; accents need transliteration, not a wider class",
  chat_summary: "Agent retried regexes three times without reproducing the expected slug",
});
const chat = readFileSync(String(issue.chat_path), "utf8");
const leaked = ["ghp_9aZ3kLmN0pQ", "sk-ant-api03-Zx9Y"].filter((s) => chat.includes(s));
if (leaked.length > 0) fail(`secrets leaked into chat.md: ${leaked.join(", ")}`);
say(`issue ${issue.issue_id} on snapshot ${issue.snapshot_id}`);
say(
  `chat.md: ${chat.split("\n").length} lines, ${(chat.match(/\*\*\*REDACTED\*\*\*/g) ?? []).length} secrets redacted (a GitHub token, an API key)`,
);
evidence(String(issue.path));

// 7. travel
step("Travel to the issue's snapshot (the present is backed up first)");
const trip = await tool(client, "timewarp_travel", { snapshot_id: issue.snapshot_id });
say(
  `mode=past, ${trip.written} file(s) rewritten, backup ${trip.backup_id}, ${trip.duration_ms} ms`,
);
if (readFileSync(slugifyPath, "utf8") !== original) fail("travel did not restore src/slugify.js");
say("src/slugify.js is back to the session's original");
evidence(String(trip.backup_path));

// 8. experiment in the past
step("Experiment in the past: reproduce, then try a fix");
runTests("reproduce in the past");
const fixSearch = "    .toLowerCase()\n";
const fixReplace =
  '    .normalize("NFKD")\n    .replace(/[\\u0300-\\u036f]/g, "")\n    .toLowerCase()\n';
await tool(client, "ApplyEditBlock", {
  path: "src/slugify.js",
  searchBlock: fixSearch,
  replaceBlock: fixReplace,
  description: "experiment: NFKD",
});
const exp = runTests("experiment: NFKD + strip combining marks");
if (!exp.passed) fail("the experiment's fix did not pass");
const experimentFile = String(issue.experiment_path);
appendFileSync(
  experimentFile,
  "\n## Demo run\n\n- Changed: `slugify` normalizes to NFKD and strips combining marks (U+0300–U+036F) before lowercasing.\n- Validate: `node --test` — all 3 tests pass.\n- Result: fixed in the past; re-apply in the present.\n",
);
evidence(experimentFile);

// 9. return
step("Return to the present, verified against the backup; the experiment kept as a patch");
const back = await tool(client, "timewarp_return", { save_patch: issue.issue_id });
say(
  `mode=present, verified ${JSON.stringify(back.verified)}, ${back.written} file(s) rewritten, ${back.duration_ms} ms`,
);
if (readFileSync(slugifyPath, "utf8") !== attempt) fail("return did not bring back the present");
say(
  "the present is exactly as it was (the agent's regex attempt is back); the patch is memory, not applied",
);
evidence(String(back.patch_path));

// 10. re-apply in the present
step("Re-apply the proven fix in the present and validate");
await tool(client, "ApplyEditBlock", {
  path: "src/slugify.js",
  searchBlock: '    .toLowerCase()\n    .replace(/[^\\p{L}0-9]+/gu, "-")',
  replaceBlock:
    '    .normalize("NFKD")\n    .replace(/[\\u0300-\\u036f]/g, "")\n    .toLowerCase()\n    .replace(/[^a-z0-9]+/g, "-")',
  description: "fix: transliterate accents (from issue experiment)",
});
const final = runTests("fix re-applied in the present");
termLog.push(final.log);
if (!final.passed) fail("the re-applied fix did not pass");
const fixed = cliJson<{ status: string }>(["issue", "fix", String(issue.issue_id)]);
say(`issue ${issue.issue_id} → ${fixed.status}`);
evidence(join(project, ".timewarp", "issues", String(issue.issue_id), "issue.json"));

// 11. SkillPilot
step("SkillPilot: an evidence run on tclsh (request/ack files, run dir as the source of truth)");
const job = await tool(client, "skill_run", { skill: "summary_health", design: "design/AAA.enc" });
say(
  `job ${job.job_id}: ${job.status === "PASS" ? green(String(job.status)) : red(String(job.status))}`,
);
const runDir = join(project, ".skillpilot", "runs", String(job.job_id));
evidence(join(runDir, "summary.md"));
const badJob = await client.callTool({
  name: "skill_run",
  arguments: { skill: "missing_report", design: "design/AAA.enc" },
});
const bad = JSON.stringify(badJob.structuredContent ?? {});
const badType = /"error_type":"([A-Z_]+)"/.exec(bad)?.[1] ?? "?";
say(`a subskill that misses its contract (missing_report): ${red("FAIL")} ${badType}`);

// 12. memory: guards, card, view
step("Memory: events from the session, drift guards against the goal, a pattern card and its view");
const run = join(project, ".timewarp", "memory", "runs", "demo-slugify");
mkdirSync(join(run, "raw"), { recursive: true });
cpSync(transcript, join(run, "raw", "transcript.jsonl"));
writeFileSync(join(run, "raw", "term.log"), termLog.join("\n"));
const goal = {
  objective: "Fix slugify so accented titles keep their letters",
  whitelist: ["src/", "test/", "docs/", "README.md"],
  blacklist: ["package.json", "package-lock.json"],
  required_tests: ["accented titles keep their letters"],
};
writeFileSync(join(run, "goal.json"), `${JSON.stringify(goal, null, 2)}\n`);
writeFileSync(
  join(project, ".timewarp", "memory", "goal.json"),
  `${JSON.stringify(goal, null, 2)}\n`,
);
const e2e = cliJson<Record<string, unknown>>(["memory", "e2e", run, "--user", "demo"]);
const g = e2e.guards as {
  scored: number;
  ok: number;
  warn: number;
  rollback: number;
  successful: boolean;
};
const card = e2e.card as { pattern_id: string } | null;
const verdict = e2e.verdict as { outcome: string; high_value: boolean; reasons: string[] };
say(
  `${e2e.events} events from ${(e2e.sources as string[]).join(", ")}; guards: ${g.ok} ok, ${g.warn} warn, ${g.rollback} rollback`,
);
say(`verdict from evidence: ${verdict.outcome} — ${verdict.reasons.join("; ")}`);
say(
  card
    ? `pattern card ${card.pattern_id}, distilled from what the run did`
    : `no card: ${String(e2e.card_skipped)}`,
);
const guard = await tool(client, "guard_check", { paths: ["package.json"], tool: "Edit" });
say(
  `guard_check on an edit to package.json: ${red(String(guard.action))} (drift ${guard.drift_score}) — ${(guard.reasons as string[])[0] ?? ""}`,
);
const blocked = hook({
  hook_event_name: "PreToolUse",
  tool_name: "Write",
  tool_use_id: "toolu_bad",
  tool_input: { file_path: join(project, "package.json"), content: "{}" },
});
const denied = (
  JSON.parse(blocked.stdout || "{}") as {
    hookSpecificOutput?: { permissionDecision?: string; permissionDecisionReason?: string };
  }
).hookSpecificOutput;
if (denied?.permissionDecision !== "deny")
  fail(`the PreToolUse hook did not deny the edit: ${blocked.stdout}${blocked.stderr}`);
say(
  `the PreToolUse hook denies that edit (Claude Code's decision form): "${(denied.permissionDecisionReason ?? "").split("\n")[0]}"`,
);
const found = await tool(client, "memory_retrieve", {
  objective: "slugify drops accented unicode letters",
  user: "demo",
});
const cards = found.cards as { pattern_id: string; title: string; score: number }[];
say(`memory_retrieve for a new task: ${cards.length} card(s), view=${found.view}`);
for (const c of cards.slice(0, 2))
  say(`  ${c.pattern_id}  ${c.title}  (score ${Number(c.score).toFixed(2)})`);
evidence(join(run, "artifacts", "view_preview.md"));

await client.close();
const served = cliJson<{ hooks: { served: number } | null }>(["watch", "status"]).hooks;
if (served !== null) {
  console.log(`\n${bold("The watch daemon's hook server")}`);
  say(
    `answered ${served.served} of the ${hooksRun} hook calls: timewarp-hook handed them over without starting Node (the first ${hooksRun - served.served} ran the CLI: the daemon was not up yet)`,
  );
}
stopWatcher();
const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(`\n${green(bold("done"))} in ${seconds} s. Everything is under ${demoDir}:`);
say(`project/.timewarp/        snapshots, backups, issues, the edit ledger, memory, events.jsonl`);
say(`project/.skillpilot/runs/ SkillPilot run directories`);
say(`agent/transcript.jsonl    the session transcript the issue's chat.md was exported from`);
if (!existsSync(join(project, ".timewarp", "events.jsonl"))) fail("no event bus written");
console.log(
  `\n${bold("Look at it all in the dashboard")} (sessions, edits, snapshots, issues, runs, memory):`,
);
say(`timewarp -C ${shellQuote(project)} ui --open`);

/** A path as a shell reads it back: quoted only when it needs to be. */
function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}
