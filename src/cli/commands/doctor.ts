import type { Command } from "commander";
import { helpExamples } from "../help-examples.ts";
import { style } from "../output.ts";
import { action } from "../run.ts";

type DoctorReport = Awaited<ReturnType<typeof import("../../hooks/index.ts").diagnose>>;
type Status = DoctorReport["daemon"]["status"];

/** `timewarp doctor`: is the guard rail really on, for each agent installed here? */
export function registerDoctorCommand(program: Command): void {
  program
    .command("doctor")
    .description(
      "check each installed agent's wiring: programs, hooks, trust, last session, the watch daemon, recent hook failures",
    )
    .addHelpText(
      "after",
      [
        "",
        "Every finding is ok, warn or fail, with the command that fixes it. Bare program names",
        "are looked up on this shell's PATH (the agent's may differ).",
        "",
        "Exit codes: 0 when no check fails (warnings allowed), 1 when any check fails,",
        "2 for bad usage. --json prints one document:",
        "  { ok, root, path, agents: [{ agent, installed_at, last_session_at,",
        "    checks: [{ id, status, message, fix? }] }], daemon: {...}, recent_failures: [...] }",
        "",
        "A finding reads:",
        "  claude-code (installed 2025-01-01T10:00:00.000Z)",
        "    ok    program:/usr/lib/node_modules/timewarp/bin/timewarp-hook  … is an executable file",
        "    warn  session  no session yet from claude-code: …",
        "          fix: cd /work/app && claude",
      ].join("\n"),
    )
    .addHelpText(
      "after",
      helpExamples(
        [
          "check the wiring after installing for Claude Code",
          "timewarp install claude-code && timewarp doctor",
        ],
        ["the same checks as one JSON document (exit 1 when one fails)", "timewarp doctor --json"],
      ),
    )
    .action(
      action(async (ctx) => {
        const { diagnose } = await import("../../hooks/index.ts");
        const report = await diagnose({ root: ctx.root, env: process.env, clock: ctx.clock });
        return { json: report, human: formatDoctorReport(report), exitCode: report.ok ? 0 : 1 };
      }),
    );
}

const MARK: Record<Status, (s: string) => string> = {
  ok: (s) => style.green(s),
  warn: (s) => style.yellow(s),
  fail: (s) => style.red(s),
};

function finding(id: string, status: Status, message: string, fix: string | undefined): string[] {
  const lines = [`  ${MARK[status](status.padEnd(5))} ${style.bold(id)}  ${message}`];
  if (fix !== undefined) lines.push(`        fix: ${fix}`);
  return lines;
}

function formatDoctorReport(report: DoctorReport): string {
  const lines = [`timewarp doctor: ${report.root}`];
  if (report.agents.length === 0)
    lines.push(
      `  no agent installed here (no .timewarp/install/*.json); wire one with ${style.bold("timewarp install claude-code|opencode|gemini|codex")}`,
    );
  for (const a of report.agents) {
    lines.push(
      `${style.bold(a.agent)}${a.installed_at === null ? "" : style.dim(` (installed ${a.installed_at})`)}`,
    );
    for (const c of a.checks) lines.push(...finding(c.id, c.status, c.message, c.fix));
  }
  lines.push(style.bold("watch daemon"));
  const d = report.daemon;
  lines.push(...finding("daemon", d.status, d.message, d.fix));
  if (report.recent_failures.length > 0) {
    lines.push(style.bold(`recent hook failures (last ${report.recent_failures.length})`));
    for (const f of report.recent_failures)
      lines.push(
        `  ${f.ts} ${f.event}${f.agent === undefined ? "" : ` [${f.agent}]`}: ${f.message}`,
      );
  }
  const all = [...report.agents.flatMap((a) => a.checks), report.daemon];
  const fails = all.filter((c) => c.status === "fail").length;
  const warns = all.filter((c) => c.status === "warn").length;
  lines.push(
    fails > 0
      ? style.red(`${fails} check(s) failing, ${warns} warning(s)`)
      : warns > 0
        ? style.yellow(`nothing failing, ${warns} warning(s)`)
        : style.green("all good"),
  );
  return lines.join("\n");
}
