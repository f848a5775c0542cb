/**
 * Secret redaction for everything an issue stores (seed §5, §10: token/key/password/
 * Authorization → `***REDACTED***`). Two layers:
 *
 * 1. secretlint's recommended preset — a maintained rule set for provider credentials
 *   (OpenAI, Anthropic, GitHub, AWS, GCP, Slack, Stripe, npm, private keys, …);
 * 2. our own rules for the shapes an agent transcript is full of and a provider-oriented
 *   linter does not look for: `NAME=value` (shell, `.env`, query strings), `"name": "value"`
 *   (JSON tool input, also JSON-in-JSON with escaped quotes), `name: value`, `--password x`,
 *   `Authorization: Basic|Bearer …`, URL credentials, PEM blocks, and the well-known key
 *   prefixes as a safety net when secretlint's stricter checks (checksums, lengths) pass a
 *   token by.
 */

export const REDACTED = "***REDACTED***";

type Range = [number, number];

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

/** Words that make an identifier name a secret when it is one of its parts. */
const SENSITIVE_PARTS = new Set([
  "token",
  "tokens",
  "secret",
  "secrets",
  "password",
  "passwd",
  "passphrase",
  "pwd",
  "pass",
  "key",
  "apikey",
  "authorization",
  "auth",
  "credential",
  "credentials",
  "cookie",
  "jwt",
  "bearer",
  "signature",
  "sessionid",
  "privatekey",
  "accesskey",
  "secretkey",
  "clientsecret",
]);

const SENSITIVE_SUBSTRINGS = ["token", "secret", "password", "passwd", "apikey", "api_key"];

/** True for names like GITHUB_TOKEN, auth_token, apiKey, x-api-key, password, db.pass. */
export function isSensitiveName(name: string): boolean {
  const lower = name.toLowerCase();
  if (SENSITIVE_SUBSTRINGS.some((s) => lower.includes(s))) return true;
  const parts = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((p) => p !== "");
  return parts.some((p) => SENSITIVE_PARTS.has(p));
}

/** Values that are not secrets even under a sensitive name: empty, numbers, booleans, placeholders. */
function isInnocentValue(value: string): boolean {
  const v = value.trim();
  return (
    v === "" ||
    v.includes(REDACTED) ||
    /^-?\d{1,11}(\.\d+)?$/.test(v) ||
    /^(true|false|null|none|undefined)$/i.test(v) ||
    /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/.test(v) // a reference to a variable, not its value
  );
}

/** Well-known credential prefixes (a net under secretlint, whose rules also check lengths/checksums). */
const TOKEN_PATTERNS: RegExp[] = [
  /\bsk-(?:proj|ant|svcacct|admin)-[A-Za-z0-9_-]{16,}/g,
  /\bsk-[A-Za-z0-9]{20,}\b/g,
  /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g,
  /\bglpat-[A-Za-z0-9_-]{20,}\b/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}\b/g,
  /\bnpm_[A-Za-z0-9]{36}\b/g,
  /\bhf_[A-Za-z0-9]{30,}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, // JWT
];

interface Rule {
  re: RegExp;
  /** Which capture group is the secret. */
  group: number;
  /** Only redact when the name (this group) is sensitive. */
  nameGroup?: number;
}

const RULES: Rule[] = [
  // PEM private keys (raw, or inside a JSON string with literal \n).
  {
    re: /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----([\s\S]*?)-----END \1PRIVATE KEY\2-----/dg,
    group: 3,
  },
  // Authorization: Basic|Bearer|Token <credentials>, as a header, a JSON field or a curl -H.
  {
    re: /(authorization\\?["']?\s*[:=]\s*\\?["']?\s*(?:(?:Basic|Bearer|Token|Digest|Negotiate)\s+)?)([^\s"'\\,;]+)/dgi,
    group: 2,
  },
  { re: /(\b(?:Bearer|Basic)\s+)([A-Za-z0-9._~+/-]{8,}=*)/dg, group: 2 },
  // URL credentials: scheme://user:password@host
  { re: /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@"']+:)([^\s@/"']+)(@)/dgi, group: 2 },
  // "name": "value" (JSON), and \"name\": \"value\" (JSON inside a JSON string).
  { re: /(")([A-Za-z0-9_.-]+)("\s*:\s*")((?:[^"\\]|\\.)*)(")/dg, group: 4, nameGroup: 2 },
  { re: /(\\")([A-Za-z0-9_.-]+)(\\"\s*:\s*\\")((?:(?!\\").)*)(\\")/dg, group: 4, nameGroup: 2 },
  // 'name': 'value' (Python dicts)
  { re: /(')([A-Za-z0-9_.-]+)('\s*:\s*')([^'\n]*)(')/dg, group: 4, nameGroup: 2 },
  // NAME=value (shell, export, .env, query strings, --flag=value), value quoted or bare.
  {
    re: /(^|[^A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)(\s*=\s*)("[^"\n]*"|'[^'\n]*'|[^\s"'&;,)]+)/dgm,
    group: 4,
    nameGroup: 2,
  },
  // name: value (YAML, headers like X-Api-Key: …); the value must look like a credential.
  {
    re: /(^|[\s{,(])([A-Za-z_][A-Za-z0-9_.-]*)(\s*:[ \t]+)([A-Za-z0-9_\-./+=~]{8,})(?=$|[\s,})])/dgm,
    group: 4,
    nameGroup: 2,
  },
  // --password secret, --api-key secret (command lines)
  {
    re: /(^|\s)(--?[A-Za-z0-9-]*(?:token|password|passwd|secret|api-key|apikey)[A-Za-z0-9-]*)(\s+)([^\s-][^\s]*)/dgim,
    group: 4,
  },
];

function ruleRanges(text: string): Range[] {
  const out: Range[] = [];
  for (const re of TOKEN_PATTERNS) {
    for (const m of text.matchAll(re)) out.push([m.index, m.index + m[0].length]);
  }
  for (const rule of RULES) {
    for (const m of text.matchAll(rule.re)) {
      const name = rule.nameGroup === undefined ? undefined : m[rule.nameGroup];
      if (name !== undefined && !isSensitiveName(name)) continue;
      let value = m[rule.group];
      if (value === undefined || isInnocentValue(value)) continue;
      const span = m.indices?.[rule.group];
      if (!span) continue;
      let [from, to] = span;
      // keep the quotes of a quoted shell value, redact inside
      if (/^(["']).*\1$/s.test(value) && value.length >= 2) {
        from += 1;
        to -= 1;
        value = value.slice(1, -1);
        if (isInnocentValue(value)) continue;
      }
      out.push([from, to]);
    }
  }
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
 * its modules load once per process (≈35 ms), a call on a few hundred KB takes milliseconds.
 * The result is a fixpoint: redacting it again changes nothing.
 *
 * @example await redactSecrets("export GITHUB_TOKEN=ghp_…") // "export GITHUB_TOKEN=***REDACTED***"
 */
export async function redactSecrets(text: string): Promise<string> {
  const first = applyRanges(text, await secretlintRanges(text));
  return applyRanges(first, ruleRanges(first));
}
