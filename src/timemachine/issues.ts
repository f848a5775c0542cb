import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import {
  appendEvent,
  assertIssueId,
  type Clock,
  createIssueId,
  ErrorCode,
  errnoCode,
  fromSystemError,
  fsyncDirectory,
  ISSUE_ID_PATTERN,
  isTimewarpError,
  type Random,
  readEachFlagged,
  readInputFile,
  readJsonFile,
  systemClock,
  systemRandom,
  TimewarpError,
  type WorkspacePaths,
  workspacePaths,
  writeFileAtomic,
  writeJsonAtomic,
} from "../core/index.ts";
import { formatExperimentTemplate } from "./experiment-template.ts";
import { redactSecrets } from "./redact.ts";
import { listSessions, readSession } from "./sessions.ts";
import { assertNoTransition, readState } from "./state-file.ts";
import { snapshotExists } from "./store-adapter.ts";
import {
  type ChatSelection,
  DEFAULT_CHAT_WINDOW,
  formatChatMarkdown,
  parseTranscript,
  selectWindow,
} from "./transcript.ts";

/** `issue.json` (seed §5) plus `schema_version`, the reporting `session_id` and `fixed_at`. */
export const IssueSchema = z
  .object({
    schema_version: z.literal(1).optional(),
    issue_id: z.string().regex(ISSUE_ID_PATTERN),
    created_at: z.string(),
    status: z.enum(["open", "fixed"]),
    snapshot_id: z.string().min(1),
    task_context: z.string(),
    symptom: z.string(),
    success_criteria: z.string().min(1),
    suspected_cause: z.string().nullable().optional(),
    chat_file: z.string(),
    chat_summary: z.string().nullable().optional(),
    experiment_file: z.string(),
    session_id: z.string().nullable().optional(),
    fixed_at: z.string().nullable().optional(),
  })
  .passthrough();

export type Issue = z.infer<typeof IssueSchema>;

const required = (what: string) =>
  z
    .string({ error: `${what} is required` })
    .refine((s) => s.trim() !== "", { message: `${what} must not be empty` });

/** The input of `issue_report` (seed §10), shared by the CLI and the MCP tool. */
export const IssueReportInputSchema = z.object({
  task_context: required("task_context").describe("What the user asked the agent to do"),
  symptom: required("symptom").describe(
    "The friction observed: incoherence, repeated retries, failure",
  ),
  success_criteria: required("success_criteria").describe(
    "Verifiable acceptance criteria: trigger, expected behaviour, observable evidence",
  ),
  suspected_cause: z.string().optional().describe("Optional: what may cause it"),
  chat_summary: z.string().optional().describe("Optional: 1-3 sentences on the conversation"),
});

export type IssueReportInput = z.infer<typeof IssueReportInputSchema>;

export interface ReportIssueOptions extends IssueReportInput {
  root: string;
  /** The reporting session (its snapshot is linked); default: the most recently seen session. */
  sessionId?: string;
  /** Transcript to export into chat.md; default: the one the session's hook remembered. */
  transcriptPath?: string;
  /** Which part of the transcript chat.md keeps; default the seed's window(before=6, after=2). */
  chatWindow?: ChatSelection;
  clock?: Clock;
  random?: Random;
}

export interface ReportIssueResult {
  ok: true;
  issue_id: string;
  snapshot_id: string;
  session_id: string | null;
  path: string;
  issue_path: string;
  chat_path: string;
  experiment_path: string;
  transcript_path: string | null;
  chat_entries: number;
}

interface ReportingSession {
  sessionId: string | null;
  snapshotId: string;
  transcriptPath: string | null;
}

function noSnapshot(message: string, data: Record<string, unknown> = {}): TimewarpError {
  return new TimewarpError(
    ErrorCode.NO_SESSION_SNAPSHOT,
    `${message}; run \`timewarp session start\` (the SessionStart hook does) first`,
    { data },
  );
}

