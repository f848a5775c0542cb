import { createReadStream } from "node:fs";
import { posix } from "node:path";
import { fromSystemError } from "../core/index.ts";
import type { DraftEvent } from "./phases.ts";
import { loadShellParser, readShellCommand, type ShellReading } from "./shell-command.ts";
import { testResultOf } from "./test-output.ts";
import { type TrajectoryStep, TrajectoryStepSchema } from "./trajectory.ts";

export interface TrajectoryExtraction {
  events: DraftEvent[];
  /** Bad lines with their 1-based numbers; the rest was still read. */
  warnings: string[];
  steps: number;
  /** The directory absolute paths were made relative to, when one was found. */
  root?: string;
  /** How many tool calls the run holds. */
  tools: number;
  /**
   * A run of messages only (a Cursor or lab conversation imported as steps): its user and
   * assistant messages as a chat export, for the chat extractor. Absent once a tool call is seen.
   */
  chat?: string;
}

/** A messages-only run's chat is kept up to this many characters. */
const CHAT_MAX = 4_000_000;

const clip = (s: string, n = 4000) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** Where agents' sandboxes keep the repository (SWE-bench images, SWE-agent, OpenHands). */
const CONTAINER_ROOTS = ["/testbed", "/repo", "/workspace", "/app", "/code"];

/** An edit tool's output that says nothing was changed although the harness did not flag an error. */
const EDIT_REFUSED =
  /^(No replacement was performed|Error:|ERROR:|Invalid|The path \S+ does not exist|File already exists|Your proposed edit has introduced new syntax error)/;

interface Pending {
  event: DraftEvent;
  path: string;
  created: boolean;
}

/**
 * Events from `raw/trajectory.jsonl` (the steps an importer wrote), from facts only: an edit
 * tool's step is an edit of its paths (dropped when the harness flagged it an error, or when it
 * only viewed: `str_replace_editor view`); a shell step is read by the shell parser — the files
 * it writes are edits (confidence by how exact the reading is: a redirect 0.9, `cp` 0.8, `touch`
 * 0.6; `python - <<EOF` writes what cannot be named, so no edit), the files it only reads are
 * nothing, a test runner is a test event with the counts read from the step's output and its
 * exit code, and a script the run created itself (`python reproduce.py`) is a reproduction
 * (phase `reproduce`). A file the run created and deleted again (a scratch script) is no edit.
 * Plan tools give plans; prose gives nothing. Streamed line by line: memory is bounded by the
 * longest line and the events, not the file.
 */
export async function extractTrajectoryEvents(
  path: string,
  options: { root?: string } = {},
): Promise<TrajectoryExtraction> {
  await loadShellParser();
  const warnings: string[] = [];
  const reader = new StepReader(options.root, warnings);
  let tools = 0;
  let chat: string | undefined = "";
  let n = 0;
  const handle = (raw: string): void => {
    n++;
    if (raw.trim() === "") return;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      warnings.push(`line ${n}: not valid JSON (torn line?), skipped`);
      return;
    }
    const r = TrajectoryStepSchema.safeParse(json);
    if (!r.success) {
      const issue = r.error.issues[0];
      warnings.push(
        `line ${n}: ${issue ? `${issue.path.join(".") || "(root)"}: ${issue.message}` : "invalid step"}, skipped`,
      );
      return;
    }
    // messages are prose: nothing to keep but their place
    if (r.data.kind === "tool") {
      tools++;
      chat = undefined;
      reader.add(r.data, n);
    } else if (tools === 0 && chat !== undefined && r.data.text !== undefined) {
      const role = r.data.kind === "user" ? "**User**" : "**Cursor**";
      chat += `---\n\n${role}\n\n${r.data.text.trim()}\n\n`;
      if (chat.length > CHAT_MAX) chat = undefined;
    }
  };
  const stream = createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 20 });
  let rest = "";
  try {
    for await (const chunk of stream) {
      const text = rest + (typeof chunk === "string" ? chunk : chunk.toString("utf8"));
      let start = 0;
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
        handle(text.slice(start, nl).replace(/\r$/, ""));
        start = nl + 1;
      }
      rest = text.slice(start);
    }
    if (rest !== "") handle(rest);
  } catch (error) {
    throw fromSystemError(error, `reading trajectory ${path}`);
  } finally {
    stream.destroy();
  }
  return {
    ...reader.finish(),
    warnings,
    steps: n,
    tools,
    ...(tools === 0 && chat !== undefined && chat !== "" ? { chat } : {}),
  };
}

/** The steps' events (pure): see `extractTrajectoryEvents`. */
export function stepsToEvents(
  steps: readonly { step: TrajectoryStep; line: number }[],
  root: string | undefined,
  warnings: string[] = [],
): { events: DraftEvent[]; root?: string } {
  const reader = new StepReader(root, warnings);
  for (const { step, line } of steps) reader.add(step, line);
  return reader.finish();
}

