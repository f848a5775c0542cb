import { isUtf8 } from "node:buffer";
import { ErrorCode, gitBlobId, TimewarpError } from "../core/index.ts";
import { applyBinaryHunk } from "./binary-patch.ts";
import type { ApplyConflict, ApplyOptions, CheckResult, FilePatch, Hunk } from "./types.ts";

const ZERO = /^0+$/;

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function oidMatches(actual: string, recorded: string): boolean {
  return recorded.length >= 40 ? actual === recorded : actual.startsWith(recorded);
}

function splitKeepingNewlines(text: string): string[] {
  const out: string[] = [];
  for (let p = 0; p < text.length; ) {
    const i = text.indexOf("\n", p);
    const e = i === -1 ? text.length : i + 1;
    out.push(text.slice(p, e));
    p = e;
  }
  return out;
}

function show(s: string | undefined): string {
  if (s === undefined) return "end of file";
  return JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);
}

/** A hunk's two sides as whole lines (terminators included), in the file's encoding. */
function sides(
  h: Hunk,
  convert: (s: string) => string,
): { old: string[]; new: string[]; lead: number; trail: number } {
  const oldSide: string[] = [];
  const newSide: string[] = [];
  for (const line of h.lines) {
    const c = line[0];
    const body = `${convert(line.slice(1))}\n`;
    if (c !== "+") oldSide.push(body);
    if (c !== "-") newSide.push(body);
  }
  const dropNl = (arr: string[]) => {
    const last = arr.length - 1;
    if (last >= 0) arr[last] = (arr[last] ?? "").slice(0, -1);
  };
  if (h.noNewlineOld) dropNl(oldSide);
  if (h.noNewlineNew) dropNl(newSide);
  let lead = 0;
  while (lead < h.lines.length && h.lines[lead]?.[0] === " ") lead++;
  let trail = 0;
  while (trail < h.lines.length - lead && h.lines[h.lines.length - 1 - trail]?.[0] === " ") trail++;
  return { old: oldSide, new: newSide, lead, trail };
}

function matchesAt(file: readonly string[], pos: number, old: readonly string[]): boolean {
  if (pos < 0 || pos + old.length > file.length) return false;
  for (let k = 0; k < old.length; k++) if (file[pos + k] !== old[k]) return false;
  return true;
}

function mismatchReason(file: readonly string[], pos: number, old: readonly string[]): string {
  if (pos > file.length)
    return `the file has ${file.length} lines, the hunk starts at line ${pos + 1}`;
  for (let k = 0; k < old.length; k++) {
    if (file[pos + k] !== old[k]) {
      return `line ${pos + k + 1} differs: expected ${show(old[k])}, found ${show(file[pos + k])}`;
    }
  }
  return "the hunk overlaps the previous one";
}

/**
 * Apply one file's diff, returning conflicts as values. Strict unless asked: each hunk must match
 * exactly where the record says; a create needs an absent file; a delete must leave nothing; the
 * pre-image must have the `index` line's blob id. `allowOffset` looks elsewhere but refuses a
 * hunk whose old side matches in more than one place; `fuzz` drops up to N outer context lines.
 */
