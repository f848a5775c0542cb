import type { Lines } from "./intern-lines.ts";

/**
 * Where a group of added or removed lines can slide (the lines above it equal the lines at its
 * end), put it where git's xdiff does: merged with its neighbours, aligned with a change on the
 * other side when it can be, else at the place its indent heuristic scores best (git's default
 * since 2.14). Without this, equal diffs would put ambiguous blocks (`}` / blank / ` *`) one
 * line off git's choice. The scores and weights are the heuristic's published tuning.
 */

const START_OF_FILE_PENALTY = 1;
const END_OF_FILE_PENALTY = 21;
const TOTAL_BLANK_WEIGHT = -30;
const POST_BLANK_WEIGHT = 6;
const RELATIVE_INDENT_PENALTY = -4;
const RELATIVE_INDENT_WITH_BLANK_PENALTY = 10;
const RELATIVE_OUTDENT_PENALTY = 24;
const RELATIVE_OUTDENT_WITH_BLANK_PENALTY = 17;
const RELATIVE_DEDENT_PENALTY = 23;
const RELATIVE_DEDENT_WITH_BLANK_PENALTY = 17;
const INDENT_WEIGHT = 60;
const MAX_SLIDING = 100;
const MAX_INDENT = 200;
const MAX_BLANKS = 20;

/** One side: its line ids, its change map (1 = changed) and its lines for the indent. */
export interface CompactSide {
  ids: Int32Array;
  changed: Uint8Array;
  lines: Lines;
}

interface Group {
  start: number;
  end: number;
}

const isChanged = (s: CompactSide, i: number) =>
  i >= 0 && i < s.changed.length && s.changed[i] === 1;

function groupAt(s: CompactSide, start: number): Group {
  let end = start;
  while (isChanged(s, end)) end++;
  return { start, end };
}

/** The next group (possibly empty) after `g`; false at the end. */
function groupNext(s: CompactSide, g: Group): boolean {
  if (g.end === s.changed.length) return false;
  const n = groupAt(s, g.end + 1);
  g.start = n.start;
  g.end = n.end;
  return true;
}

function groupPrevious(s: CompactSide, g: Group): boolean {
  if (g.start === 0) return false;
  g.end = g.start - 1;
  g.start = g.end;
  while (isChanged(s, g.start - 1)) g.start--;
  return true;
}

function slideDown(s: CompactSide, g: Group): boolean {
  if (g.end >= s.changed.length || s.ids[g.start] !== s.ids[g.end]) return false;
  s.changed[g.start++] = 0;
  s.changed[g.end++] = 1;
  while (isChanged(s, g.end)) g.end++;
  return true;
}

function slideUp(s: CompactSide, g: Group): boolean {
  if (g.start === 0 || s.ids[g.start - 1] !== s.ids[g.end - 1]) return false;
  s.changed[--g.start] = 1;
  s.changed[--g.end] = 0;
  while (isChanged(s, g.start - 1)) g.start--;
  return true;
}

/** Compact `side` against `other`: git runs it for the old side, then the new one. */
export function compactChanges(side: CompactSide, other: CompactSide): void {
  const g = groupAt(side, 0);
  const go = groupAt(other, 0);
  for (;;) {
    if (g.end !== g.start) placeGroup(side, other, g, go);
    if (!groupNext(side, g)) break;
    groupNext(other, go);
  }
}

function placeGroup(side: CompactSide, other: CompactSide, g: Group, go: Group): void {
  let groupSize: number;
  let earliestEnd: number;
  let endMatchingOther: number;
  do {
    groupSize = g.end - g.start;
    endMatchingOther = -1;
    while (slideUp(side, g)) groupPrevious(other, go);
    earliestEnd = g.end;
    if (go.end > go.start) endMatchingOther = g.end;
    while (slideDown(side, g)) {
      groupNext(other, go);
      if (go.end > go.start) endMatchingOther = g.end;
    }
  } while (groupSize !== g.end - g.start);
  if (g.end === earliestEnd) return;
  if (endMatchingOther !== -1) {
    while (go.end === go.start) {
      slideUp(side, g);
      groupPrevious(other, go);
    }
    return;
  }
  const best = bestShift(side, g, { earliestEnd, groupSize });
  while (g.end > best) {
    slideUp(side, g);
    groupPrevious(other, go);
  }
}

