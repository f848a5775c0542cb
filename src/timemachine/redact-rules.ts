/**
 * The redactor's own rules (pure): provider key shapes by prefix, and context rules — a value
 * under a name that says secret (`NAME=value`, `"name": "value"`, `name: value`, `--password x`,
 * `-pSECRET` for mysql), in a URL's userinfo, after `Authorization:`, in a PEM block, or in
 * prose near a word that says secret ("the secret is …", "auth token 9dcc4…").
 */
import { looksRandom } from "./redact-entropy.ts";
import type { Range } from "./redact-view.ts";

export const REDACTED = "***REDACTED***";

/** A detection: `token` ranges grow to the whole run of key characters they sit in. */
export interface Finding {
  range: Range;
  token: boolean;
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
  "passcode",
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
  "sig",
  "sessionid",
  "privatekey",
  "accesskey",
  "accountkey",
  "secretkey",
  "clientsecret",
]);

const SENSITIVE_SUBSTRINGS = ["token", "secret", "password", "passwd", "apikey", "api_key"];

/** Parts that name a secret only weakly (`key: enter`, `auth: oauth`): the value must look like one. */
const WEAK_PARTS = new Set(["key", "auth", "pass", "sig", "cookie", "signature"]);

/** Parts that make a `key`/`auth`/`pass` name a credential: API_KEY, db.pass, ACCOUNT_KEY. */
const KEY_QUALIFIERS = new Set([
  "api",
  "access",
  "secret",
  "private",
  "client",
  "master",
  "signing",
  "encryption",
  "account",
  "license",
  "app",
  "service",
  "storage",
  "db",
  "database",
  "admin",
  "root",
  "user",
  "smtp",
  "mail",
  "ssh",
  "x",
]);

/** Name parts that make it metadata about a secret, not the secret (`token_type`, `key_file`). */
const META_PARTS = new Set([
  "file",
  "path",
  "dir",
  "url",
  "uri",
  "type",
  "types",
  "name",
  "names",
  "id",
  "ids",
  "length",
  "size",
  "count",
  "limit",
  "max",
  "min",
  "stdin",
  "env",
  "field",
  "header",
  "prefix",
  "format",
  "mode",
  "policy",
  "expires",
  "expiry",
  "ttl",
  "usage",
  "hint",
  "endpoint",
]);

function nameParts(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((p) => p !== "");
}

/** Cheap first look: every sensitive part or substring contains one of these. */
const SENSITIVE_HINT = /tok|secret|pass|pwd|key|auth|cred|cookie|jwt|bearer|sig/i;

/** True for names like GITHUB_TOKEN, auth_token, apiKey, x-api-key, password, db.pass. */
export function isSensitiveName(name: string): boolean {
  if (!SENSITIVE_HINT.test(name)) return false;
  const lower = name.toLowerCase().replace(/tokeni[sz]/g, "");
  if (SENSITIVE_SUBSTRINGS.some((s) => lower.includes(s))) return true;
  return nameParts(name).some((p) => SENSITIVE_PARTS.has(p));
}

type Strength = "none" | "weak" | "strong";

/** How surely a name holds a secret: `PGPASSWORD` strong, `key` weak, `max_tokens` none. */
function nameStrength(fullName: string): Strength {
  // `token.close`, `this.token.output`: the property named last is what the value is
  const name = fullName.slice(fullName.lastIndexOf(".") + 1);
  if (!isSensitiveName(name)) return "none";
  const parts = nameParts(name);
  const last = parts[parts.length - 1] ?? "";
  if (META_PARTS.has(last)) return "none";
  // `TokenReturnValue`, `secretHandling`: about a secret; the value must look like one
  if (!isSensitiveName(last) && !/^(?:value|val|str|string|b64|base64|hex|raw)$/.test(last))
    return "weak";
  if (/^(?:max|num|n)_?tokens?$|tokens?_?(?:count|used|limit)$/i.test(name)) return "none";
  const lower = name.toLowerCase().replace(/tokeni[sz]/g, "");
  const strong =
    SENSITIVE_SUBSTRINGS.some((s) => lower.includes(s)) ||
    parts.some((p) => (SENSITIVE_PARTS.has(p) && !WEAK_PARTS.has(p)) || KEY_QUALIFIERS.has(p));
  return strong ? "strong" : "weak";
}