export function checkFilePatch(
  before: Uint8Array | null,
  patch: FilePatch,
  opts: ApplyOptions = {},
): CheckResult {
  const conflicts: ApplyConflict[] = [];
  const whole = (reason: string) =>
    conflicts.push({ hunk: 0, header: patch.headerLines[0] ?? "", reason, expectedAt: 0 });
  const creating = patch.oldPath === null;
  const deleting = patch.newPath === null;
  const checkOid = opts.checkOid !== false;
  if (creating && before !== null) {
    whole(
      `the diff creates ${patch.newPath ?? "the file"}, but it exists (${before.length} bytes)`,
    );
    return { ok: false, conflicts };
  }
  if (!creating && before === null) {
    whole(`the diff changes ${patch.oldPath ?? "the file"}, but it does not exist`);
    return { ok: false, conflicts };
  }
  const base = toBuffer(before ?? new Uint8Array(0));
  if (checkOid && before !== null && patch.oldOid !== undefined && !ZERO.test(patch.oldOid)) {
    const id = gitBlobId(base);
    if (!oidMatches(id, patch.oldOid)) {
      whole(`pre-image blob id is ${id}, the diff expects ${patch.oldOid}`);
    }
  }
  const finish = (result: Uint8Array, exact: boolean): CheckResult => {
    if (
      checkOid &&
      exact &&
      conflicts.length === 0 &&
      !deleting &&
      patch.newOid !== undefined &&
      patch.newOid.length >= 40 &&
      !ZERO.test(patch.newOid) &&
      gitBlobId(result) !== patch.newOid
    ) {
      whole(
        `the result's blob id is ${gitBlobId(result)}, the diff promises ${patch.newOid} (damaged diff?)`,
      );
    }
    if (deleting && result.length > 0 && conflicts.length === 0) {
      whole(`deleting would leave ${result.length} bytes the diff does not remove`);
    }
    if (conflicts.length > 0) return { ok: false, conflicts };
    return { ok: true, result: deleting ? null : result };
  };

  if (patch.isBinary === true || patch.binary !== undefined) {
    if (patch.binary === undefined) {
      whole("binary diff without data (made without --binary)");
      return { ok: false, conflicts };
    }
    const r = applyBinaryHunk(base, patch.binary.forward);
    if (!r.ok) {
      whole(r.reason);
      return { ok: false, conflicts };
    }
    return finish(r.result, true);
  }
  if (patch.hunks.length === 0) {
    if (
      patch.oldOid !== undefined &&
      patch.newOid !== undefined &&
      patch.oldOid !== patch.newOid &&
      !ZERO.test(patch.oldOid) &&
      !ZERO.test(patch.newOid)
    ) {
      whole("the diff records a content change but carries no hunks");
      return { ok: false, conflicts };
    }
    return finish(creating ? new Uint8Array(0) : base, true);
  }

  const patchEnc = patch.encoding ?? "utf8";
  const enc = patchEnc === "utf8" && isUtf8(base) ? "utf8" : "latin1";
  const convert =
    enc === patchEnc ? (s: string) => s : (s: string) => Buffer.from(s, "utf8").toString("latin1");
  const file = splitKeepingNewlines(base.toString(enc));
  const out: string[] = [];
  const fuzz = Math.max(0, opts.fuzz ?? 0);
  let cursor = 0;
  let shift = 0;
  let exact = true;
  patch.hunks.forEach((h, index) => {
    const s = sides(h, convert);
    const recorded = h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
    let found = -1;
    let drop = { lead: 0, trail: 0 };
    let reason = "";
    if (recorded >= cursor && matchesAt(file, recorded, s.old)) found = recorded;
    else reason = mismatchReason(file, recorded, s.old);
    for (let f = opts.allowOffset ? 0 : 1; found < 0 && f <= fuzz; f++) {
      const lead = Math.min(f, s.lead);
      const trail = Math.min(f, s.trail);
      const old = s.old.slice(lead, s.old.length - trail);
      if (old.length === 0) break;
      const want = recorded + lead + shift;
      if (want >= cursor && matchesAt(file, want, old)) {
        found = want;
      } else if (opts.allowOffset) {
        const hits: number[] = [];
        for (let pos = cursor; pos + old.length <= file.length && hits.length < 2; pos++) {
          if (matchesAt(file, pos, old)) hits.push(pos);
        }
        if (hits.length > 1) {
          reason = `does not match at line ${recorded + 1} and its lines occur more than once (lines ${hits.map((x) => x + 1).join(", ")}, …): refusing to guess`;
          break;
        }
        if (hits.length === 1) found = hits[0] ?? -1;
      }
      if (found >= 0) drop = { lead, trail };
    }
    if (found < 0) {
      conflicts.push({ hunk: index + 1, header: h.header, reason, expectedAt: recorded + 1 });
      return;
    }
    if (found !== recorded || drop.lead + drop.trail > 0) exact = false;
    for (let k = cursor; k < found; k++) out.push(file[k] ?? "");
    const newSide = s.new.slice(drop.lead, s.new.length - drop.trail);
    for (const line of newSide) out.push(line);
    cursor = found + s.old.length - drop.lead - drop.trail;
    shift = found - drop.lead - recorded;
  });
  for (let k = cursor; k < file.length; k++) out.push(file[k] ?? "");
  if (conflicts.length > 0) return { ok: false, conflicts };
  return finish(Buffer.from(out.join(""), enc), exact);
}

/**
 * Apply one file's diff to `before` (null: the file is absent). Returns the new content, or
 * null when the diff deletes the file. Throws DIFF_APPLY_CONFLICT with `data.conflicts`.
 */
export function applyFilePatch(
  before: Uint8Array | null,
  patch: FilePatch,
  opts: ApplyOptions = {},
): Uint8Array | null {
  const r = checkFilePatch(before, patch, opts);
  if (r.ok) return r.result;
  const name = patch.newPath ?? patch.oldPath ?? "?";
  throw new TimewarpError(
    ErrorCode.DIFF_APPLY_CONFLICT,
    `diff for ${name} does not apply: ${r.conflicts.map((c) => (c.hunk ? `hunk ${c.hunk} (${c.header}): ${c.reason}` : c.reason)).join("; ")}`,
    { data: { path: name, conflicts: r.conflicts } },
  );
}
