import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  acquireLock,
  acquireLockQueued,
  appendEvent,
  type Clock,
  createShortId,
  ErrorCode,
  fsyncDirectory,
  fsyncFile,
  isProcessAlive,
  isTimewarpError,
  type Random,
  readConfig,
  systemClock,
  systemRandom,
  type WorkspacePaths,
  workspacePaths,
} from "../core/index.ts";
import { collectLedgerOids } from "../ledger/index.ts";
import {
  type CreateSnapshotResult,
  collectDroppedObjects,
  collectGarbage,
  collectReferencedOids,
  createSnapshot,
  deleteSnapshot,
  lastGarbageCollection,
  listSnapshotsChecked,
  type Manifest,
  readManifestText,
  readSnapshot,
  recordId,
  type SnapshotRecord,
} from "../store/index.ts";
import {
  type EnvFingerprint,
  envFingerprintCacheFile,
  probeEnvFingerprint,
} from "./env-fingerprint.ts";
import { issueSnapshotIds } from "./issues.ts";
import { isManualSnapshot, readPinnedIds } from "./manual-snapshots.ts";
import { planCleanup } from "./plan-cleanup.ts";
import {
  assertSessionId,
  deleteSession,
  isSessionLive,
  listSessions,
  readSession,
  rememberSession,
} from "./sessions.ts";
import { assertNoTransition, readState, writeState } from "./state-file.ts";
import { removeTurnSessions, turnRetention } from "./turns.ts";

export interface StartSessionOptions {
  root: string;
  /** The agent's session id (Claude Code's `session_id`); default a new `sess_…`. */
  sessionId?: string;
  /** The zh seed's `initial_task_hint`: the user's goal at session start, if known. */
  taskHint?: string;
  /** Remembered for `issue_report` (Claude Code's `transcript_path`). */
  transcriptPath?: string;
  /**
   * The process bounding the session (default the caller's parent; null: none known, the TTL
   * decides). Its start time is recorded with it.
   */
  pid?: number | null;
  /** The agent the session came from (the hook's `--agent`): recorded for `timewarp doctor`. */
  agent?: string;
  clock?: Clock;
  random?: Random;
  /**
   * The first snapshot's scan, as it goes (entries seen, files read): for the CLI's progress
   * line. The hooks pass none (the agent reads their output).
   */
  onProgress?: (progress: { entries: number; rehashed: number }) => void;
}

export interface CleanupReport {
  skipped: string | null;
  deleted_snapshots: string[];
  deleted_backups: string[];
  expired_sessions: string[];
  kept: number;
  removed_objects: number;
  freed_bytes: number;
}

export interface StartSessionResult {
  session_id: string;
  /**
   * True when the session already had a record and its snapshot (`--continue`/`--resume` keep
   * the id): no snapshot was taken, `snapshot_id` and the counts are the session's own, and
   * no cleanup ran.
   */
  resumed: boolean;
  snapshot_id: string;
  created_at: string;
  files: number;
  bytes: number;
  partial: boolean;
  skipped: { path: string; reason: string }[];
  env_fingerprint: EnvFingerprint;
  cleanup: CleanupReport;
  duration_ms: number;
}

/** How long a session start waits for the workspace lock before it answers LOCKED. */
const SESSION_LOCK_WAIT_MS = 5_000;

/**
 * `on_session_start` (seed §4, §9): snapshot the workspace (seed fields, env fingerprint, task
 * hint, counts, partial), record the session (its own snapshot, transcript path, pid), point
 * state.json's `session_id`/`session_snapshot_id` at it, then clean up: delete the snapshots no
 * issue and no live session references (never the new one, never in the past, never while a
 * transition awaits recover), leftover backups, expired sessions, and garbage-collect objects.
 * A session id that already has a record whose snapshot is still there is the same session
 * started again (Claude Code's `--continue`/`--resume`; issue 17): it keeps its snapshot, the
 * record gains a `resumed_at` time and loses its `ended_at`, state.json names it again, and
 * neither a snapshot nor a cleanup runs (`resumed: true`).
 * Refuses with TRANSITION_INTERRUPTED while a travel/return awaits recover.
 *
 * @example
 * const s = await startSession({ root, sessionId: payload.session_id, transcriptPath: payload.transcript_path });
 */
