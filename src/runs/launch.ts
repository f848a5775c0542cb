import { ErrorCode, TimewarpError } from "../core/index.ts";
import type { AdapterName } from "./protocol.ts";

/** The adapter settings from `.timewarp/config.json` `skillpilot` (see core config). */
export interface LaunchSettings {
  tclsh: string;
  innovus: string;
  /** Arguments for Innovus; `{boot}` is replaced by the boot script's path. */
  innovus_args: string[];
  /** The site launcher for `dsub-i`: `{cmd}` splices the tool's argv, `{cmd_q}` is it as one shell-quoted string. */
  dsub_template: string;
  /** What the launcher runs: Innovus (the seed's case) or tclsh (sites without Innovus, tests). */
  dsub_tool: "innovus" | "tclsh";
}

/** Quote one argument for a POSIX shell. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'"'"'`)}'`;
}

/**
 * Split a command template into words the way a POSIX shell would for quoting: '…' is literal,
 * "…" allows \\ \" \$ escapes, a backslash outside quotes escapes the next character. No
 * expansion of any kind happens (the template is a word list, not a shell script).
 */
export function splitCommandLine(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] ?? "";
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === "\\" && /[\\"$`]/.test(text[i + 1] ?? "")) word += text[++i];
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\") {
      word += text[++i] ?? "";
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) {
    throw new TimewarpError(
      ErrorCode.CONFIG_INVALID,
      `unbalanced ${quote} in command template ${JSON.stringify(text)}`,
    );
  }
  if (inWord) words.push(word);
  return words;
}

/** A Tcl string literal for any text: double quotes with every special character escaped. */
export function tclQuote(text: string): string {
  return `"${text.replace(/[\\"$[\]{}]/g, (c) => `\\${c}`).replace(/\n/g, "\\n")}"`;
}

function toolArgv(tool: "tclsh" | "innovus", settings: LaunchSettings, bootPath: string): string[] {
  return tool === "tclsh"
    ? [settings.tclsh, bootPath]
    : [settings.innovus, ...settings.innovus_args.map((a) => a.replaceAll("{boot}", bootPath))];
}

/**
 * The command line that starts a session (pure). `tclsh` runs the boot script directly; `innovus`
 * runs `innovus -no_gui -init <boot>`; `dsub-i` wraps the tool in the site's launcher template so a
 * farm scheduler (`dsub -I {cmd}`, `bsub -Is {cmd}`, `srun --pty {cmd}`, `sh -c {cmd_q}`) runs it.
 */
export function planLaunch(options: {
  adapter: AdapterName;
  settings: LaunchSettings;
  bootPath: string;
}): string[] {
  const { adapter, settings, bootPath } = options;
  if (adapter === "tclsh") return toolArgv("tclsh", settings, bootPath);
  if (adapter === "innovus") return toolArgv("innovus", settings, bootPath);
  const inner = toolArgv(settings.dsub_tool, settings, bootPath);
  const tokens = splitCommandLine(settings.dsub_template);
  if (!tokens.some((t) => t.includes("{cmd}") || t.includes("{cmd_q}"))) {
    throw new TimewarpError(
      ErrorCode.CONFIG_INVALID,
      `skillpilot.dsub_template ${JSON.stringify(settings.dsub_template)} has no {cmd} or {cmd_q} placeholder`,
    );
  }
  const quoted = inner.map(shellQuote).join(" ");
  const argv: string[] = [];
  for (const token of tokens) {
    if (token === "{cmd}") argv.push(...inner);
    else argv.push(token.replaceAll("{cmd_q}", quoted).replaceAll("{cmd}", quoted));
  }
  return argv;
}

/** The boot script the tool runs: settings, the Innovus stub when the tool lacks the commands, the processor. */
export function formatBootScript(options: {
  runDir: string;
  processorPath: string;
  stubPath: string;
  pollMs: number;
  heartbeatMs: number;
  runnerPid: number;
  runnerHost: string;
  /** thread | sidecar | loop, or auto (the default): see queue_processor.tcl start_beat. */
  heartbeatMode?: string;
}): string {
  return [
    "# Written by the SkillPilot runtime; started as the session's boot script.",
    "namespace eval ::skillpilot {}",
    `set ::skillpilot::run_dir ${tclQuote(options.runDir)}`,
    `set ::skillpilot::poll_ms ${Math.max(1, Math.round(options.pollMs))}`,
    `set ::skillpilot::heartbeat_ms ${Math.max(1, Math.round(options.heartbeatMs))}`,
    `set ::skillpilot::runner_pid ${options.runnerPid}`,
    `set ::skillpilot::runner_host ${tclQuote(options.runnerHost)}`,
    `set ::skillpilot::heartbeat_mode ${tclQuote(options.heartbeatMode ?? "auto")}`,
    "# A real Innovus defines restoreDesign; a plain tclsh gets the stub of the few commands used.",
    `if {[info commands restoreDesign] eq ""} { source ${tclQuote(options.stubPath)} }`,
    `source ${tclQuote(options.processorPath)}`,
    "::skillpilot::main",
    "",
  ].join("\n");
}
