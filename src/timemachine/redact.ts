/**
 * Secret redaction for everything an issue stores (seed §5, §10: token/key/password/
 * Authorization → `***REDACTED***`; issue 16, class 8: nothing secret leaves the machine).
 * Detectors, each over the text as written and over its decoded view (JSON/JS escapes,
 * percent-encoding, nested), what they find mapped back to the original span:
 *
 * 1. secretlint's recommended preset — a maintained rule set for provider credentials;
 * 2. provider key shapes by prefix (`redact-rules.ts`), as a net where secretlint's stricter
 *   checks (checksums, lengths) pass a token by;
 * 3. context rules (`redact-rules.ts`): a value under a name or a word that says secret, CLI
 *   password flags, URL credentials, `Authorization:`, PEM blocks;
 * 4. an entropy detector with an allowlist (`redact-entropy.ts`) for keys nothing names.
 *
 * A key found in part is redacted whole (its run of key characters), a key that wraps onto the
 * next line is followed there, and a key split over two lines is also looked for with the lines
 * joined (`redact-view.ts`).
 */
import { entropyRanges } from "./redact-entropy.ts";
import { contextFindings, type Finding, REDACTED, tokenFindings } from "./redact-rules.ts";
import {
  decodedView,
  joinedView,
  originalView,
  type Range,
  type TextView,
  toOriginal,
} from "./redact-view.ts";

export { isSensitiveName, REDACTED } from "./redact-rules.ts";

type LintSource = typeof import("@secretlint/core").lintSource;
type RuleCreator = typeof import("@secretlint/secretlint-rule-preset-recommend").creator;
let secretlint: Promise<{ lintSource: LintSource; creator: RuleCreator }> | undefined;

function loadSecretlint() {
  secretlint ??= Promise.all([
    import("@secretlint/core"),
    import("@secretlint/secretlint-rule-preset-recommend"),
  ]).then(([core, preset]) => ({ lintSource: core.lintSource, creator: preset.creator }));
  return secretlint;
}

async function secretlintRanges(text: string): Promise<Range[]> {
  const { lintSource, creator } = await loadSecretlint();
  const result = await lintSource({
    source: { filePath: "/chat.md", content: text, contentType: "text" },
    options: {
      config: { rules: [{ id: "@secretlint/secretlint-rule-preset-recommend", rule: creator }] },
      noPhysicFilePath: true,
    },
  });
  return result.messages.map((m) => [m.range[0], m.range[1]]);
}

const KEY_CHAR = /[A-Za-z0-9+/_-]/;
const KEY_CHAR_LEFT = /[A-Za-z0-9+_-]/;

/** Grow a range that sits inside a key to the whole key (a rule that matched a prefix). */
function growToKey(text: string, [from, to]: Range): Range {
  let a = from;
  let b = to;
  while (a > 0 && KEY_CHAR_LEFT.test(text[a - 1] ?? "")) a--;
  while (b < text.length && KEY_CHAR.test(text[b] ?? "")) b++;
  while (b < text.length && text[b] === "=" && b - to < 3) b++;
  return [a, b];
}

const CONTINUATION = /^\r?\n[ \t]*([^\s"'`<>(){}[\],;\\]{2,})(?=(\r?\n|$|["'`,;)\]}\\]|[ \t]))/;

/**
 * A secret that ends a line may go on at the start of the next one (a wrapped key, a pasted
 * value split by a terminal): take the next line's first run too when it is all that line
 * holds, or looks like key material itself.
 */
function continueOnNextLine(text: string, [from, to]: Range): Range {
  let end = to;
  for (let lines = 0; lines < 64; lines++) {
    const m = CONTINUATION.exec(text.slice(end, end + 600));
    if (!m) break;
    const run = m[1] ?? "";
    const alone = /^["'`,;)\]}]*\s*$/.test(restOfLine(text, end + m[0].length));
    // right after a secret, anything but a word goes on with it (`Word!x`, `tn8/bPx`)
    const keyLike = /[^A-Za-z]/.test(run) || /[a-z][A-Z]|[A-Z]{2}[a-z]/.test(run);
    if (!alone && !keyLike) break;
    end += m[0].length;
  }
  return [from, end];
}

function restOfLine(text: string, at: number): string {
  const nl = text.indexOf("\n", at);
  return text.slice(at, nl === -1 ? text.length : nl);
}

function findingsIn(view: TextView): Range[] {
  const { text } = view;
  const found: Finding[] = [
    ...tokenFindings(text),
    ...contextFindings(text),
    ...entropyRanges(text).map((range): Finding => ({ range, token: true })),
  ];
  return found.map((f) =>
    toOriginal(view, continueOnNextLine(text, f.token ? growToKey(text, f.range) : f.range)),
  );
}

/**
 * Secrets only visible with the lines joined (a key, a URL's password, a flag's value that a
 * terminal wrapped): what any detector finds across a join.
 */
function joinedFindings(view: TextView): Range[] {
  const joined = joinedView(view);
  if (joined === null) return [];
  const crossesJoin = ([a, b]: Range) => {
    // the first join after a: joins are sorted
    let lo = 0;
    let hi = joined.joins.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((joined.joins[mid] ?? 0) <= a) lo = mid + 1;
      else hi = mid;
    }
    return (joined.joins[lo] ?? Number.POSITIVE_INFINITY) < b;
  };
  const found: Finding[] = [
    ...tokenFindings(joined.text),
    ...contextFindings(joined.text),
    ...entropyRanges(joined.text).map((range): Finding => ({ range, token: true })),
  ];
  return found
    .filter((f) => crossesJoin(f.range))
    .map((f) => toOriginal(joined, f.token ? growToKey(joined.text, f.range) : f.range));
}

/**
 * Every span of `text` that holds a secret, by our own detectors (secretlint aside): the text
 * and its decoded view, then the two joined where lines look wrapped.
 */
function findSecretRanges(text: string): Range[] {
  const original = originalView(text);
  const decoded = decodedView(text);
  const out = findingsIn(original);
  if (decoded !== null) out.push(...findingsIn(decoded));
  out.push(...joinedFindings(decoded ?? original));
  return out;
}

function applyRanges(text: string, ranges: Range[]): string {
  if (ranges.length === 0) return text;
  const sorted = ranges.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  const merged: Range[] = [];
  for (const r of sorted) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  let out = "";
  let at = 0;
  for (const [a, b] of merged) {
    out += text.slice(at, a) + REDACTED;
    at = b;
  }
  return out + text.slice(at);
}

/**
 * Replace every secret in `text` with `***REDACTED***`. Async because secretlint's engine is;
 * its modules load once per process (≈35 ms). The result is a fixpoint: redacting it again
 * changes nothing.
 *
 * @example await redactSecrets("export GITHUB_TOKEN=ghp_…") // "export GITHUB_TOKEN=***REDACTED***"
 */
export async function redactSecrets(text: string): Promise<string> {
  const linted = (await secretlintRanges(text))
    // a URL whose password is already redacted is no finding (the result stays a fixpoint)
    .filter(([a, b]) => !text.slice(a, b).includes(REDACTED))
    .map((r) => continueOnNextLine(text, growToKey(text, r)));
  return applyRanges(text, [...linted, ...findSecretRanges(text)]);
}
