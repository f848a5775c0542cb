import { createReadStream } from "node:fs";
import { isAbsolute, relative } from "node:path";
import { fromSystemError } from "../core/index.ts";
import type { DraftEvent } from "./phases.ts";
import { loadShellParser, readShellCommand, testFramework } from "./shell-command.ts";
import { testResultOf } from "./test-output.ts";

export interface TranscriptExtraction {
  events: DraftEvent[];
  /** Torn or foreign lines, with their 1-based line numbers; the rest was still read. */
  warnings: string[];
  lines: number;
}

const EDIT_TOOLS = new Set(["Edit", "MultiEdit", "Write", "NotebookEdit"]);
const clip = (s: string, n = 4000) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function diffEvidence(tool: string, input: Record<string, unknown>): string {
  const lines = [`@@ ${tool} @@`];
  const add = (prefix: string, text: string | undefined) => {
    if (text === undefined) return;
    for (const l of text.split("\n")) lines.push(`${prefix}${l}`);
  };
  if (tool === "MultiEdit" && Array.isArray(input.edits)) {
    for (const e of input.edits) {
      const r = asRecord(e);
      add("-", str(r?.old_string));
      add("+", str(r?.new_string));
    }
  } else if (tool === "Write") add("+", str(input.content));
  else if (tool === "NotebookEdit") add("+", str(input.new_source));
  else {
    add("-", str(input.old_string));
    add("+", str(input.new_string));
  }
  return clip(lines.join("\n"));
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((c) => str(asRecord(c)?.text) ?? "")
      .filter((s) => s !== "")
      .join("\n");
  }
  return "";
}

/**
 * Events from a Claude Code transcript (JSONL), exactly: assistant `tool_use` blocks for
 * Edit/MultiEdit/Write/NotebookEdit become edits (dropped when their `tool_result` is an error),
 * Bash commands are read by the shell parser — the files they write are edits (dropped when a
 * lone command failed), a test runner is a test event with counts from its result — TodoWrite/ExitPlanMode
 * become plans. Assistant prose is ignored (no guessing). Streams in 1 MiB chunks, line by line: memory is bounded by
 * the chunk, the longest line and the number of events, not by the file size. A torn line is a warning with its number.
 */
