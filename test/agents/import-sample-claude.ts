/**
 * Produces the Claude Code sample of test/fixtures/memory/import/claude-code/ (issue 18): the
 * pinned `claude -p` against a scripted model, offline, in a harness workspace; prints where the
 * session file is (the workspace and HOME are kept). Not a test: run it by hand after
 * `npm run build`, `npx tsx test/agents/import-sample-claude.ts`, and copy the file it names.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { agentWorkspace, clientBin, runAgent, startModelServer } from "./harness.ts";
import { type AnthropicStep, anthropicScript } from "./mock-anthropic.ts";

/**
 * Claude Code 2.1.332's `-p` session offers Agent, Bash, Edit, Read, Write (TodoWrite, Glob, Grep
 * and MultiEdit are not offered): the TodoWrite call shows how the client refuses a tool it lacks.
 */
const STEPS: AnthropicStep[] = [
  {
    tools: [
      {
        name: "TodoWrite",
        input: {
          todos: [
            {
              content: "Fix the greeting",
              status: "in_progress",
              activeForm: "Fixing the greeting",
            },
          ],
        },
      },
    ],
  },
  { tools: [{ name: "Read", input: { file_path: "test/greet.test.mjs" } }] },
  {
    tools: [
      {
        name: "Bash",
        input: {
          command: "node --test test/greet.test.mjs",
          description: "Reproduce: the test fails",
        },
      },
    ],
  },
  {
    tools: [
      {
        name: "Edit",
        input: {
          file_path: "src/greet.ts",
          old_string: '"Hello " + name',
          new_string: '"Hello, " + name + "!"',
        },
      },
    ],
  },
  {
    tools: [
      {
        name: "Bash",
        input: { command: "node --test test/greet.test.mjs", description: "The test passes" },
      },
    ],
  },
  { text: "Fixed the greeting; the test passes." },
];

const ws = agentWorkspace("claude-code", { configFiles: [] });
writeFileSync(
  join(ws.root, "test", "greet.test.mjs"),
  [
    'import assert from "node:assert";',
    'import { readFileSync } from "node:fs";',
    'import { test } from "node:test";',
    'test("greets with a comma", () => assert.match(readFileSync("src/greet.ts", "utf8"), /"Hello, "/));',
    "",
  ].join("\n"),
);
const script = anthropicScript(STEPS);
const server = await startModelServer(script.respond);
const env: NodeJS.ProcessEnv = {};
for (const key of Object.keys(process.env))
  if (/^(ANTHROPIC_|CLAUDE_?CODE|CLAUDE_CONFIG_DIR)/.test(key)) env[key] = undefined;
try {
  const run = await runAgent(
    clientBin("claude"),
    [
      "-p",
      "fix the greeting in src/greet.ts so that its test passes",
      "--permission-mode",
      "bypassPermissions",
    ],
    {
      cwd: ws.root,
      env: {
        ...env,
        ...ws.env,
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "sk-ant-test-not-a-key",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        IS_SANDBOX: "1",
      },
      timeoutMs: 120_000,
    },
  );
  process.stdout.write(
    `claude exited ${run.status}; session files under ${join(ws.home, ".claude", "projects")}\n`,
  );
} finally {
  await server.close();
  process.env.TIMEWARP_KEEP_AGENT_HOME = "1";
  ws.cleanup();
}