export async function startSession(options: StartSessionOptions): Promise<StartSessionResult> {
  const started = performance.now();
  const opened = await openSession(options, (paths, state, snap, clock) =>
    cleanUp(paths, state, snap.id, newManifestOf(snap), clock),
  );
  const cleanup = opened.after ?? resumedReport(opened.result.session_id);
  return { ...opened.result, cleanup, duration_ms: ms(started) };
}

/** A session started by `beginSession`, its cleanup still to run. */
export interface BegunSession {
  result: Omit<StartSessionResult, "cleanup">;
  /**
   * The stat cache's update, then the cleanup `startSession` runs, under the workspace lock
   * taken again. When another process holds the lock by then, both are skipped (`skipped` says
   * why; a later scan does more work, the next session start deletes what this one would
   * have); after a travel began, the cleanup is.
   */
  cleanUp(): CleanupReport;
}

/**
 * `startSession` without its cleanup, which the caller runs once it has answered: the hook
 * server answers a SessionStart as soon as the snapshot is recorded, then cleans up while the
 * agent goes on (~6 ms at 10k files, more when a whole gc is due). The stat cache's update
 * (~2 ms at 10k files) waits for the cleanup too.
 */
export async function beginSession(options: StartSessionOptions): Promise<BegunSession> {
  const started = performance.now();
  const opened = await openSession(options, (_paths, _state, snap) => snap, { deferCache: true });
  const snap = opened.after;
  const paths = workspacePaths(options.root);
  const clock = options.clock ?? systemClock;
  return {
    result: { ...opened.result, duration_ms: ms(started) },
    cleanUp(): CleanupReport {
      if (snap === null) return resumedReport(opened.result.session_id);
      let lock: ReturnType<typeof acquireLock>;
      try {
        lock = acquireLock(paths.lock, { command: `session cleanup ${opened.result.session_id}` });
      } catch (error) {
        if (isTimewarpError(error, ErrorCode.LOCKED)) {
          return { ...emptyReport(), skipped: `the workspace is locked (${error.message})` };
        }
        throw error;
      }
      try {
        snap.writeCache?.();
        return cleanUp(paths, readState(paths), snap.id, newManifestOf(snap), clock);
      } finally {
        lock.release();
      }
    },
  };
}

/**
 * The session's snapshot and records, under the workspace lock, then `then` (still under it);
 * a resumed session (`resumableSnapshot`) takes no snapshot and `after` is null. Probes the
 * environment before taking the lock: a slow toolchain shim must not hold other sessions up.
 */
async function openSession<T>(
  options: StartSessionOptions,
  then: (
    paths: WorkspacePaths,
    state: ReturnType<typeof readState>,
    snap: CreateSnapshotResult,
    clock: Clock,
  ) => T,
  snapshotOptions: { deferCache?: boolean } = {},
): Promise<{ result: Omit<StartSessionResult, "cleanup" | "duration_ms">; after: T | null }> {
  const paths = workspacePaths(options.root);
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const sessionId = options.sessionId ?? `sess_${createShortId(random, 12)}`;
  assertSessionId(sessionId);
  mkdirSync(paths.data, { recursive: true });
  assertNoTransition(readState(paths), paths);
  const env = await probeEnvFingerprint({
    root: paths.root,
    cacheFile: envFingerprintCacheFile(paths.data),
  });
  // Waits a little for another holder: an agent that does not await its session-start handler
  // (OpenCode) may checkpoint the first prompt's turn at the same moment.
  const lock = await acquireLockQueued(paths.lock, {
    command: `session start ${sessionId}`,
    waitMs: SESSION_LOCK_WAIT_MS,
  });
  try {
    const state = readState(paths);
    assertNoTransition(state, paths);
    const own = resumableSnapshot(paths, sessionId);
    if (own !== null) {
      rememberSession({
        root: paths.root,
        sessionId,
        resumed: true,
        transcriptPath: options.transcriptPath,
        pid: options.pid,
        taskHint: options.taskHint,
        agent: options.agent,
        clock,
      });
      const id = own.snapshot_id ?? "";
      writeState(paths, { ...state, session_id: sessionId, session_snapshot_id: id });
      appendEvent(
        paths.events,
        "session.resumed",
        {
          session_id: sessionId,
          snapshot_id: id,
          agent: options.agent,
        },
        clock,
      );
      return {
        result: { session_id: sessionId, resumed: true, ...countsOf(own), env_fingerprint: env },
        after: null,
      };
    }
    const snap = createSnapshot(paths.root, {
      sessionId,
      origin: "session",
      envFingerprint: env,
      initialTaskHint: options.taskHint,
      onProgress: options.onProgress,
      ...snapshotOptions,
      clock,
      random,
    });
    rememberSession({
      root: paths.root,
      sessionId,
      snapshotId: snap.id,
      transcriptPath: options.transcriptPath,
      pid: options.pid,
      taskHint: options.taskHint,
      agent: options.agent,
      clock,
    });
    const next = { ...state, session_id: sessionId, session_snapshot_id: snap.id };
    // Not fsynced here: the cleanup syncs it before it deletes anything the old state named
    // (a power cut before that leaves the old state and the snapshots it names).
    writeState(paths, next, { durable: false });
    appendEvent(
      paths.events,
      "session.started",
      {
        session_id: sessionId,
        snapshot_id: snap.id,
        agent: options.agent,
      },
      clock,
    );
    const after = then(paths, next, snap, clock);
    return {
      result: {
        session_id: sessionId,
        resumed: false,
        ...countsOf(snap.record),
        env_fingerprint: env,
      },
      after,
    };
  } finally {
    lock.release();
  }
}

