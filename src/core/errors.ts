/**
 * One error class with a stable code. Callers branch on `code`; messages say what, where,
 * expected and got. Every code is documented once, here.
 */
export const ErrorCode = {
  // ── generic ──────────────────────────────────────────────────────────────
  /** Input failed validation (CLI flags, MCP arguments, hook payloads). `data.issues` lists them. */
  INVALID_INPUT: "INVALID_INPUT",
  /** A path that should be a directory is not one (or does not exist). */
  NOT_A_DIRECTORY: "NOT_A_DIRECTORY",
  /** A file or directory the operation needs does not exist. */
  NOT_FOUND: "NOT_FOUND",
  /** The file system refused access. */
  PERMISSION_DENIED: "PERMISSION_DENIED",
  /** The disk is full (ENOSPC) or over quota; nothing half-written was left behind. */
  DISK_FULL: "DISK_FULL",
  /** An I/O failure not covered by a more specific code. `cause` carries the system error. */
  IO_ERROR: "IO_ERROR",
  /** A bug: an invariant did not hold. Please report it. */
  INTERNAL: "INTERNAL",
  /** The workspace has no `.timewarp/` yet; run `timewarp init` (or any command that creates it). */
  NOT_INITIALIZED: "NOT_INITIALIZED",
  /** A path that should be a regular file is a directory, a FIFO, a socket or a device (EISDIR). */
  NOT_A_FILE: "NOT_A_FILE",
  /** A path, or one name in it, is longer than the file system allows (ENAMETOOLONG). */
  NAME_TOO_LONG: "NAME_TOO_LONG",
  /**
   * `timewarp init` inside a directory an existing workspace already covers (`data.workspace_root`):
   * a nested `.timewarp/` would split the history. `--here` makes one on purpose.
   */
  NESTED_WORKSPACE: "NESTED_WORKSPACE",

  // ── core ─────────────────────────────────────────────────────────────────
  /** `.timewarp/config.json` is not valid JSON or fails its schema; the message names the field. */
  CONFIG_INVALID: "CONFIG_INVALID",
  /** The workspace lock is held by a live process; `data.holder` names it (pid, host, started_at, command). */
  LOCKED: "LOCKED",
  /**
   * A protocol file on disk (state.json, issue.json, a manifest, …) is truncated, corrupt or
   * hand-edited into an invalid shape; `data.file` names it. fsck also reports a cache or index
   * that fails its check with this code.
   */
  CORRUPT_FILE: "CORRUPT_FILE",

  // ── store ────────────────────────────────────────────────────────────────
  /** An object is absent from the object store. */
  OBJECT_NOT_FOUND: "OBJECT_NOT_FOUND",
  /** An object's bytes do not hash to its id (found by verify-on-read or fsck). */
  OBJECT_CORRUPT: "OBJECT_CORRUPT",
  /** A manifest entry is unsafe to restore: absolute, contains `..`, or would be written through a symlink. */
  UNSAFE_PATH: "UNSAFE_PATH",
  /** An export or restore target is not acceptable (e.g. export into a non-empty directory). */
  TARGET_NOT_EMPTY: "TARGET_NOT_EMPTY",

  // ── time machine ─────────────────────────────────────────────────────────
  /** No snapshot with that id; `data.available` lists the ids that exist. */
  SNAPSHOT_NOT_FOUND: "SNAPSHOT_NOT_FOUND",
  /** `travel()` while already in the past (seed §11). */
  NESTED_TRAVEL: "NESTED_TRAVEL",
  /** `return()` while in the present. */
  NOT_IN_PAST: "NOT_IN_PAST",
  /** The workspace after `return()` does not match the backup; `data.paths` lists the differences. The backup is kept. */
  RETURN_VERIFY_FAILED: "RETURN_VERIFY_FAILED",
  /**
   * A restore (travel, return, recover, rewind) found paths written, created or deleted since
   * the scan it was planned from and left them as they are: nothing of them was overwritten.
   * `data.paths` lists them. A travel rolls back (keeping such paths as a patch first); a return
   * or recover stops with the backup kept: `timewarp recover` keeps them as a patch, then
   * restores; a rewind writes nothing (run it again).
   */
  CHANGED_SINCE_SCAN: "CHANGED_SINCE_SCAN",
  /** A travel or return was interrupted; run `timewarp recover` first. */
  TRANSITION_INTERRUPTED: "TRANSITION_INTERRUPTED",
  /** `timewarp recover` found nothing to recover. */
  NOTHING_TO_RECOVER: "NOTHING_TO_RECOVER",
  /** `issue_report` with no session snapshot (seed §10: fail immediately). */
  NO_SESSION_SNAPSHOT: "NO_SESSION_SNAPSHOT",
  /** An issue id that is not of the form `i_YYYYMMDD_HHMMSS_xxxxxx`. */
  INVALID_ISSUE_ID: "INVALID_ISSUE_ID",
  /** A well-formed issue id with no issue folder. */
  ISSUE_NOT_FOUND: "ISSUE_NOT_FOUND",
  /** `snapshot delete` of a pinned snapshot; `snapshot unpin` it first (or `--force`). */
  SNAPSHOT_PINNED: "SNAPSHOT_PINNED",
  /**
   * `snapshot delete` of a snapshot something still needs (`data.used_by`: the travel in
   * progress, an issue); the travel's is never deleted, an issue's only with `--force`.
   */
  SNAPSHOT_IN_USE: "SNAPSHOT_IN_USE",
  /** `rewind` to a turn that is not recorded; `data.available` lists the session's turns. */
  TURN_NOT_FOUND: "TURN_NOT_FOUND",
  /** `rewind` while a travel is active (`mode: past`): `timewarp return` first. */
  REWIND_IN_PAST: "REWIND_IN_PAST",
  /** `rewind --undo` with no rewind left to undo. */
  NOTHING_TO_UNDO: "NOTHING_TO_UNDO",
  /**
   * The workspace after a rewind does not match the turn's checkpoint (something wrote into it
   * meanwhile); `data.paths` lists the differences. The rewind is recorded: `rewind --undo`.
   */
  REWIND_VERIFY_FAILED: "REWIND_VERIFY_FAILED",

  // ── diff / ledger ────────────────────────────────────────────────────────
  /** A diff text could not be parsed; the message names the line. */
  DIFF_PARSE_ERROR: "DIFF_PARSE_ERROR",
  /** A diff does not apply to the current content; `data.conflicts` lists the hunks. */
  DIFF_APPLY_CONFLICT: "DIFF_APPLY_CONFLICT",
  /** A diff cannot be reversed (a binary diff without its reverse literal, e.g. not made with --binary). */
  DIFF_NOT_REVERSIBLE: "DIFF_NOT_REVERSIBLE",
  /** The search block of ApplyEditBlock matches nowhere. */
  EDIT_BLOCK_NOT_FOUND: "EDIT_BLOCK_NOT_FOUND",
  /** The search block matches more than once; `data.candidates` lists the line numbers. */
  EDIT_BLOCK_AMBIGUOUS: "EDIT_BLOCK_AMBIGUOUS",
  /** A line range outside the file. */
  RANGE_INVALID: "RANGE_INVALID",
  /** No ledger operation with that id. */
  OPERATION_NOT_FOUND: "OPERATION_NOT_FOUND",
  /** A revert would overwrite changes made since; `data.conflicts` lists them. Nothing was changed. */
  REVERT_CONFLICT: "REVERT_CONFLICT",
  /** No milestone with that id. */
  MILESTONE_NOT_FOUND: "MILESTONE_NOT_FOUND",
  /**
   * A ledger write into a version-control folder (`.git`, `.hg`, `.svn`, `.jj`, `.bzr`, or
   * anything inside one): the repository would be lost with one call. `force: true` / `--force`
   * does it anyway.
   */
  PROTECTED_PATH: "PROTECTED_PATH",

  // ── SkillPilot ───────────────────────────────────────────────────────────
  /** A subskill's contract.yaml is invalid; the message names the field. */
  CONTRACT_INVALID: "CONTRACT_INVALID",
  /** No skill or subskill with that name. */
  SKILL_NOT_FOUND: "SKILL_NOT_FOUND",
  /** No SkillPilot job with that id. */
  JOB_NOT_FOUND: "JOB_NOT_FOUND",
  /** A SkillPilot job ended FAIL; `data.error_type` carries the seed's taxonomy value. */
  JOB_FAILED: "JOB_FAILED",
  /**
   * `skill resume` of a job that cannot be taken over: not RUNNING (the message names its
   * status), its runner still alive, or another resume owns it; `data.reason` says which.
   */
  JOB_NOT_RESUMABLE: "JOB_NOT_RESUMABLE",
  /** A SkillPilot request id was used already in that run directory; request files are never overwritten. */
  REQUEST_DUPLICATE: "REQUEST_DUPLICATE",
  /**
   * `skill compare` of two jobs of different skills: their metrics do not compare.
   * `data.skills` names both; `--force` (`force: true`) compares them anyway.
   */
  SKILL_MISMATCH: "SKILL_MISMATCH",

  // ── memory ───────────────────────────────────────────────────────────────
  /** goal.json fails its schema; the message names the field. */
  GOAL_INVALID: "GOAL_INVALID",
  /** A run directory lacks what the step needs. */
  RUN_INVALID: "RUN_INVALID",
  /** No pattern card with that id. */
  CARD_NOT_FOUND: "CARD_NOT_FOUND",
  /**
   * `memory import` could not tell the file's format from its content (the first 64 KiB, not
   * the name) and none was given; `data.formats` lists the formats it knows. Pass `--format`.
   */
  IMPORT_FORMAT_UNKNOWN: "IMPORT_FORMAT_UNKNOWN",
  /**
   * `memory import` would replace a run directory that exists already; nothing was written.
   * `data.run_dir` names it; `--force` (`force: true`) replaces it.
   */
  RUN_EXISTS: "RUN_EXISTS",
  /**
   * The drift guards scored an edit past the rollback threshold against the workspace's goal
   * (`.timewarp/memory/goal.json`); nothing was written. `data.reasons` says why.
   */
  GUARD_BLOCKED: "GUARD_BLOCKED",
  /** A dashboard request without the launch's token (HTTP 401). */
  UNAUTHORIZED: "UNAUTHORIZED",
  /**
   * A dashboard request whose `Host` or `Origin` is not the server's own (HTTP 403): a page on
   * another site, or a DNS-rebound name, reaching 127.0.0.1.
   */
  FOREIGN_ORIGIN: "FOREIGN_ORIGIN",
  /** A state-changing dashboard request to a server started without `--allow-actions` (HTTP 403). */
  ACTIONS_DISABLED: "ACTIONS_DISABLED",

  // ── commands through the daemon ──────────────────────────────────────────
  /**
   * A write command (`snapshot create`, `travel`, `return`, `revert`) that `bin/timewarp` handed
   * to the watch daemon, whose daemon or worker stopped after taking it and before answering. It
   * may have run in whole, in part or not at all, and is not run again. `data.daemon_pid` names
   * the daemon, `data.status` is `timewarp status --json` right after (null if that failed); a
   * travel or return cut short is finished or undone by `timewarp recover`. Printed by the shell
   * launcher itself (exit 1), not by a Node process.
   */
  COMMAND_LOST: "COMMAND_LOST",
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface TimewarpErrorOptions {
  data?: Record<string, unknown>;
  cause?: unknown;
}

export class TimewarpError extends Error {
  override readonly name = "TimewarpError";
  readonly code: ErrorCode;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: TimewarpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.data = options.data;
  }

  /** The `{"error": {...}}` body the CLI and MCP surfaces print. */
  toJSON(): { code: ErrorCode; message: string; data?: Record<string, unknown> } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

export function isTimewarpError(value: unknown, code?: ErrorCode): value is TimewarpError {
  return value instanceof TimewarpError && (code === undefined || value.code === code);
}

/** The errno code of a Node system error, if it is one. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}

/** What each system error means to a caller: its code and a few words for the message. */
const SYSTEM_ERRORS: Record<string, [ErrorCode, string]> = {
  ENOENT: [ErrorCode.NOT_FOUND, "not found"],
  EACCES: [ErrorCode.PERMISSION_DENIED, "permission denied"],
  EPERM: [ErrorCode.PERMISSION_DENIED, "permission denied"],
  ENOSPC: [ErrorCode.DISK_FULL, "disk full"],
  EDQUOT: [ErrorCode.DISK_FULL, "disk full"],
  ENOTDIR: [ErrorCode.NOT_A_DIRECTORY, "not a directory"],
  EISDIR: [ErrorCode.NOT_A_FILE, "is a directory"],
  ENAMETOOLONG: [ErrorCode.NAME_TOO_LONG, "name too long"],
};

/**
 * Turn a Node system error into a TimewarpError with a code a caller can branch on.
 * A TimewarpError passes through unchanged. `detail` replaces the system's own message in
 * parentheses (which repeats the path).
 */
export function fromSystemError(error: unknown, what: string, detail?: string): TimewarpError {
  if (error instanceof TimewarpError) return error;
  const errno = errnoCode(error);
  const why = detail ?? (error instanceof Error ? error.message : String(error));
  const known = errno === undefined ? undefined : SYSTEM_ERRORS[errno];
  if (known === undefined) {
    return new TimewarpError(ErrorCode.IO_ERROR, `${what}: ${why}`, { cause: error });
  }
  return new TimewarpError(known[0], `${what}: ${known[1]} (${why})`, { cause: error });
}

/**
 * The TimewarpError a process boundary (CLI `main`, the MCP tool wrapper) reports for anything
 * thrown: a TimewarpError as it is; a Node system error (it carries an errno code and a syscall)
 * by `fromSystemError`, so a missing file, a directory where a file was expected or a name too
 * long is never INTERNAL (issue 16, class 10); anything else is a bug: INTERNAL with its message
 * (the stack stays in `cause`, out of the message and of the JSON).
 */
export function toTimewarpError(error: unknown): TimewarpError {
  if (error instanceof TimewarpError) return error;
  if (error instanceof Error && errnoCode(error) !== undefined && "syscall" in error) {
    const { syscall, path } = error as { syscall?: unknown; path?: unknown };
    const what = [syscall, path].filter((x) => typeof x === "string").join(" ");
    return fromSystemError(error, what === "" ? "system call" : what, errnoCode(error));
  }
  return new TimewarpError(
    ErrorCode.INTERNAL,
    error instanceof Error ? error.message : String(error),
    { cause: error },
  );
}