export async function extractTranscriptEvents(
  path: string,
  options: { root?: string } = {},
): Promise<TranscriptExtraction> {
  await loadShellParser();
  const events: (DraftEvent & { _drop?: boolean })[] = [];
  const pending = new Map<
    string,
    {
      event: DraftEvent & { _drop?: boolean };
      tool: string;
      writes?: (DraftEvent & { _drop?: boolean })[];
    }
  >();
  const warnings: string[] = [];
  const plans = new Set<string>();
  let n = 0;
  let rest = "";
  /** A result line matters only when it answers a call we are waiting for. */
  const awaitedResult = (raw: string): boolean => {
    for (const m of raw.matchAll(/"tool_use_id"\s*:\s*"([^"]+)"/g))
      if (pending.has(m[1] ?? "")) return true;
    return false;
  };
  const stream = createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 20 });
  try {
    const handle = (raw0: string): void => {
      const raw = raw0.endsWith("\r") ? raw0.slice(0, -1) : raw0;
      n++;
      if (raw.trim() === "") return;
      // Cheap skip: only lines carrying tool calls, or results of calls we wait for, matter (most
      // bytes are prose and the results of reads).
      const hasUse = raw.includes('"tool_use"');
      if (!hasUse && !(raw.includes('"tool_result"') && awaitedResult(raw))) {
        if (!raw.trimEnd().endsWith("}"))
          warnings.push(`line ${n}: not valid JSON (torn line?), skipped`);
        return;
      }
      let line: Record<string, unknown> | undefined;
      try {
        line = asRecord(JSON.parse(raw));
      } catch {
        warnings.push(`line ${n}: not valid JSON (torn line?), skipped`);
        return;
      }
      if (line === undefined) return;
      const cwd = str(line.cwd) ?? options.root;
      const message = asRecord(line.message);
      const content = message?.content;
      if (!Array.isArray(content)) return;
      for (const part of content) {
        const block = asRecord(part);
        if (block === undefined) continue;
        if (block.type === "tool_use") {
          const name = str(block.name) ?? "";
          const id = str(block.id) ?? `line${n}`;
          const input = asRecord(block.input) ?? {};
          if (EDIT_TOOLS.has(name)) {
            const file = str(input.file_path) ?? str(input.notebook_path);
            const where =
              file === undefined
                ? undefined
                : cwd !== undefined && isAbsolute(file)
                  ? relative(cwd, file)
                  : file;
            const ev: DraftEvent = {
              tool: "edit",
              ...(where !== undefined ? { where } : {}),
              why: `${name} (transcript line ${n})`,
              confidence: 1,
              evidence: diffEvidence(name, input),
              source: "transcript",
              ...(name === "Write" ? {} : { change: "modified" as const }),
            };
            events.push(ev);
            pending.set(id, { event: ev, tool: name });
          } else if (name === "Bash") {
            const cmd = str(input.command) ?? "";
            const reading = readShellCommand(cmd);
            // files the command writes (`sed -i`, `cat > f <<EOF`, `>`): edits, as exact as the reading
            const writes: DraftEvent[] = reading.writes.map((w) => ({
              tool: "edit",
              where: cwd !== undefined && isAbsolute(w.path) ? relative(cwd, w.path) : w.path,
              why: `${w.how} in Bash (transcript line ${n})`,
              confidence: w.confidence,
              evidence: clip(cmd),
              source: "transcript",
              ...(w.change !== undefined ? { change: w.change } : {}),
            }));
            events.push(...writes);
            const lone = reading.commands.length <= 1 ? writes : [];
            if (reading.tests[0] !== undefined) {
              const ev: DraftEvent = { tool: "shell", cmd, source: "transcript", confidence: 1 };
              events.push(ev);
              pending.set(id, { event: ev, tool: name, writes: lone });
            } else if (lone.length > 0)
              pending.set(id, { event: lone[0] as DraftEvent, tool: name, writes: lone });
          } else if (name === "TodoWrite" && Array.isArray(input.todos)) {
            for (const t of input.todos) {
              const c = str(asRecord(t)?.content);
              if (c !== undefined && !plans.has(c)) {
                plans.add(c);
                events.push({ tool: "plan", why: c, source: "transcript", confidence: 1 });
              }
            }
          } else if (name === "ExitPlanMode") {
            const plan = str(input.plan);
            if (plan !== undefined)
              events.push({
                tool: "plan",
                why: clip(plan, 2000),
                source: "transcript",
                confidence: 1,
              });
          }
        } else if (block.type === "tool_result") {
          const id = str(block.tool_use_id);
          const p = id === undefined ? undefined : pending.get(id);
          if (p === undefined || id === undefined) continue;
          pending.delete(id);
          const text = resultText(block.content);
          const isError = block.is_error === true;
          // a lone command that failed wrote nothing
          if (isError) for (const w of p.writes ?? []) w._drop = true;
          if (p.event.tool === "edit") {
            if (isError) p.event._drop = true;
            continue;
          }
          const exit = text.match(/Exit code (\d+)/)?.[1];
          const result = testResultOf(
            text,
            testFramework(p.event.cmd ?? "") ?? "unknown",
            exit !== undefined ? Number.parseInt(exit, 10) : isError ? 1 : null,
          );
          if (result !== undefined) p.event.result = result;
        }
      }
    };
    for await (const chunk of stream) {
      const text = rest + (typeof chunk === "string" ? chunk : chunk.toString("utf8"));
      let start = 0;
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
        handle(text.slice(start, nl));
        start = nl + 1;
      }
      rest = text.slice(start);
    }
    if (rest !== "") handle(rest);
  } catch (error) {
    throw fromSystemError(error, `reading transcript ${path}`);
  } finally {
    stream.destroy();
  }
  for (const [, p] of pending) {
    warnings.push(
      `${p.tool} call${p.event.where ? ` on ${p.event.where}` : ""} has no tool_result (transcript cut off?)`,
    );
  }
  const kept: DraftEvent[] = [];
  for (const e of events) {
    if (e._drop === true) continue;
    delete e._drop;
    kept.push(e);
  }
  return { events: kept, warnings, lines: n };
}