/**
 * The snapshot of a session that already has a record, while it is still there: then a start
 * under that id is a resume (issue 17). Null for a new id, a record without a snapshot (a
 * `rememberSession` before the first start), or a snapshot gone or unreadable (a new one is taken).
 */
function resumableSnapshot(paths: WorkspacePaths, sessionId: string): SnapshotRecord | null {
  const id = readSession(paths, sessionId)?.snapshot_id ?? null;
  if (id === null) return null;
  try {
    return readSnapshot(paths.root, id);
  } catch {
    return null;
  }
}

function countsOf(
  record: SnapshotRecord,
): Pick<
  StartSessionResult,
  "snapshot_id" | "created_at" | "files" | "bytes" | "partial" | "skipped"
> {
  return {
    snapshot_id: record.snapshot_id ?? "",
    created_at: record.created_at,
    files: record.files,
    bytes: record.bytes,
    partial: record.partial,
    skipped: record.skipped.map((s) => ({ path: s.path, reason: s.reason })),
  };
}

/** The cleanup report of a resumed session: nothing was taken, so nothing is cleaned up. */
function resumedReport(sessionId: string): CleanupReport {
  return { ...emptyReport(), skipped: `session ${sessionId} resumed: no new snapshot` };
}

function newManifestOf(snap: CreateSnapshotResult): {
  manifest: () => Manifest;
  text: () => Buffer;
} {
  return { manifest: () => snap.manifest, text: () => snap.manifestText() };
}

function ms(since: number): number {
  return Math.round(performance.now() - since);
}

function emptyReport(): CleanupReport {
  return {
    skipped: null,
    deleted_snapshots: [],
    deleted_backups: [],
    expired_sessions: [],
    kept: 0,
    removed_objects: 0,
    freed_bytes: 0,
  };
}