function resolveReportingSession(
  paths: WorkspacePaths,
  sessionId: string | undefined,
): ReportingSession {
  if (sessionId !== undefined) {
    const record = readSession(paths, sessionId);
    if (!record?.snapshot_id) {
      throw noSnapshot(`session ${sessionId} has no snapshot in ${paths.sessions}`, {
        session_id: sessionId,
      });
    }
    return {
      sessionId,
      snapshotId: record.snapshot_id,
      transcriptPath: record.transcript_path,
    };
  }
  const latest = listSessions(paths).find((s) => s.snapshot_id !== null);
  if (latest?.snapshot_id) {
    return {
      sessionId: latest.session_id,
      snapshotId: latest.snapshot_id,
      transcriptPath: latest.transcript_path,
    };
  }
  // a workspace set up by the original plugin: one session_snapshot_id in state.json
  const state = readState(paths);
  if (state.session_snapshot_id) {
    return {
      sessionId: state.session_id,
      snapshotId: state.session_snapshot_id,
      transcriptPath: null,
    };
  }
  throw noSnapshot(`no session snapshot in ${paths.data}`);
}

function readTranscript(path: string, explicit: boolean): string | null {
  try {
    // One home for user-named input files: a missing one, a directory… is a coded input error.
    return readInputFile(path, { what: "transcript" }).toString("utf8");
  } catch (error) {
    if (explicit) throw error;
    return null; // the remembered transcript moved away; chat.md says so
  }
}

/**
 * `issue_report` (seed §10): link the reporting session's snapshot, export its transcript into
 * chat.md (dialogue and tool input/output only, with the zh seed's header), write the
 * experiment.md template — all three files or none (folder built in `.timewarp/tmp/`, renamed
 * in) — with every secret, in chat.md and in every field, replaced by `***REDACTED***`.
 *
 * Errors: NO_SESSION_SNAPSHOT when no session has a snapshot (or it is gone), INVALID_INPUT for
 * an empty required field, TRANSITION_INTERRUPTED while a travel/return awaits `recover`.
 *
 * @example
 * const { issue_id } = await reportIssue({ root, task_context: "fix slugify",
 *   symptom: "three retries", success_criteria: "npm test passes on the first try" });
 */
