import type { Clock, Random } from "./clock.ts";
import { ErrorCode, TimewarpError } from "./errors.ts";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** `YYYYMMDD_HHMMSS` in UTC: the time part of every id, and of file names made by the time. */
export function timeStamp(date: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return (
    `${p(date.getUTCFullYear(), 4)}${p(date.getUTCMonth() + 1)}${p(date.getUTCDate())}_` +
    `${p(date.getUTCHours())}${p(date.getUTCMinutes())}${p(date.getUTCSeconds())}`
  );
}

function suffix(random: Random, length: number): string {
  const bytes = random.bytes(length);
  let out = "";
  for (const b of bytes) out += ALPHABET[b % 36];
  return out;
}

/**
 * `<prefix>_YYYYMMDD_HHMMSS_xxxxxx`: the seed's six characters are the millisecond in base 36
 * (two characters, `00`…`rr`) and four random ones, so ids made within one second still sort in
 * the order they were made — `snapshot list` and issue lists rely on that.
 */
function timeId(prefix: string, clock: Clock, random: Random): string {
  const now = clock.now();
  return `${prefix}_${timeStamp(now)}_${now.getUTCMilliseconds().toString(36).padStart(2, "0")}${suffix(random, 4)}`;
}

/** Snapshot ids as the seed writes them: `s_20260228_153012_ab12cd` (UTC, sortable). */
export function createSnapshotId(clock: Clock, random: Random): string {
  return timeId("s", clock, random);
}

/** Issue ids: `i_20260228_153500_ef34gh`. */
export function createIssueId(clock: Clock, random: Random): string {
  return timeId("i", clock, random);
}

/** Backup ids for `present_backup/<backup_id>/`: `b_…`. */
export function createBackupId(clock: Clock, random: Random): string {
  return timeId("b", clock, random);
}

/** Turn checkpoint ids (one per user prompt): `t_…`. */
export function createTurnId(clock: Clock, random: Random): string {
  return timeId("t", clock, random);
}

/** SkillPilot job ids (§2.2): `YYYYMMDD_HHMMSS_<pid>_<rand4>`. */
export function createJobId(clock: Clock, random: Random, pid: number = process.pid): string {
  return `${timeStamp(clock.now())}_${pid}_${suffix(random, 4)}`;
}

/** A short random id for records that need no time prefix (ledger operations use their own). */
export function createShortId(random: Random, length = 8): string {
  return suffix(random, length);
}

export const SNAPSHOT_ID_PATTERN = /^s_\d{8}_\d{6}_[0-9a-z]{6}$/;
export const ISSUE_ID_PATTERN = /^i_\d{8}_\d{6}_[0-9a-z]{6}$/;
export const BACKUP_ID_PATTERN = /^b_\d{8}_\d{6}_[0-9a-z]{6}$/;
export const TURN_ID_PATTERN = /^t_\d{8}_\d{6}_[0-9a-z]{6}$/;
export const JOB_ID_PATTERN = /^\d{8}_\d{6}_\d+_[0-9a-z]{4}$/;

/** Throws INVALID_ISSUE_ID unless `id` has the issue-id shape (so it can never escape `issues/`). */
export function assertIssueId(id: string): void {
  if (!ISSUE_ID_PATTERN.test(id)) {
    throw new TimewarpError(
      ErrorCode.INVALID_ISSUE_ID,
      `invalid issue id ${JSON.stringify(id)}: expected i_YYYYMMDD_HHMMSS_xxxxxx`,
    );
  }
}