function cleanUp(
  paths: WorkspacePaths,
  state: ReturnType<typeof readState>,
  newId: string,
  /** The new snapshot's manifest, as text and decoded (only when a whole gc needs it). */
  newManifest: { manifest: () => Manifest; text: () => Buffer },
  clock: Clock,
): CleanupReport {
  const report = emptyReport();
  // The session's state.json, written without an fsync, is made durable before anything goes.
  syncState(paths);
  removeDeadTemp(paths);
  let issueRefs: Set<string>;
  try {
    issueRefs = issueSnapshotIds(paths);
  } catch (error) {
    // Without every issue's snapshot_id nothing can be proven unreferenced: delete nothing.
    report.skipped = `cannot read every issue (${isTimewarpError(error) ? error.message : String(error)})`;
    return report;
  }
  const listed = listRecordsWhole(paths);
  if (!listed.ok) {
    report.skipped = listed.skipped;
    return report;
  }
  const { records, backups } = listed;
  const now = clock.now();
  const liveRefs = new Set<string>();
  const liveIds = new Set<string>();
  for (const s of listSessions(paths)) {
    if (s.session_id === state.session_id || isSessionLive(s, now)) {
      liveIds.add(s.session_id);
      if (s.snapshot_id) liveRefs.add(s.snapshot_id);
    } else {
      deleteSession(paths, s.session_id);
      report.expired_sessions.push(s.session_id);
    }
  }
  const hashOf = new Map(records.map((r) => [r.snapshot_id ?? "", r.manifest.hash]));
  let pinned: Set<string>;
  let retention: ReturnType<typeof readConfig>["retention"];
  try {
    pinned = readPinnedIds(paths);
    retention = readConfig(paths.config).retention;
  } catch (error) {
    // Without the pins and the retention the user's snapshots cannot be told apart: delete nothing.
    report.skipped = `cannot read the pins or the config (${isTimewarpError(error) ? error.message : String(error)})`;
    return report;
  }
  const turns = turnRetention(paths.root, { keep: retention.turn_sessions_keep, live: liveIds });
  const plan = planCleanup({
    snapshotIds: records.map((r) => r.snapshot_id ?? ""),
    backupIds: backups.map(recordId),
    issueRefs,
    liveSessionRefs: liveRefs,
    turnRefs: turns.refs,
    state,
    newSnapshotId: newId,
    pinned,
    manual: records
      .filter(isManualSnapshot)
      .map((r) => ({ snapshot_id: r.snapshot_id ?? "", created_at: r.created_at })),
    manualRetention: {
      keep: retention.manual_snapshots_keep,
      maxAgeDays: retention.manual_snapshots_max_age_days,
      now,
    },
  });
  report.skipped = plan.skipped;
  report.kept = plan.kept.length;
  if (plan.skipped === null) removeTurnSessions(paths.root, turns.drop);
  const dropped = new Set([...plan.deleteSnapshots, ...plan.deleteBackups]);
  const droppedRecords = [...records, ...backups].filter((r) => dropped.has(recordId(r)));
  // Their manifests, read before the records go: what they named is what the gc looks at.
  const droppedTexts = readTexts(paths, droppedRecords);
  for (const id of plan.deleteSnapshots) {
    deleteSnapshot(paths.root, id, { clock });
    report.deleted_snapshots.push(id);
  }
  for (const id of plan.deleteBackups) {
    deleteSnapshot(paths.root, id, { kind: "present_backup", clock });
    report.deleted_backups.push(id);
  }
  // Only snapshots with exactly the new snapshot's manifest went (a session restarted on an
  // unchanged workspace): every object they named, the new one names too, so none can have
  // become garbage, and the gc (which reads every manifest and lists every object) is skipped.
  const newHash = hashOf.get(newId);
  const nothingFreed =
    report.deleted_backups.length === 0 &&
    newHash !== undefined &&
    report.deleted_snapshots.every((id) => hashOf.get(id) === newHash);
  if (report.deleted_snapshots.length + report.deleted_backups.length > 0 && !nothingFreed) {
    // The ledger's stored before/after images are roots too: without them ReverseOp loses its
    // exact-restore rung and milestones their net diffs.
    const ledgerOids = collectLedgerOids(paths.root);
    const keptRecords = [...records, ...backups].filter(
      (r) => !dropped.has(recordId(r)) && recordId(r) !== newId,
    );
    const gc = wholeGcDue(paths.root)
      ? null
      : droppedGc(paths, keptRecords, droppedTexts, newManifest.text, ledgerOids, clock);
    if (gc !== null) {
      report.removed_objects = gc.removed_objects;
      report.freed_bytes = gc.freed_bytes;
    } else {
      const names = new Map<string, string>();
      const roots = collectReferencedOids(paths.root, {
        known: new Map([[newId, newManifest.manifest()]]),
        names,
      });
      for (const oid of ledgerOids) roots.add(oid);
      const whole = collectGarbage(paths.root, { roots, names, clock });
      report.removed_objects = whole.removed_objects;
      report.freed_bytes = whole.freed_bytes;
    }
  }
  return report;
}