export async function reportIssue(options: ReportIssueOptions): Promise<ReportIssueResult> {
  const input = IssueReportInputSchema.safeParse(options);
  if (!input.success) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `issue_report: ${input.error.issues.map((i) => i.message).join("; ")}`,
      {
        data: {
          issues: input.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
        },
      },
    );
  }
  const paths = workspacePaths(options.root);
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  assertNoTransition(readState(paths), paths);
  const session = resolveReportingSession(paths, options.sessionId);
  if (!snapshotExists(paths.root, session.snapshotId)) {
    throw noSnapshot(`the session snapshot ${session.snapshotId} no longer exists`, {
      snapshot_id: session.snapshotId,
    });
  }

  const transcriptPath = options.transcriptPath ?? session.transcriptPath;
  const transcript =
    transcriptPath === null
      ? null
      : readTranscript(transcriptPath, options.transcriptPath !== undefined);
  const selection = options.chatWindow ?? DEFAULT_CHAT_WINDOW;
  const entries = transcript === null ? [] : selectWindow(parseTranscript(transcript), selection);
  const capturedAt = clock
    .now()
    .toISOString()
    .replace(/\.\d{3}Z$/, "Z");
  const chat = await redactSecrets(
    formatChatMarkdown({
      sessionId: session.sessionId,
      capturedAt,
      selection,
      entries,
      source: transcript === null ? null : transcriptPath,
    }),
  );

  // Every field the caller wrote leaves the machine with the issue: all are redacted here, in
  // one place, so a field added to the input schema cannot skip it (issue 16, class 8).
  const { task_context, symptom, success_criteria, suspected_cause, chat_summary } =
    await redactFields(input.data);
  const issueId = uniqueIssueId(paths, clock, random);
  const issue: Issue = {
    schema_version: 1,
    issue_id: issueId,
    created_at: capturedAt,
    status: "open",
    snapshot_id: session.snapshotId,
    task_context,
    symptom,
    success_criteria,
    suspected_cause: suspected_cause ?? null,
    chat_file: "chat.md",
    chat_summary: chat_summary ?? null,
    experiment_file: "experiment.md",
    session_id: session.sessionId,
  };
  const experiment = formatExperimentTemplate({
    issueId,
    snapshotId: session.snapshotId,
    successCriteria: success_criteria,
  });

  const finalDir = join(paths.issues, issueId);
  const building = join(paths.tmp, `issue-${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    mkdirSync(paths.issues, { recursive: true });
    mkdirSync(building, { recursive: true });
    writeFileAtomic(join(building, "chat.md"), chat);
    writeFileAtomic(join(building, "experiment.md"), experiment);
    writeJsonAtomic(join(building, "issue.json"), issue);
    renameSync(building, finalDir);
    fsyncDirectory(paths.issues);
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    throw fromSystemError(error, `writing issue ${finalDir}`);
  }
  appendEvent(
    paths.events,
    "issue.reported",
    { issue_id: issueId, snapshot_id: session.snapshotId },
    clock,
  );
  return {
    ok: true,
    issue_id: issueId,
    snapshot_id: session.snapshotId,
    session_id: session.sessionId,
    path: finalDir,
    issue_path: join(finalDir, "issue.json"),
    chat_path: join(finalDir, "chat.md"),
    experiment_path: join(finalDir, "experiment.md"),
    transcript_path: transcript === null ? null : transcriptPath,
    chat_entries: entries.length,
  };
}

/** The input with every string field redacted. */
async function redactFields(input: IssueReportInput): Promise<IssueReportInput> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(input)) {
    out[field] = typeof value === "string" ? await redactSecrets(value) : value;
  }
  return IssueReportInputSchema.parse(out);
}

function uniqueIssueId(paths: WorkspacePaths, clock: Clock, random: Random): string {
  for (let attempt = 0; attempt < 10; attempt++) {
    const id = createIssueId(clock, random);
    if (!existsSync(join(paths.issues, id))) return id;
  }
  throw new TimewarpError(ErrorCode.INTERNAL, `could not find a free issue id in ${paths.issues}`);
}

/** Every issue id present (folders of the right shape; temp folders live elsewhere). */
export function listIssueIds(paths: WorkspacePaths): string[] {
  try {
    return readdirSync(paths.issues)
      .filter((n) => ISSUE_ID_PATTERN.test(n))
      .sort();
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return [];
    throw fromSystemError(error, `listing ${paths.issues}`);
  }
}

function issueFile(paths: WorkspacePaths, id: string): string {
  return join(paths.issues, id, "issue.json");
}

/** Read one issue.json; CORRUPT_FILE names the file and the field when it is hand-edited wrong. */
export function readIssue(paths: WorkspacePaths, id: string): Issue {
  try {
    return readJsonFile(issueFile(paths, id), IssueSchema);
  } catch (error) {
    if (isTimewarpError(error, ErrorCode.NOT_FOUND)) {
      throw new TimewarpError(
        ErrorCode.ISSUE_NOT_FOUND,
        `issue ${id} not found in ${paths.issues} (have ${listIssueIds(paths).length})`,
        { data: { issue_id: id } },
      );
    }
    throw error;
  }
}

export interface IssueSummary {
  issue_id: string;
  status: Issue["status"];
  created_at: string;
  snapshot_id: string;
  symptom: string;
  success_criteria: string;
}

/** Which issues a listing shows: `open` (the default), `fixed`, or `all`. */
export interface ListIssuesOptions {
  root: string;
  status?: "open" | "fixed" | "all";
}

/**
 * `timewarp_issue_list(status?)` (seed §10): open issues by default, `all` for every one,
 * newest first. A corrupt issue.json is CORRUPT_FILE naming it, never skipped in silence; a
 * listing for people uses `listIssuesChecked`, which lists the others.
 */
export function listIssues(options: ListIssuesOptions): IssueSummary[] {
  const paths = workspacePaths(options.root);
  assertNoTransition(readState(paths), paths);
  const issues = listIssueIds(paths).map((id) => readIssue(paths, id));
  return summarizeIssues(issues, options.status ?? "open");
}

/** An issue folder whose issue.json cannot be read, as a listing flags it. */
export interface CorruptIssue {
  issue_id: string;
  /** CORRUPT_FILE (truncated, not JSON, wrong shape), NOT_FOUND, or the file system's code. */
  code: ErrorCode;
  message: string;
  /** The issue.json at fault. */
  file: string;
}

/**
 * `listIssues`, and the issue folders whose issue.json does not read (`corrupt`, whatever the
 * status asked: theirs cannot be known): one damaged issue must not hide the others (issue 16).
 */
export function listIssuesChecked(options: ListIssuesOptions): {
  issues: IssueSummary[];
  corrupt: CorruptIssue[];
} {
  const paths = workspacePaths(options.root);
  assertNoTransition(readState(paths), paths);
  // readJsonFile, not readIssue: a folder without issue.json is damage (issue folders appear
  // whole), not ISSUE_NOT_FOUND for an id the listing itself found.
  const { read, failed } = readEachFlagged(listIssueIds(paths), (id) =>
    readJsonFile(issueFile(paths, id), IssueSchema),
  );
  const corrupt = failed.map(({ key: id, error }) => ({
    issue_id: id,
    code: error.code,
    message: error.message,
    file: issueFile(paths, id),
  }));
  return { issues: summarizeIssues(read, options.status ?? "open"), corrupt };
}

/** The issues of a status, newest first, as the listing shows them. */
function summarizeIssues(
  issues: Issue[],
  status: NonNullable<ListIssuesOptions["status"]>,
): IssueSummary[] {
  return issues
    .filter((i) => status === "all" || i.status === status)
    .sort(
      (a, b) => b.created_at.localeCompare(a.created_at) || b.issue_id.localeCompare(a.issue_id),
    )
    .map((i) => ({
      issue_id: i.issue_id,
      status: i.status,
      created_at: i.created_at,
      snapshot_id: i.snapshot_id,
      symptom: i.symptom,
      success_criteria: i.success_criteria,
    }));
}

export type IssueDetail = Issue & {
  path: string;
  issue_path: string;
  chat_path: string;
  experiment_path: string;
};

/** `timewarp_issue_get(issue_id)`: the issue with the paths of its three files. */
export function getIssue(options: { root: string; issueId: string }): IssueDetail {
  assertIssueId(options.issueId);
  const paths = workspacePaths(options.root);
  assertNoTransition(readState(paths), paths);
  const issue = readIssue(paths, options.issueId);
  const dir = join(paths.issues, options.issueId);
  return {
    ...issue,
    path: dir,
    issue_path: join(dir, "issue.json"),
    chat_path: join(dir, issue.chat_file),
    experiment_path: join(dir, issue.experiment_file),
  };
}

/** Step 7 of the protocol: mark an issue `fixed` (idempotent; `fixed_at` keeps the first time). */
export function fixIssue(options: { root: string; issueId: string; clock?: Clock }): IssueDetail {
  assertIssueId(options.issueId);
  const paths = workspacePaths(options.root);
  assertNoTransition(readState(paths), paths);
  const issue = readIssue(paths, options.issueId);
  if (issue.status !== "fixed") {
    const clock = options.clock ?? systemClock;
    const fixed: Issue = {
      ...issue,
      status: "fixed",
      fixed_at: clock
        .now()
        .toISOString()
        .replace(/\.\d{3}Z$/, "Z"),
    };
    writeJsonAtomic(issueFile(paths, options.issueId), fixed);
    appendEvent(paths.events, "issue.fixed", { issue_id: options.issueId }, clock);
  }
  return getIssue(options);
}

/** Snapshot ids that some issue references (cleanup keeps them). Throws on a corrupt issue.json. */
export function issueSnapshotIds(paths: WorkspacePaths): Set<string> {
  return new Set(listIssueIds(paths).map((id) => readIssue(paths, id).snapshot_id));
}