/** Values that are not secrets even under a sensitive name: empty, numbers, placeholders. */
function isInnocentValue(value: string): boolean {
  const v = value.trim();
  return (
    v.length < 3 ||
    v.includes(REDACTED) ||
    /^-?\d{1,11}(\.\d+)?$/.test(v) ||
    /^(true|false|null|nil|none|undefined|yes|no|on|off|required|optional|string|number|boolean)$/i.test(
      v,
    ) ||
    /^(?:basic|bearer|token|digest|negotiate|ntlm|hawk|aws4-hmac-sha256)$/i.test(v) || // a scheme
    /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/.test(v) || // a reference to a variable, not its value
    /^\{\{.*\}\}$|^<[^<>]*>$|^\$\(.*\)$|^%[A-Za-z_]+%$/.test(v) || // templates, command output
    /^(?:x{3,}|\*{3,}|\.{3,}|…|-+|your[-_ ].*|changeme|redacted|placeholder|example|dummy)$/i.test(
      v,
    )
  );
}

/** A code expression (`options.token`, `getToken(`, `await`), unless it looks random itself. */
function isCodeExpression(value: string): boolean {
  return (
    /^[([{!]/.test(value) ||
    /^(?:await|new|typeof|this|self|process|os|env|require|import|function|async|return)\b/.test(
      value,
    ) ||
    (/^[A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)*(?:\(|\[|$)/.test(value) &&
      /[.([]/.test(value) &&
      !looksRandom(value.replace(/[^A-Za-z0-9]/g, ""), 16))
  );
}

/** A value that looks like a credential on its own: digits and letters, or random. */
function looksCredential(value: string): boolean {
  if (value.length < 8) return false;
  if (/^[A-Za-z0-9+/]{8,}={0,2}$/.test(value) && value.length % 4 === 0) {
    const decoded = Buffer.from(value, "base64").toString("latin1");
    if (/^[\x21-\x7e]+:[\x20-\x7e]+$/.test(decoded)) return true; // Basic user:password
  }
  if (looksRandom(value, 16)) return true;
  if (!/\d/.test(value) || !/[A-Za-z]/.test(value)) return false;
  if (/^v?\d+(?:\.\d+)+/.test(value)) return false; // a version
  if (/^#?[0-9a-f]{6}$/i.test(value)) return false; // a colour
  if (/^[\w.-]*\.(?:[a-z]{1,4})$/i.test(value) && !/\d{3}/.test(value)) return false; // a file
  if (/\//.test(value) && !looksRandom(value.replace(/\//g, ""), 12)) return false; // a path
  return true;
}

/** Is `value` secret enough under a name of this strength? */
function acceptValue(value: string, strength: Strength): boolean {
  if (strength === "none" || isInnocentValue(value)) return false;
  if (strength === "weak") return looksCredential(value);
  return true;
}

/** Well-known credential shapes (a net under secretlint, whose rules also check lengths/checksums). */
const TOKEN_PATTERNS: RegExp[] = [
  /\bsk-(?:proj|ant|svcacct|admin)-[A-Za-z0-9_-]{16,}/g,
  /\bsk-[A-Za-z0-9]{20,}/g,
  /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bgl(?:pat|dt|rt|ptt|cbt|imt|ft|oas|soat|agent)-[A-Za-z0-9_-]{20,}/g,
  /\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b/g,
  /\bxox[abposre]-[A-Za-z0-9-]{10,}/g,
  /\bxapp-\d-[A-Za-z0-9-]{10,}/g,
  /\bhooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9/_-]{16,}/g,
  /\bnpm_[A-Za-z0-9]{36}\b/g,
  /\bpypi-[A-Za-z0-9_-]{50,}/g,
  /\bhf_[A-Za-z0-9]{30,}/g,
  /\bAIza[0-9A-Za-z_-]{35}/g,
  /\bya29\.[0-9A-Za-z_-]{20,}/g,
  /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/g,
  /\bwhsec_[A-Za-z0-9+/]{20,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, // JWT
  /(?<![0-9])\d{8,10}:[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])/g, // Telegram bot token (also after `/bot` in its URL)
  /\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])/g, // Discord bot token
  /\bdiscord(?:app)?\.com\/api\/webhooks\/\d+\/[A-Za-z0-9_-]{40,}/g,
  /\b(?:SK|AC)[0-9a-fA-F]{32}\b/g, // Twilio
  /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}/g, // SendGrid
  /\bkey-[0-9a-zA-Z]{32}\b/g, // Mailgun
  /\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b/g, // Shopify
  /\bdo[opr]_v1_[a-f0-9]{64}\b/g, // DigitalOcean
  /\bhv[sb]\.[A-Za-z0-9_-]{24,}/g, // Vault
  /\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b/g, // Postman
  /\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b/g, // Linear
  /\bsntr[ysu]_[A-Za-z0-9+/=_-]{40,}/g, // Sentry
  /\bgl(?:sa|c)_[A-Za-z0-9+/=_-]{32,}/g, // Grafana
  /\bdp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,}/g, // Doppler
  /\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b/g,
  /\bdapi[a-f0-9]{32}\b/g, // Databricks
  /\bNRAK-[A-Z0-9]{27}\b/g, // New Relic
  /\bATATT3[A-Za-z0-9_=-]{100,}/g, // Atlassian
  /\b[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}/g, // Azure AD client secret
];

interface ValueRule {
  re: RegExp;
  /** Which capture group is the secret. */
  group: number;
  /** The group holding the name that must say secret; absent: the rule's shape says it. */
  nameGroup?: number;
  /** When the shape says it: how sure (weak: the value must look like a credential). */
  strength?: Strength;
  /** The value must not be a code expression (`token = options.token`, `token: getToken()`). */
  code?: boolean;
  /** Prose: the value must be odd enough for a secret (digits, symbols, or long). */
  prose?: boolean;
}

/** Words that say secret in prose; `auth token`, `api key`, `db password` included. */
const SECRET_WORD =
  "(?:pass(?:word|wd|phrase|code)?|pwd|secrets?|tokens?|api[ _-]?keys?|(?:access|secret|private|signing|license|master|encryption)[ _-]?keys?|keys?|auth|credentials?)";

const VALUE_RULES: ValueRule[] = [
  // Authorization: Basic|Bearer|Token <credentials>, as a header, a JSON field or a curl -H.
  {
    re: /(authorization\\?["']?\s*[:=]\s*\\?["']?\s*(?:(?:Basic|Bearer|Token|Digest|Negotiate)\s+)?)([^\s"'\\,;]+)/dgi,
    group: 2,
    strength: "strong",
  },
  { re: /(\b(?:Bearer|Basic)\s+)([A-Za-z0-9._~+/-]{8,}=*)/dg, group: 2, strength: "weak" },
  // URL credentials: scheme://user:password@host, and redis://:password@host
  {
    re: /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@"'<>]*:)([^\s@/"'<>]+)(@[^\s@]*[A-Za-z0-9])/dgi,
    group: 2,
    strength: "strong",
  },
  // "name": "value" (JSON), \"name\": \"value\" (JSON inside a JSON string), 'name': 'value'.
  { re: /(")([A-Za-z0-9_.-]+)("\s*:\s*")((?:[^"\\\n]|\\.)*)(")/dg, group: 4, nameGroup: 2 },
  { re: /(\\")([A-Za-z0-9_.-]+)(\\"\s*:\s*\\")((?:(?!\\").)*)(\\")/dg, group: 4, nameGroup: 2 },
  { re: /(')([A-Za-z0-9_.-]+)('\s*:\s*')([^'\n]*)(')/dg, group: 4, nameGroup: 2 },
  // NAME=value (shell, export, .env, query strings, --flag=value, key=value; lists), quoted or bare.
  {
    // the value is looked at, not consumed: `next=PGPASSWORD=x` holds two pairs
    re: /()(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)([ \t]*)(=)(?![=>~])(?=([ \t]*)("[^"\n]*"|'[^'\n]*'|`[^`\n]*`|["'][^"'\n]+$|[^\s"'`&;,)\]}]+))/dgm,
    group: 6,
    nameGroup: 2,
    code: true,
  },
  // name: value (YAML, headers like X-Api-Key: …, JS objects), quoted or bare.
  {
    re: /()(?<=^|[\s{,(])([A-Za-z_][A-Za-z0-9_.-]*)(\s*:[ \t]+)(?=("[^"\n]*"|'[^'\n]*'|[^\s"',})\]]+))/dgm,
    group: 4,
    nameGroup: 2,
    code: true,
  },
  // --password secret, --api-key=secret, --auth-token "x" (command lines)
  {
    re: /(^|[\s"'])(--?[A-Za-z0-9][A-Za-z0-9_-]*)([ \t]+|=)("[^"\n]*"|'[^'\n]*'|[^\s"'-][^\s"';&|]*)/dgm,
    group: 4,
    nameGroup: 2,
  },
  // mysql/mariadb -pSECRET (no space), 7z/unrar -pSECRET
  {
    re: /(\b(?:mysql\w*|mariadb\w*|7za?|7zr|unrar|rar)\b[^\n]*?[ \t]-p)([^\s"'`;&|]+|"[^"\n]*"|'[^'\n]*')/dg,
    group: 2,
    strength: "strong",
  },
  // sshpass -p X, docker/podman/helm login -p X, redis-cli -a X, ldap* -w X, mongo* -p X
  {
    re: /(\b(?:sshpass|docker|podman|helm|oras|nerdctl|buildah|skopeo|redis-cli|ldap\w+|mongo\w*|mongosh)\b[^\n]*?[ \t]-[pawP][ \t]+)([^\s"'`;&|-][^\s"'`;&|]*|"[^"\n]*"|'[^'\n]*')/dg,
    group: 2,
    strength: "strong",
  },
  // curl -u user:pass, --user user:pass, smbclient -U user%pass, openssl -passin pass:X
  {
    re: /((?:[ \t]-u|--user|--proxy-user)[ \t]+"?[^\s:"]+:)([^\s"]+)/dg,
    group: 2,
    strength: "strong",
  },
  { re: /([ \t]-U[ \t]+"?[^\s%"]+%)([^\s"]+)/dg, group: 2, strength: "strong" },
  { re: /(\bpass:)([^\s"']+)/dg, group: 2, strength: "weak" },
  // prose: "the secret is X", "password for root: X", "auth token 9dcc4…", "use X as the token"
  {
    re: new RegExp(
      `(\\b${SECRET_WORD}\\b(?:[ \\t]+(?!is\\b|was\\b)[\\w.@-]{1,24}){0,4}?[ \\t]*(?:(?:\\b(?:is|was|are|were|equals|becomes|reads)\\b|:(?!\\/\\/)|=|→|->|=>)(?:[ \\t]+(?:now|still|set to|just))?)[ \\t]*[\`'"“‘]?)([^\\s\`'"”’<>(){}\\[\\],;]{3,})`,
      "dgi",
    ),
    group: 2,
    strength: "strong",
    prose: true,
  },
  {
    re: new RegExp(`(\\b${SECRET_WORD}[ \\t]+[\`'"“‘]?)([^\\s\`'"”’<>(){}\\[\\],;]{8,})`, "dgi"),
    group: 2,
    strength: "weak",
    prose: true,
  },
  {
    re: new RegExp(
      `(^|[\\s\`'"])([^\\s\`'"<>(){}\\[\\],;]{8,})([\`'"]?[ \\t]+(?:as|is)[ \\t]+(?:the|my|your|our|a)?[ \\t]*${SECRET_WORD}\\b)`,
      "dgim",
    ),
    group: 2,
    strength: "weak",
    prose: true,
  },
];

/** Prose values: words ("the key is correct", "key: IdentifierReference") are not secrets. */
function proseValue(value: string, next: string): boolean {
  if (next === "(" || next === "[") return false;
  if (isCodeExpression(value) && !/\d/.test(value)) return false; // but `cobalt.cobalt4064`
  if (/^(?:https?:\/\/|\.{0,2}\/|~\/)/.test(value) && !/@/.test(value)) return false;
  if (/^[\w-]+\.(?:ts|js|mjs|cjs|json|md|py|go|rs|txt|yaml|yml|toml|sh|env|pem|key)$/.test(value))
    return false;
  if (/\d/.test(value) && /[A-Za-z]/.test(value)) return true;
  if (/[!@#$%^&*+=~?]/.test(value) && /[A-Za-z0-9]/.test(value)) return true;
  return looksRandom(value, 12);
}

function valueFindings(text: string): Finding[] {
  const out: Finding[] = [];
  for (const rule of VALUE_RULES) {
    for (const m of text.matchAll(rule.re)) {
      let value = m[rule.group];
      const span = m.indices?.[rule.group];
      if (value === undefined || !span) continue;
      let [from, to] = span;
      const quoted = /^(["'`]).*\1$/s.test(value) && value.length >= 2;
      // keep the quotes of a quoted value, redact inside
      if (quoted) {
        from += 1;
        to -= 1;
        value = value.slice(1, -1);
      } else {
        if (/^["']/.test(value)) {
          from += 1; // a quote the line break left open
          value = value.slice(1);
        }
        // trailing sentence punctuation is not part of a bare value
        const trimmed = value.replace(/[.,:;)]+$/, "");
        to -= value.length - trimmed.length;
        value = trimmed;
      }
      const name = rule.nameGroup === undefined ? undefined : m[rule.nameGroup];
      const strength = name === undefined ? (rule.strength ?? "strong") : nameStrength(name);
      if (!acceptValue(value, strength)) continue;
      const spaced = /[ \t]=[ \t]/.test(text.slice(m.index, from)); // `x = y`: code, INI
      const envStyle = name !== undefined && /^[A-Z0-9_]+$/.test(name) && !spaced; // .env, shell
      if (rule.code && !quoted && !envStyle) {
        if (isCodeExpression(value)) continue;
        // `this.tokens = tokens;`, `type TokenValue = TokenOrValue | …`, `{ token: token, … }`
        const statement = spaced || /:/.test(m[0]);
        const after = text.slice(to, to + 2);
        if (
          /^[A-Za-z_$][A-Za-z_$]*$/.test(value) &&
          statement &&
          /^(?:[;,})]|\s*$| [|&])/.test(after)
        )
          continue;
      }
      if (rule.prose && !proseValue(value, text[to] ?? "")) continue;
      out.push({ range: [from, to], token: false });
    }
  }
  return out;
}

const PEM_BEGIN = /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----/g;

/** PEM private key bodies; without an END line (a cut transcript), the base64 lines after BEGIN. */
function pemFindings(text: string): Finding[] {
  const out: Finding[] = [];
  for (const m of text.matchAll(PEM_BEGIN)) {
    const from = m.index + m[0].length;
    const endMarker = `-----END ${m[1] ?? ""}PRIVATE KEY${m[2] ?? ""}-----`;
    const end = text.indexOf(endMarker, from);
    if (end !== -1) {
      out.push({ range: [from, end], token: false });
      continue;
    }
    const body = /^(?:[ \t]*(?:\r?\n|\\r?\\n)?[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: [^\n]*))*/.exec(
      text.slice(from),
    );
    const to = from + (body?.[0].length ?? 0);
    if (to > from) out.push({ range: [from, to], token: false });
  }
  return out;
}

const AWS_KEY_ID = /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g;
/** 40 base64 characters, maybe wrapped onto a second line. */
const AWS_SECRET =
  /(?<![A-Za-z0-9/+])[A-Za-z0-9/+]+(?:\r?\n[ \t]*[A-Za-z0-9/+]+)?(?![A-Za-z0-9/+])/g;

/**
 * A 40-character base64 run near an AWS access key id is its secret access key, even when it
 * reads like words (the docs' `…EXAMPLEKEY`) and the entropy detector would let it by.
 */
function awsPairFindings(text: string): Finding[] {
  const out: Finding[] = [];
  for (const id of text.matchAll(AWS_KEY_ID)) {
    const from = Math.max(0, id.index - 400);
    const window = text.slice(from, id.index + 420);
    for (const m of window.matchAll(AWS_SECRET)) {
      const key = m[0].replace(/\s+/g, "");
      if (key.length === 40 && /[a-z]/.test(key) && /[A-Z]/.test(key)) {
        out.push({ range: [from + m.index, from + m.index + m[0].length], token: false });
      }
    }
  }
  return out;
}

/** Provider key shapes: each finding grows to the whole key it sits in. */
export function tokenFindings(text: string): Finding[] {
  const out: Finding[] = [];
  for (const re of TOKEN_PATTERNS) {
    for (const m of text.matchAll(re)) {
      out.push({ range: [m.index, m.index + m[0].length], token: true });
    }
  }
  return out;
}

/** Every context rule's finding in `text`: names, flags, URLs, headers, PEM, prose. */
export function contextFindings(text: string): Finding[] {
  return [...pemFindings(text), ...awsPairFindings(text), ...valueFindings(text)];
}
