import type { DraftEvent } from "./phases.ts";
import { loadShellParser, readShellCommand } from "./shell-command.ts";
import { parseTestOutput, stripAnsi, testResultOf } from "./test-output.ts";

const PROMPT =
  /^(?:\([\w.-]+\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^$#%]*)?\s*)?[$%❯]\s+(.+)$|^PS [^>]*>\s+(.+)$/;
const EXIT = /(?:exit(?:ed)?(?:\s+with)?(?:\s+code|\s+status)?[:=\s]+|\[exit\s+)(\d+)\]?/gi;

export interface TermExtraction {
  events: DraftEvent[];
  warnings: string[];
}

/**
 * Test events from a terminal log: each prompt line (`$ cmd`, `user@host:~/x$ cmd`, `❯ cmd`)
 * starts a command (a trailing `# comment` is its label, kept as `why`); the command is read by
 * the shell parser (`shell-command.ts`), and one that runs a test runner becomes an event with
 * pass/fail counts — and, for `node --test`, each named test's outcome — parsed from its output,
 * else from its exit code (`exit code: 2`). A log without prompts is read as one run of
 * whichever framework its output shows. Pure but for loading the parser.
 */
export async function extractTermEvents(text: string): Promise<TermExtraction> {
  await loadShellParser();
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  type Section = { cmd: string | undefined; line: number; output: string[]; label?: string };
  const sections: Section[] = [];
  let current: Section = {
    cmd: undefined,
    line: 1,
    output: [],
  };
  for (let i = 0; i < lines.length; i++) {
    const l = stripAnsi(lines[i] ?? "");
    const m = l.match(PROMPT);
    // a trailing shell comment (`$ npm test   # after the fix`) labels the run, it is not the command
    const full = (m?.[1] ?? m?.[2])?.trim();
    const cmd = full?.replace(/\s+#(?:\s.*)?$/, "").trim();
    if (cmd !== undefined && cmd !== "") {
      sections.push(current);
      const label = full
        ?.slice(cmd.length)
        .replace(/^\s*#\s*/, "")
        .trim();
      current = { cmd, line: i + 1, output: [], ...(label ? { label } : {}) };
    } else current.output.push(l);
  }
  sections.push(current);
  const events: DraftEvent[] = [];
  const warnings: string[] = [];
  const sawPrompt = sections.some((s) => s.cmd !== undefined);
  for (const s of sections) {
    const output = s.output.join("\n");
    if (s.cmd === undefined) {
      if (sawPrompt) continue;
      const result = parseTestOutput(output);
      if (result !== undefined) {
        events.push({
          tool: "shell",
          cmd: result.framework,
          source: "term",
          confidence: 0.6,
          result: { ...result, exit_code: lastExit(output) },
        });
      }
      continue;
    }
    const framework = readShellCommand(s.cmd).tests[0]?.framework;
    if (framework === undefined) continue;
    const exit = lastExit(output);
    const result = testResultOf(output, framework, exit);
    if (result === undefined)
      warnings.push(`line ${s.line}: \`${s.cmd}\` has no test summary in its output`);
    events.push({
      tool: "shell",
      cmd: s.cmd,
      ...(s.label !== undefined ? { why: s.label } : {}),
      source: "term",
      confidence: parseTestOutput(output, framework) !== undefined ? 1 : 0.7,
      ...(result !== undefined ? { result } : {}),
    });
  }
  if (events.length === 0) warnings.push("term.log: no test command found");
  return { events, warnings };
}

function lastExit(output: string): number | null {
  let last: number | null = null;
  for (const m of output.matchAll(EXIT)) last = Number.parseInt(m[1] ?? "0", 10);
  return last;
}