function bestShift(side: CompactSide, g: Group, o: { earliestEnd: number; groupSize: number }) {
  let shift = Math.max(o.earliestEnd, g.end - o.groupSize - 1, g.end - MAX_SLIDING);
  let best = -1;
  let bestIndent = 0;
  let bestPenalty = 0;
  for (; shift <= g.end; shift++) {
    const score = { indent: 0, penalty: 0 };
    addSplit(measureSplit(side.lines, shift), score);
    addSplit(measureSplit(side.lines, shift - o.groupSize), score);
    const cmp = INDENT_WEIGHT * Math.sign(score.indent - bestIndent) + score.penalty - bestPenalty;
    if (best === -1 || cmp <= 0) {
      best = shift;
      bestIndent = score.indent;
      bestPenalty = score.penalty;
    }
  }
  return best;
}

/** Columns of leading white space (tabs to multiples of 8), -1 for a blank line. */
function indentOf(l: Lines, k: number): number {
  const buf = l.buf;
  const end = l.starts[k + 1]!;
  let ret = 0;
  for (let i = l.starts[k]!; i < end; i++) {
    const c = buf[i]!;
    if (c === 0x20) ret += 1;
    else if (c === 0x09) ret += 8 - (ret % 8);
    else if (c !== 0x0a && c !== 0x0b && c !== 0x0c && c !== 0x0d) return ret;
    if (ret >= MAX_INDENT) return MAX_INDENT;
  }
  return -1;
}

interface Split {
  endOfFile: boolean;
  indent: number;
  preBlank: number;
  preIndent: number;
  postBlank: number;
  postIndent: number;
}

function measureSplit(l: Lines, split: number): Split {
  const endOfFile = split >= l.count;
  const m: Split = {
    endOfFile,
    indent: endOfFile ? -1 : indentOf(l, split),
    preBlank: 0,
    preIndent: -1,
    postBlank: 0,
    postIndent: -1,
  };
  for (let i = split - 1; i >= 0; i--) {
    m.preIndent = indentOf(l, i);
    if (m.preIndent !== -1) break;
    if (++m.preBlank === MAX_BLANKS) {
      m.preIndent = 0;
      break;
    }
  }
  for (let i = split + 1; i < l.count; i++) {
    m.postIndent = indentOf(l, i);
    if (m.postIndent !== -1) break;
    if (++m.postBlank === MAX_BLANKS) {
      m.postIndent = 0;
      break;
    }
  }
  return m;
}

function addSplit(m: Split, s: { indent: number; penalty: number }): void {
  if (m.preIndent === -1 && m.preBlank === 0) s.penalty += START_OF_FILE_PENALTY;
  if (m.endOfFile) s.penalty += END_OF_FILE_PENALTY;
  const postBlank = m.indent === -1 ? 1 + m.postBlank : 0;
  const totalBlank = m.preBlank + postBlank;
  s.penalty += TOTAL_BLANK_WEIGHT * totalBlank + POST_BLANK_WEIGHT * postBlank;
  const indent = m.indent !== -1 ? m.indent : m.postIndent;
  const blanks = totalBlank !== 0;
  s.indent += indent;
  if (indent === -1 || m.preIndent === -1 || indent === m.preIndent) return;
  if (indent > m.preIndent) {
    s.penalty += blanks ? RELATIVE_INDENT_WITH_BLANK_PENALTY : RELATIVE_INDENT_PENALTY;
  } else if (m.postIndent !== -1 && m.postIndent > indent) {
    s.penalty += blanks ? RELATIVE_OUTDENT_WITH_BLANK_PENALTY : RELATIVE_OUTDENT_PENALTY;
  } else {
    s.penalty += blanks ? RELATIVE_DEDENT_WITH_BLANK_PENALTY : RELATIVE_DEDENT_PENALTY;
  }
}
