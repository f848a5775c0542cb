import type { Command, Option } from "commander";
import { describe, expect, it } from "vitest";
import { helpExamples } from "./help-examples.ts";
import { createProgram } from "./main.ts";

function commandsOf(program: Command): { path: string[]; command: Command }[] {
  const found: { path: string[]; command: Command }[] = [];
  const walk = (c: Command, path: string[]) => {
    for (const sub of c.commands) {
      const p = [...path, sub.name()];
      found.push({ path: p, command: sub });
      walk(sub, p);
    }
  };
  walk(program, []);
  return found;
}

function helpOf(command: Command): string {
  let text = "";
  command.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  command.outputHelp();
  return text;
}

/** The command lines of the help's Examples block (after `$ `). */
function examplesIn(help: string): string[] {
  const at = help.indexOf("\nExamples:\n");
  if (at < 0) return [];
  return help
    .slice(at)
    .split("\n")
    .filter((l) => l.startsWith("  $ "))
    .map((l) => l.slice(4));
}

/** Shell words, with '…' and "…" quoting (enough for the examples). */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g)) {
    out.push(m[1] ?? m[2] ?? m[3] ?? "");
  }
  return out;
}

function findOption(command: Command, flag: string): Option | undefined {
  for (let c: Command | null = command; c !== null; c = c.parent) {
    const o = c.options.find((x) => x.long === flag || x.short === flag);
    if (o !== undefined) return o;
  }
  return undefined;
}

/**
 * Resolve one `timewarp …` invocation against the program: the command it names, or a
 * problem (an unknown command or option, too few or too many arguments).
 */
function resolve(program: Command, argv: string[]): { command: Command } | { problem: string } {
  let at = program;
  let i = 0;
  const positional: string[] = [];
  let descending = true;
  while (i < argv.length) {
    const w = argv[i] as string;
    i++;
    if (w.startsWith("-")) {
      const flag = w.split("=")[0] as string;
      const o = findOption(at, flag);
      if (o === undefined) return { problem: `${at.name()} has no option ${flag}` };
      if (w.includes("=") || !(o.required || o.optional)) continue;
      if (o.variadic) while (i < argv.length && !(argv[i] as string).startsWith("-")) i++;
      else i++;
      continue;
    }
    const sub = descending ? at.commands.find((c) => c.name() === w) : undefined;
    if (sub !== undefined) {
      at = sub;
      continue;
    }
    descending = false;
    positional.push(w);
  }
  if (at.commands.length > 0 && positional.length > 0) {
    return { problem: `${at.name()} has no command ${positional[0]}` };
  }
  const args = at.registeredArguments;
  const required = args.filter((a) => a.required).length;
  const most = args.some((a) => a.variadic) ? Number.POSITIVE_INFINITY : args.length;
  if (positional.length < required || positional.length > most) {
    return {
      problem: `${at.name()} takes ${required}..${most} arguments, got ${positional.length}`,
    };
  }
  return { command: at };
}

function isWithin(command: Command, ancestor: Command): boolean {
  for (let c: Command | null = command; c !== null; c = c.parent) if (c === ancestor) return true;
  return false;
}

describe("--help examples", () => {
  it("format as gh does: a comment over each command line", () => {
    expect(helpExamples(["list them", "timewarp snapshot list"])).toBe(
      "\nExamples:\n  # list them\n  $ timewarp snapshot list",
    );
  });

  it("every command's --help has an Examples block, and each example names real commands and options", () => {
    const program = createProgram();
    const problems: string[] = [];
    let checked = 0;
    for (const { path, command } of commandsOf(program)) {
      const name = path.join(" ");
      const examples = examplesIn(helpOf(command));
      if (examples.length === 0) problems.push(`${name}: no Examples block`);
      let aboutIt = false;
      for (const example of examples) {
        // Each `timewarp …` of a line (joined by && or fed by a pipe) must parse.
        for (const part of example.split(/&&|\|/)) {
          const argv = words(part.replace(/<.*$/, "").trim());
          if (argv[0] !== "timewarp") continue;
          const got = resolve(program, argv.slice(1));
          if ("problem" in got) problems.push(`${name}: "${part.trim()}": ${got.problem}`);
          else if (isWithin(got.command, command)) aboutIt = true;
          checked++;
        }
      }
      if (examples.length > 0 && !aboutIt) problems.push(`${name}: no example runs it`);
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(60);
  });

  it("catches an example that names no command", () => {
    const program = createProgram();
    expect(resolve(program, ["snapshot", "create"])).toHaveProperty("command");
    expect(resolve(program, ["snapshot", "craete"])).toHaveProperty("problem");
    expect(resolve(program, ["snapshot", "create", "--labl", "x"])).toHaveProperty("problem");
    expect(resolve(program, ["travel"])).toHaveProperty("problem");
    expect(
      resolve(program, ["milestone", "create", "--title", "t", "--ops", "a", "b"]),
    ).toHaveProperty("command");
  });
});