/**
 * Read steps one at a time (a step's output is dropped once read). Absolute paths lose the
 * repository's directory at once: `root` when given, else the `cd` targets seen so far and the
 * sandbox roots; the root most paths sat under is reported at the end. Each kind of step has its
 * own reader: `addEdit`, `addPlan`, `addShell`.
 */
class StepReader {
  private readonly root: string | undefined;
  private readonly warnings: string[];
  /** Directories paths may sit under, with how many paths did. */
  private readonly candidates: Map<string, number>;
  private readonly events: DraftEvent[] = [];
  /** Per path: was it created by the run, and its edit events, for scratch files. */
  private readonly touched = new Map<
    string,
    { created: boolean; events: DraftEvent[]; deleted: boolean }
  >();
  private readonly plans = new Set<string>();
  /** SWE-agent's open file, which its `edit N:M` commands change. */
  private openFile: string | undefined;
  /** The step being read: its time goes on every event it gives. */
  private stamp: string | undefined;

  constructor(root: string | undefined, warnings: string[]) {
    this.root = root;
    this.warnings = warnings;
    this.candidates = new Map(
      (root !== undefined ? [root.replace(/\/$/, "")] : CONTAINER_ROOTS).map((c) => [c, 0]),
    );
  }

  add(step: TrajectoryStep, line: number): void {
    this.stamp = step.ts;
    if (this.root === undefined && step.call === "shell") this.learnRoot(step.command);
    if (step.call === "edit") this.addEdit(step, line);
    else if (step.call === "plan") this.addPlan(step);
    else if (step.call === "shell" && step.command !== undefined)
      this.addShell(step, step.command, line);
  }

  finish(): { events: DraftEvent[]; root?: string } {
    // a scratch file: created by the run and deleted again — never part of the change
    const scratch = new Set<DraftEvent>();
    for (const [, t] of this.touched)
      if (t.created && t.deleted) for (const e of t.events) scratch.add(e);
    let best: string | undefined;
    let most = 0;
    for (const [c, count] of this.candidates)
      if (count > most) {
        best = c;
        most = count;
      }
    const root = this.root ?? best;
    return {
      events: this.events.filter((e) => !scratch.has(e)),
      ...(root !== undefined ? { root } : {}),
    };
  }

  /** `cd /abs/dir` at the start of a command: a directory paths may sit under. */
  private learnRoot(command: string | undefined): void {
    const cd = command?.match(/^\s*cd\s+(\/[^\s;&|]+)/)?.[1];
    if (cd === undefined) return;
    const dir = posix.normalize(cd).replace(/\/$/, "");
    if (dir !== "" && !this.candidates.has(dir)) this.candidates.set(dir, 0);
  }

