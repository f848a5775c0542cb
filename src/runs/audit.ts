/**
 * The audit of what a script does (issue 20): while a request's script runs, the queue processor
 * records every `source`, `exec` and `open "|…"` it performs in session/audit.jsonl (append-only,
 * written by the Tcl side only). The runner copies each new record into the timeline as an AUDIT
 * event, so the timeline stays written by the runner alone. An audit, not a sandbox: see README.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import type { ContractPolicy } from "./contract.ts";
import type { RequestPolicy } from "./protocol.ts";
import type { RunPaths, TimelineInput } from "./run-dir.ts";

/** One line of session/audit.jsonl. */
export const AuditRecordSchema = z
  .object({
    schema_version: z.string(),
    ts: z.string(),
    request_id: z.string(),
    script: z.string().optional(),
    command: z.enum(["source", "exec", "open"]),
    /** source: the path as written, its real path, and where that lies. */
    path: z.string().optional(),
    resolved: z.string().optional(),
    where: z.enum(["run_dir", "design", "tcl_library", "outside"]).optional(),
    /** exec / open "|…": the words, and the program of each pipeline stage as found on PATH. */
    argv: z.array(z.string()).optional(),
    programs: z.array(z.string()).optional(),
    decision: z.enum(["allowed", "refused"]),
    reason: z.string().optional(),
    /** The restore wrapper's source of the design's .enc (seed §6.2). */
    exception: z.string().optional(),
  })
  .passthrough();
export type AuditRecord = z.infer<typeof AuditRecordSchema>;

export function auditPath(paths: RunPaths): string {
  return join(paths.session, "audit.jsonl");
}

/** At most this many AUDIT events per collection; the rest are counted in one event. */
const MAX_EVENTS_PER_COLLECT = 500;

/** The bytes of `path` from `offset` to its end ("" when it is missing). */
function readFrom(path: string, offset: number): string {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return "";
  }
  try {
    const size = fstatSync(fd).size;
    if (size <= offset) return "";
    const buffer = Buffer.alloc(size - offset);
    const n = readSync(fd, buffer, 0, buffer.length, offset);
    return buffer.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/**
 * The complete lines of the audit file after byte `offset` (pure parsing over one read): the
 * records, the count of lines that are not records, and the offset after the last whole line (a
 * line still being written is left for the next call).
 */
export function readAuditFrom(
  path: string,
  offset: number,
): { records: AuditRecord[]; unreadable: number; offset: number } {
  const text = readFrom(path, offset);
  const end = text.lastIndexOf("\n");
  if (end < 0) return { records: [], unreadable: 0, offset };
  const records: AuditRecord[] = [];
  let unreadable = 0;
  for (const line of text.slice(0, end).split("\n")) {
    if (line.trim() === "") continue;
    try {
      records.push(AuditRecordSchema.parse(JSON.parse(line)));
    } catch {
      unreadable++;
    }
  }
  return { records, unreadable, offset: offset + Buffer.byteLength(text.slice(0, end + 1)) };
}

/** What a record says in one line: the command, its target, the decision. */
function describe(r: AuditRecord): string {
  const target =
    r.command === "source"
      ? `${r.resolved ?? r.path ?? "?"} (${r.where ?? "?"})`
      : `${r.command === "open" ? "| " : ""}${(r.argv ?? []).join(" ")}`;
  const why = r.reason ? `: ${r.reason}` : "";
  const exception = r.exception ? ` [${r.exception}]` : "";
  return `${r.request_id}: ${r.command} ${target} ${r.decision}${why}${exception}`;
}

/**
 * The timeline event for one record (pure): WARN for what leaves the job's own files — a source
 * outside the run dir, the design and Tcl's library, any exec or pipeline — and for a refusal.
 */
export function auditEvent(r: AuditRecord): TimelineInput {
  const warn = r.decision === "refused" || r.command !== "source" || r.where === "outside";
  const { schema_version: _version, ...data } = r;
  return { level: warn ? "WARN" : "INFO", event: "AUDIT", message: describe(r), data };
}

/** Follows session/audit.jsonl and copies each new record into the timeline. */
export interface AuditTrail {
  /** Append the records written since the last call; never throws. Returns how many. */
  collect(): number;
}

export function createAuditTrail(o: {
  path: string;
  append: (event: TimelineInput) => void;
  /** Requests whose records a previous runner put in the timeline already (a resumed job). */
  collected?: ReadonlySet<string>;
}): AuditTrail {
  let offset = 0;
  return {
    collect() {
      let appended = 0;
      try {
        const found = readAuditFrom(o.path, offset);
        const records = found.records.filter((r) => !o.collected?.has(r.request_id));
        const shown = records.slice(0, MAX_EVENTS_PER_COLLECT);
        for (const record of shown) {
          o.append(auditEvent(record));
          appended++;
        }
        const hidden = records.length - shown.length + found.unreadable;
        if (hidden > 0) {
          o.append({
            level: "WARN",
            event: "AUDIT",
            message: `${hidden} more audit record(s) (${found.unreadable} unreadable): see session/audit.jsonl`,
            data: { more: records.length - shown.length, unreadable: found.unreadable },
          });
        }
        offset = found.offset;
      } catch {
        // the timeline could not be written (disk full): the records stay in audit.jsonl, and
        // the next collection tries again from the same place
      }
      return appended;
    },
  };
}

/**
 * The `policy` a request carries (pure): the design's directory always (so the audit can tell
 * it from outside), and the contract's refusals for the subskill's scripts — never for the
 * runtime's own restore wrapper.
 */
export function requestPolicyFor(o: {
  contractPolicy: ContractPolicy | undefined;
  encPath: string;
  isRestore: boolean;
}): RequestPolicy | undefined {
  if (!o.encPath) return undefined;
  const p = o.isRestore ? undefined : o.contractPolicy;
  return {
    confine_paths: p?.confine_paths ?? false,
    ...(p?.allow_exec ? { allow_exec: p.allow_exec } : {}),
    allowed_dirs: [dirname(o.encPath)],
  };
}