/**
 * Every snapshot and present backup record, or why the cleanup must not run: a record that does
 * not read may be the state's, a pinned one or an issue's, and a cleanup working from the rest
 * could delete what it needs (issue 16). So nothing goes, and the skip names the records.
 */
function listRecordsWhole(
  paths: WorkspacePaths,
):
  | { ok: true; records: SnapshotRecord[]; backups: SnapshotRecord[] }
  | { ok: false; skipped: string } {
  const snapshots = listSnapshotsChecked(paths.root);
  const backups = listSnapshotsChecked(paths.root, { kind: "present_backup" });
  const corrupt = [...snapshots.corrupt, ...backups.corrupt];
  if (corrupt.length === 0) {
    return { ok: true, records: snapshots.records, backups: backups.records };
  }
  const named = corrupt.slice(0, 5).map((c) => `${c.id}: ${c.code}`);
  if (corrupt.length > 5) named.push("…");
  return {
    ok: false,
    skipped: `${corrupt.length} snapshot record(s) do not read (${named.join(", ")}); run \`timewarp fsck\``,
  };
}

/**
 * A whole gc (every manifest read, every object listed) runs at a session start once a day:
 * the cleanup's own gc looks only at what the records it deleted named, and garbage made
 * elsewhere (a backup the next travel deleted, a killed snapshot, the ledger's pruned images)
 * waits for it.
 */
const WHOLE_GC_EVERY_MS = 24 * 60 * 60_000;

function wholeGcDue(root: string): boolean {
  const last = lastGarbageCollection(root);
  return last === null || Date.now() - last > WHOLE_GC_EVERY_MS;
}

/** The manifest texts of records, or null when one cannot be read (then a whole gc runs). */
function readTexts(paths: WorkspacePaths, records: SnapshotRecord[]): Buffer[] | null {
  try {
    return records.map((r) => readManifestText(paths.root, r));
  } catch {
    return null;
  }
}

/**
 * The cleanup's gc by the deleted records' manifests (`collectDroppedObjects`), or null when
 * it cannot run (a text unreadable or not canonical): then the whole gc.
 */
function droppedGc(
  paths: WorkspacePaths,
  kept: SnapshotRecord[],
  dropped: Buffer[] | null,
  newText: () => Buffer,
  ledgerOids: ReadonlySet<string>,
  clock: Clock,
): { removed_objects: number; freed_bytes: number } | null {
  if (dropped === null) return null;
  function* keptTexts(): Generator<Buffer> {
    for (const r of kept) yield readManifestText(paths.root, r);
  }
  try {
    return collectDroppedObjects(paths.root, {
      dropped,
      base: newText(),
      kept: keptTexts(),
      extraRoots: ledgerOids,
      clock,
    });
  } catch {
    return null; // a kept manifest unreadable: the whole gc decides (and reports it)
  }
}

function syncState(paths: WorkspacePaths): void {
  if (!existsSync(paths.state)) return;
  fsyncFile(paths.state);
  fsyncDirectory(paths.data);
}

/** Issue folders a killed `issue_report` left half-built in `.timewarp/tmp/`. */
function removeDeadTemp(paths: WorkspacePaths): void {
  let names: string[];
  try {
    names = readdirSync(paths.tmp);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^issue-(\d+)-/.exec(name);
    if (m && !isProcessAlive(Number(m[1]))) {
      try {
        if (statSync(join(paths.tmp, name)).isDirectory()) {
          rmSync(join(paths.tmp, name), { recursive: true, force: true });
        }
      } catch {
        // gone already
      }
    }
  }
}

/**
 * Probe the environment into the workspace's fingerprint cache ahead of the first session
 * start, which then finds it instead of waiting on toolchain shims (pyenv, asdf): `timewarp
 * install` does this. The cache is keyed on everything the answer depends on (PATH, the
 * managers' variables, the binaries), so an agent started with another environment probes anew.
 */
export async function warmEnvFingerprint(root: string): Promise<void> {
  const paths = workspacePaths(root);
  await probeEnvFingerprint({ root: paths.root, cacheFile: envFingerprintCacheFile(paths.data) });
}