  /** A path relative to the repository: the longest candidate directory it sits under comes off. */
  private rel(p: string): string {
    const clean = posix.normalize(p.replace(/\\/g, "/")).replace(/^\.\//, "");
    if (!clean.startsWith("/")) return clean;
    let best: string | undefined;
    for (const c of this.candidates.keys())
      if (clean.startsWith(`${c}/`) && c.length > (best?.length ?? 0)) best = c;
    if (best === undefined) return clean;
    this.candidates.set(best, (this.candidates.get(best) ?? 0) + 1);
    return clean.slice(best.length + 1);
  }

  private push(e: DraftEvent): void {
    if (this.stamp !== undefined) e.ts = this.stamp;
    this.events.push(e);
  }

  /** An edit event, remembered per path so scratch files can be dropped at the end. */
  private note(p: Pending): void {
    const t = this.touched.get(p.path);
    if (t === undefined)
      this.touched.set(p.path, {
        created: p.created,
        events: [p.event],
        deleted: p.event.change === "deleted",
      });
    else {
      t.events.push(p.event);
      t.deleted = p.event.change === "deleted";
    }
    this.push(p.event);
  }

  /** An edit tool's step: one edit event per path, unless it only viewed or was refused. */
  private addEdit(step: TrajectoryStep, line: number): void {
    const tool = step.tool ?? step.call ?? "tool";
    const input = step.input ?? {};
    const command = typeof input.command === "string" ? input.command : undefined;
    if (command === "view" || command === "undo_edit") return;
    if (step.is_error === true || EDIT_REFUSED.test((step.output ?? "").trimStart())) return;
    const paths = step.paths ?? [];
    if (paths.length === 0) this.warnings.push(`line ${line}: ${tool} edit names no file`);
    const created =
      command === "create" || /^(Write|write_file|write|create)$/i.test(step.tool ?? "");
    for (const p of paths) {
      const where = this.rel(p);
      this.note({
        path: where,
        created,
        event: {
          tool: "edit",
          where,
          why: `${tool}${command ? ` ${command}` : ""} (trajectory step ${step.i})`,
          confidence: 1,
          ...(step.diff !== undefined ? { evidence: clip(step.diff) } : {}),
          source: "trajectory",
          ...(command === "create" ? { change: "added" as const } : {}),
        },
      });
    }
  }

  /** A plan tool's step: each plan item not seen before. */
  private addPlan(step: TrajectoryStep): void {
    for (const text of planTexts(step)) {
      if (this.plans.has(text)) continue;
      this.plans.add(text);
      this.push({ tool: "plan", why: clip(text, 2000), source: "trajectory", confidence: 1 });
    }
  }

  /** A shell step: the files it writes, then the test it runs or the reproduction script. */
  private addShell(step: TrajectoryStep, command: string, line: number): void {
    const reading = readShellCommand(command);
    if (reading.error && reading.commands.length === 0) {
      this.warnings.push(`line ${line}: shell command does not parse, skipped`);
      return;
    }
    const cmd = clip(command.trim(), 1000);
    const exit = step.exit_code ?? (step.is_error === true ? 1 : null);
    const failed = exit !== null && exit !== 0;
    this.shellEdits(step, command, reading, cmd, failed);
    const test = reading.tests[0];
    if (test !== undefined) {
      const result = testResultOf(step.output, test.framework, exit);
      this.push({
        tool: "shell",
        cmd,
        source: "trajectory",
        confidence: 1,
        ...(result !== undefined ? { result } : {}),
      });
      return;
    }
    const script = reading.scripts
      .map((s) => this.rel(s))
      .find((s) => this.touched.get(s)?.created === true);
    if (script !== undefined) this.push(reproduction(cmd, script, exit));
  }

  /** The edits a shell step makes: SWE-agent's `edit N:M` of the open file, then the files it writes. */
  private shellEdits(
    step: TrajectoryStep,
    command: string,
    reading: ShellReading,
    cmd: string,
    failed: boolean,
  ): void {
    if (
      reading.editsOpenFile &&
      this.openFile !== undefined &&
      !failed &&
      !EDIT_REFUSED.test((step.output ?? "").trimStart())
    )
      this.note({
        path: this.openFile,
        created: false,
        event: {
          tool: "edit",
          where: this.openFile,
          why: `edit of the open file (trajectory step ${step.i})`,
          confidence: 0.9,
          evidence: clip(command),
          source: "trajectory",
        },
      });
    const opened = reading.opened[reading.opened.length - 1];
    if (opened !== undefined) this.openFile = this.rel(opened);
    // a lone command that failed (`sed -i` on a missing file) wrote nothing
    if (failed && reading.commands.length <= 1) return;
    for (const w of reading.writes) {
      const where = this.rel(w.path);
      this.note({
        path: where,
        created:
          w.change === "added" ||
          (/^(>|&>|>\||tee|touch|cp|mv|git mv)$/.test(w.how) && w.change !== "deleted"),
        event: {
          tool: "edit",
          where,
          why: `${w.how} in \`${clip(cmd, 200)}\` (trajectory step ${step.i})`,
          confidence: w.confidence,
          evidence: clip(command),
          source: "trajectory",
          ...(w.change !== undefined ? { change: w.change } : {}),
        },
      });
    }
  }
}

/** The event for running a script the run created: a reproduction, passed when it exited 0. */
function reproduction(cmd: string, script: string, exit: number | null): DraftEvent {
  const failed = exit !== null && exit !== 0;
  return {
    tool: "shell",
    cmd,
    why: `reproduction: runs ${script}, which the run created`,
    source: "trajectory",
    confidence: 0.9,
    phase: "reproduce",
    ...(exit !== null
      ? {
          result: {
            framework: "script",
            passed: failed ? 0 : 1,
            failed: failed ? 1 : 0,
            skipped: 0,
            exit_code: exit,
          },
        }
      : {}),
  };
}

/** The items of a plan tool's input: todos (`content`, `description`), plan steps (`step`), or a plan text. */
function planTexts(step: TrajectoryStep): string[] {
  const input = step.input ?? {};
  const out: string[] = [];
  for (const key of ["todos", "plan", "steps", "items"]) {
    const v = input[key];
    if (typeof v === "string" && v.trim() !== "") out.push(v.trim());
    else if (Array.isArray(v))
      for (const item of v) {
        if (typeof item === "string") out.push(item);
        else if (typeof item === "object" && item !== null) {
          const r = item as Record<string, unknown>;
          const t = r.content ?? r.description ?? r.step ?? r.title ?? r.text;
          if (typeof t === "string" && t.trim() !== "") out.push(t.trim());
        }
      }
  }
  if (out.length === 0 && step.text !== undefined && step.text.trim() !== "")
    out.push(step.text.trim());
  return out;
}
