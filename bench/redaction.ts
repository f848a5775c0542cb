/**
 * Redaction recall and false positives (issue 16, class 8).
 *
 * Recall: a corpus generated at run time (seeded PRNG, so nothing here looks like a real key to
 * a push-protection scanner) of secrets in many formats, each wrapped the ways a transcript
 * carries them (plain, JSON-escaped, markdown code block, percent-encoded in a `next=` query
 * parameter, split over two lines, env file line). A secret leaks when any 8 characters of it
 * (fewer for shorter secrets) survive in the redacted text, read as written, decoded
 * (JSON escapes, percent-encoding) or with its lines joined.
 *
 * False positives: READMEs and .js/.ts sources of the installed packages (real, secret-free
 * text; packages whose job is secrets, like secretlint's rules and docs, are left out), each
 * file redacted as one text; a line is touched when the redacted text changed it.
 *
 *   npm run bench:redaction              full run (corpus x2 instances, >= 2 MB of sources)
 *   npm run bench:redaction -- --verbose print every leak and every touched line
 *   BENCH_SEED=7 BENCH_FP_MB=4 npm run bench:redaction
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { redactSecrets } from "../src/timemachine/index.ts";

const verbose = process.argv.includes("--verbose");
const seed = Number(process.env.BENCH_SEED ?? 20260228);
const fpMegabytes = Number(process.env.BENCH_FP_MB ?? 2);
const instances = Number(process.env.BENCH_INSTANCES ?? 2);

// ---------------------------------------------------------------- seeded generation

function mulberry32(a: number): () => number {
  let s = a >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(seed);
const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER = "abcdefghijklmnopqrstuvwxyz";
const DIGITS = "0123456789";
const B62 = UPPER + LOWER + DIGITS;
const B64 = `${B62}+/`;
const B64URL = `${B62}-_`;
const HEX = "0123456789abcdef";
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
const gen = (alphabet: string, n: number) =>
  Array.from({ length: n }, () => alphabet[Math.floor(rand() * alphabet.length)]).join("");
const b64url = (s: string) => Buffer.from(s).toString("base64url");

/** A password a person picks: words, digits, a symbol; or a random one from a manager. */
function password(): string {
  const words = ["Sunset", "river", "Falcon", "maple", "Orbit", "cobalt", "Tango", "quartz"];
  const symbols = "!*-_.~";
  if (rand() < 0.5) {
    return `${pick(words)}${pick([...symbols])}${pick(words)}${int(10, 9999)}${pick([...symbols])}`;
  }
  return gen(`${B62}${symbols}`, int(14, 24));
}

interface Sample {
  /** The secret in its natural surroundings (one line, or a few for PEM). */
  carrier: string;
  /** What must not survive: every one, in full and in part. */
  secrets: string[];
  /** The variable an env file would hold it in (null: the carrier is a command). */
  envName: string | null;
  /** What that variable holds, when more than the secret (a database URL). */
  envValue?: string;
}

type Format = { name: string; make: () => Sample };

const one = (carrier: string, secret: string, envName: string | null): Sample => ({
  carrier,
  secrets: [secret],
  envName,
});

function pemBody(lines: number, first = ""): string {
  const body = first + gen(B64, lines * 64 - first.length);
  return (body.match(/.{1,64}/g) ?? []).join("\n");
}

const FORMATS: Format[] = [
  {
    name: "aws key id + secret",
    make: () => {
      const id = `AKIA${gen(UPPER + DIGITS, 16)}`;
      const secret = gen(B64, 40);
      return {
        carrier: `found credentials ${id} ${secret} in ~/.aws`,
        secrets: [id, secret],
        envName: null,
      };
    },
  },
  {
    name: "aws secret env",
    make: () => {
      const s = gen(B64, 40);
      return one(`AWS_SECRET_ACCESS_KEY=${s} aws s3 ls`, s, "AWS_SECRET_ACCESS_KEY");
    },
  },
  {
    name: "github classic",
    make: () => {
      const t = `ghp_${gen(B62, 36)}`;
      return one(`git push https://x-access-token:${t}@github.com/acme/app.git`, t, "GITHUB_TOKEN");
    },
  },
  {
    name: "github fine-grained",
    make: () => {
      const t = `github_pat_${gen(B62, 22)}_${gen(B62, 59)}`;
      return one(`gh auth login --with-token <<< ${t}`, t, "GH_TOKEN");
    },
  },
  {
    name: "github app",
    make: () => {
      const t = `ghs_${gen(B62, 36)}`;
      return one(`installation token: ${t} (expires in 1h)`, t, "GITHUB_APP_TOKEN");
    },
  },
  {
    name: "gitlab",
    make: () => {
      const t = `glpat-${gen(B64URL, 20)}`;
      return one(
        `curl --header "PRIVATE-TOKEN: ${t}" https://gitlab.com/api/v4/projects`,
        t,
        "GITLAB_TOKEN",
      );
    },
  },
  {
    name: "slack bot",
    make: () => {
      const t = `xoxb-${gen(DIGITS, 12)}-${gen(DIGITS, 13)}-${gen(B62, 24)}`;
      return one(`slack client created with ${t}`, t, "SLACK_BOT_TOKEN");
    },
  },
  {
    name: "slack user",
    make: () => {
      const t = `xoxp-${gen(DIGITS, 12)}-${gen(DIGITS, 12)}-${gen(DIGITS, 13)}-${gen(HEX, 32)}`;
      return one(`using ${t} for the export`, t, "SLACK_USER_TOKEN");
    },
  },
  {
    name: "slack webhook",
    make: () => {
      const path = `T${gen(UPPER + DIGITS, 8)}/B${gen(UPPER + DIGITS, 10)}/${gen(B62, 24)}`;
      const url = `https://hooks.slack.com/services/${path}`;
      return {
        ...one(`curl -X POST -d '{"text":"hi"}' ${url}`, path, "SLACK_WEBHOOK_URL"),
        envValue: url,
      };
    },
  },
  {
    name: "stripe live",
    make: () => {
      const t = `sk_live_${gen(B62, pick([24, 99]))}`;
      return one(`stripe.api_key = "${t}"`, t, "STRIPE_SECRET_KEY");
    },
  },
  {
    name: "stripe test",
    make: () => {
      const t = `${pick(["sk", "rk"])}_test_${gen(B62, pick([24, 99]))}`;
      return one(`const stripe = new Stripe('${t}');`, t, "STRIPE_KEY");
    },
  },
  {
    name: "google api key",
    make: () => {
      const t = `AIza${gen(B64URL, 35)}`;
      return one(
        `https://maps.googleapis.com/maps/api/geocode/json?address=x&key=${t}`,
        t,
        "GOOGLE_API_KEY",
      );
    },
  },
  {
    name: "openai",
    make: () => {
      const t = `sk-proj-${gen(B64URL, 74)}T3BlbkFJ${gen(B64URL, 74)}`;
      return one(`client = OpenAI(api_key="${t}")`, t, "OPENAI_API_KEY");
    },
  },
  {
    name: "anthropic",
    make: () => {
      const t = `sk-ant-api03-${gen(B64URL, 93)}AA`;
      return one(
        `curl https://api.anthropic.com/v1/messages -H "x-api-key: ${t}"`,
        t,
        "ANTHROPIC_API_KEY",
      );
    },
  },
  {
    name: "npm token",
    make: () => {
      const t = `npm_${gen(B62, 36)}`;
      return one(`//registry.npmjs.org/:_authToken=${t}`, t, "NPM_TOKEN");
    },
  },
  {
    name: "pypi token",
    make: () => {
      const t = `pypi-AgEIcHlwaS5vcmc${gen(B64URL, int(60, 150))}`;
      return one(`twine upload -u __token__ -p ${t} dist/*`, t, "PYPI_TOKEN");
    },
  },
  {
    name: "telegram bot",
    make: () => {
      const t = `${int(100000000, 9999999999)}:AA${gen(B64URL, 33)}`;
      return one(`curl https://api.telegram.org/bot${t}/getUpdates`, t, "TELEGRAM_BOT_TOKEN");
    },
  },
  {
    name: "discord bot",
    make: () => {
      const t = `${pick(["M", "N"])}${gen(B62, 23)}.${gen(B64URL, 6)}.${gen(B64URL, 27)}`;
      return one(`client.login("${t}")`, t, "DISCORD_TOKEN");
    },
  },
  {
    name: "discord webhook",
    make: () => {
      const secret = gen(B64URL, 68);
      const url = `https://discord.com/api/webhooks/${gen(DIGITS, 18)}/${secret}`;
      return { ...one(`posting to ${url}`, secret, "DISCORD_WEBHOOK_URL"), envValue: url };
    },
  },
  {
    name: "twilio",
    make: () => {
      const sid = `SK${gen(HEX, 32)}`;
      const secret = gen(B62, 32);
      return {
        carrier: `twilio api:core:messages:create --api-key ${sid} --api-secret ${secret}`,
        secrets: [sid, secret],
        envName: null,
      };
    },
  },
  {
    name: "sendgrid",
    make: () => {
      const t = `SG.${gen(B64URL, 22)}.${gen(B64URL, 43)}`;
      return one(`sg = SendGridAPIClient("${t}")`, t, "SENDGRID_API_KEY");
    },
  },
  {
    name: "mailgun",
    make: () => {
      const t = `key-${gen(HEX, 32)}`;
      return one(
        `curl -s --user 'api:${t}' https://api.mailgun.net/v3/mg.example.com/messages`,
        t,
        "MAILGUN_API_KEY",
      );
    },
  },
  {
    name: "jwt",
    make: () => {
      const header = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
      const payload = b64url(
        JSON.stringify({ sub: gen(DIGITS, 10), name: "Ada", iat: int(1e9, 2e9) }),
      );
      const t = `${header}.${payload}.${gen(B64URL, 43)}`;
      return one(`the response set cookie session=${t}; Path=/`, t, "SESSION_JWT");
    },
  },
  {
    name: "pem private key",
    make: () => {
      const body = pemBody(int(6, 12));
      return {
        carrier: `-----BEGIN RSA PRIVATE KEY-----\n${body}\n-----END RSA PRIVATE KEY-----`,
        secrets: body.split("\n"),
        envName: null,
      };
    },
  },
  {
    name: "ssh private key",
    make: () => {
      const body = pemBody(
        int(5, 9),
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
      );
      const secret = body.split("\n").slice(1);
      return {
        carrier: `cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n${body}\n-----END OPENSSH PRIVATE KEY-----`,
        secrets: secret,
        envName: null,
      };
    },
  },
  {
    name: "postgres url",
    make: () => {
      const pw = password();
      const url = `postgres://app:${pw}@db.internal:5432/app`;
      return { ...one(`DATABASE_URL=${url} npm run migrate`, pw, "DATABASE_URL"), envValue: url };
    },
  },
  {
    name: "mysql url",
    make: () => {
      const pw = password();
      const url = `mysql://root:${pw}@127.0.0.1:3306/shop`;
      return { ...one(`connecting to ${url}`, pw, "MYSQL_URL"), envValue: url };
    },
  },
  {
    name: "mongodb url",
    make: () => {
      const pw = password();
      const url = `mongodb+srv://admin:${pw}@cluster0.ab1cd.mongodb.net/test?retryWrites=true`;
      return { ...one(`mongosh "${url}"`, pw, "MONGO_URI"), envValue: url };
    },
  },
  {
    name: "redis url",
    make: () => {
      const pw = password();
      const url = `${pick(["redis://:", "rediss://default:"])}${pw}@cache.internal:6379/0`;
      return { ...one(`REDIS_URL=${url}`, pw, "REDIS_URL"), envValue: url };
    },
  },
  {
    name: "basic-auth url",
    make: () => {
      const pw = password();
      const url = `https://deploy:${pw}@ci.example.com/job/app/build`;
      return { ...one(`curl ${url}`, pw, "CI_URL"), envValue: url };
    },
  },
  {
    name: "password cli flag",
    make: () => {
      const pw = password();
      const carrier = pick([
        `mysql -u root -p${pw} shop < dump.sql`,
        `mysqldump -h db -uroot -p${pw} app > app.sql`,
        `PGPASSWORD=${pw} psql -h db -U app`,
        `pg_dump --dbname=app --password=${pw}`,
        `ldapsearch -x -D cn=admin -w ${pw} -b dc=example`,
        `sshpass -p ${pw} ssh deploy@10.0.0.5`,
        `docker login -u ci -p ${pw} registry.example.com`,
        `curl -u admin:${pw} https://jenkins.example.com/api/json`,
        `redis-cli -h cache -a ${pw} ping`,
        `openssl pkcs12 -in cert.p12 -passin pass:${pw} -nodes`,
        `htpasswd-tool --password ${pw} --user admin`,
      ]);
      return one(carrier, pw, null);
    },
  },
  {
    name: "env assignment",
    make: () => {
      const name = pick([
        "DB_PASSWORD",
        "SECRET_KEY_BASE",
        "JWT_SECRET",
        "API_TOKEN",
        "ADMIN_PASS",
        "SESSION_SECRET",
      ]);
      const value = pick([password(), gen(HEX, 64), gen(B64, 44)]);
      return one(`export ${name}=${value}`, value, name);
    },
  },
  {
    name: "prose password",
    make: () => {
      const pw = password();
      const hex = gen(HEX, 32);
      return pick([
        one(`the password is ${pw}`, pw, null),
        one(`the secret is ${pw}, do not share it`, pw, null),
        one(`I used auth token ${hex} for the call`, hex, null),
        one(`my password for the staging db is ${pw}`, pw, null),
        one(`the api key: ${pw}`, pw, null),
        one(`use ${gen(B62, 20)}1 as the token`, "", null),
      ]);
    },
  },
  {
    name: "azure storage key",
    make: () => {
      const k = `${gen(B64, 86)}==`;
      return one(
        `DefaultEndpointsProtocol=https;AccountName=acmedata;AccountKey=${k};EndpointSuffix=core.windows.net`,
        k,
        "AZURE_STORAGE_CONNECTION_STRING",
      );
    },
  },
  {
    name: "generic hex key",
    make: () => {
      const k = gen(HEX, pick([32, 48, 56]));
      return one(`const client = new Client("${k}");`, k, "CLIENT_KEY");
    },
  },
  {
    name: "generic base64 key",
    make: () => {
      const k = gen(B64, pick([32, 40, 64]));
      return one(`client.connect({ region: "eu", credential: "${k}" })`, k, "SERVICE_CREDENTIAL");
    },
  },
  {
    name: "generic unnamed base62",
    make: () => {
      const k = gen(B62, int(24, 48));
      return one(`ran: deploy-tool push ${k} --region eu-west-1`, k, "DEPLOY_VALUE");
    },
  },
];

// the "use X as the token" prose case: its secret is the X the carrier holds
function fixSample(s: Sample): Sample {
  if (s.secrets[0] !== "") return s;
  const x = /^use (\S+) as the token$/.exec(s.carrier)?.[1] ?? "";
  return { ...s, secrets: [x] };
}

// ---------------------------------------------------------------- wrappings

/** Split the longest secret in the middle with a line break. */
function splitTwoLines(s: Sample): string {
  const longest = [...s.secrets].sort((a, b) => b.length - a.length)[0] ?? "";
  const at = Math.floor(longest.length / 2);
  return s.carrier.replace(longest, `${longest.slice(0, at)}\n${longest.slice(at)}`);
}

const WRAPPINGS: { name: string; wrap: (s: Sample) => string }[] = [
  { name: "plain", wrap: (s) => `[user] please check this:\n${s.carrier}\nthanks` },
  {
    name: "json-escaped",
    wrap: (s) => `[tool:Bash] input: ${JSON.stringify({ command: s.carrier, timeout: 120000 })}`,
  },
  { name: "code block", wrap: (s) => `[assistant] Run:\n\n\`\`\`sh\n${s.carrier}\n\`\`\`\n` },
  {
    name: "url-encoded",
    wrap: (s) =>
      `[tool:WebFetch] input: GET https://app.example.com/login?next=${encodeURIComponent(s.carrier)}&lang=en`,
  },
  { name: "split lines", wrap: (s) => `[tool:Bash] output: ${splitTwoLines(s)}\n(exit 0)` },
  {
    name: "env file",
    wrap: (s) =>
      s.envName === null || s.secrets.length !== 1
        ? `# .env\nNODE_ENV=production\nDEPLOY_NOTE="${s.carrier.replace(/\n/g, "\\n").replace(/"/g, '\\"')}"\nPORT=8080\n`
        : `# .env\nNODE_ENV=production\n${s.envName}=${s.envValue ?? s.secrets[0]}\nPORT=8080\n`,
  },
];

// ---------------------------------------------------------------- leak check

function decodeAll(text: string): string {
  let out = text;
  for (let i = 0; i < 4; i++) {
    const next = out
      .replace(/\\(["\\/])/g, "$1")
      .replace(/\\n/g, "\n")
      .replace(/%[0-9a-fA-F]{2}/g, (m) => String.fromCharCode(Number.parseInt(m.slice(1), 16)));
    if (next === out) break;
    out = next;
  }
  return out;
}
const joinLines = (text: string) => text.replace(/\r?\n[ \t]*/g, "");

/** The part of `secret` that survived, or null. */
function leakOf(secret: string, views: string[]): string | null {
  const w = Math.min(8, secret.length);
  for (let i = 0; i + w <= secret.length; i++) {
    const window = secret.slice(i, i + w);
    if (views.some((v) => v.includes(window))) return window;
  }
  return null;
}

// ---------------------------------------------------------------- recall

interface Tally {
  cases: number;
  leaked: number;
}
const byFormat = new Map<string, Tally>();
const byWrapping = new Map<string, Tally>();
const leaks: string[] = [];
let secretsTotal = 0;
let secretsLeaked = 0;
const recallStart = performance.now();
let corpusBytes = 0;
let notFixpoint = 0;
for (let n = 0; n < instances; n++) {
  for (const format of FORMATS) {
    for (const wrapping of WRAPPINGS) {
      const sample = fixSample(format.make());
      const text = wrapping.wrap(sample);
      corpusBytes += Buffer.byteLength(text);
      const out = await redactSecrets(text);
      const again = await redactSecrets(out);
      if (again !== out) {
        notFixpoint++;
        if (verbose)
          console.log(
            `  NOT A FIXPOINT ${format.name} / ${wrapping.name}\n    ${out}\n    ${again}`,
          );
      }
      const decoded = decodeAll(out);
      const views = [out, decoded, joinLines(out), joinLines(decoded)];
      let caseLeaked = false;
      for (const secret of sample.secrets) {
        secretsTotal++;
        const leak = leakOf(secret, views);
        if (leak !== null) {
          secretsLeaked++;
          caseLeaked = true;
          leaks.push(
            `${format.name} / ${wrapping.name}: "${leak}" of ${secret.slice(0, 60)}\n    ${out.replace(/\n/g, "\n    ").slice(0, 600)}`,
          );
        }
      }
      for (const [map, key] of [
        [byFormat, format.name],
        [byWrapping, wrapping.name],
      ] as const) {
        const t = map.get(key) ?? { cases: 0, leaked: 0 };
        t.cases++;
        if (caseLeaked) t.leaked++;
        map.set(key, t);
      }
    }
  }
}
const recallMs = performance.now() - recallStart;

function printTable(title: string, map: Map<string, Tally>) {
  console.log(`\n${title}`);
  for (const [k, t] of map) {
    const recall = ((t.cases - t.leaked) / t.cases) * 100;
    console.log(
      `  ${k.padEnd(24)} ${String(t.cases).padStart(4)} cases  recall ${recall.toFixed(1).padStart(5)}%${t.leaked ? `  (${t.leaked} leaked)` : ""}`,
    );
  }
}
console.log(
  `redaction bench (seed ${seed}): ${FORMATS.length} formats x ${WRAPPINGS.length} wrappings x ${instances} = ${FORMATS.length * WRAPPINGS.length * instances} cases, ${secretsTotal} secrets`,
);
printTable("recall per format", byFormat);
printTable("recall per wrapping", byWrapping);
console.log(
  `\nleaked: ${secretsLeaked} of ${secretsTotal} secrets (in full or in part); not a fixpoint: ${notFixpoint} texts`,
);
if (verbose) for (const l of leaks) console.log(`  LEAK ${l}`);
else for (const l of leaks.slice(0, 10)) console.log(`  LEAK ${l.split("\n")[0]}`);

// ---------------------------------------------------------------- false positives

const modules = resolve(
  process.env.BENCH_FP_ROOT ?? join(import.meta.dirname, "..", "node_modules"),
);
/** Packages whose job is secrets: their docs and rules hold key-shaped examples on purpose. */
const SECRET_PACKAGES = /(?:^|\/)(?:@secretlint|secretlint)(?:\/|$)/;
const files: string[] = [];
function walk(dir: string) {
  let entries: import("node:fs").Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const p = join(dir, e.name);
    if (SECRET_PACKAGES.test(relative(modules, p))) continue;
    if (e.isDirectory()) walk(p);
    else if (e.isFile() && /(?:^README\.md$|\.(?:js|mjs|cjs|ts)$)/i.test(e.name)) files.push(p);
  }
}
walk(modules);
// spread the sample over every package: round-robin by package, not the first packages only
const byPackage = new Map<string, string[]>();
for (const f of files) {
  const rel = relative(modules, f).split("/");
  const pkg = rel[0]?.startsWith("@") ? `${rel[0]}/${rel[1]}` : (rel[0] ?? "");
  byPackage.set(pkg, [...(byPackage.get(pkg) ?? []), f]);
}
const chosen: string[] = [];
let fpBytes = 0;
const queues = [...byPackage.values()];
while (fpBytes < fpMegabytes * 1024 * 1024 && queues.some((q) => q.length > 0)) {
  for (const q of queues) {
    const f = q.shift();
    if (f === undefined) continue;
    const size = statSync(f).size;
    if (size > 256 * 1024 || size === 0) continue;
    chosen.push(f);
    fpBytes += size;
  }
}

let lines = 0;
let touched = 0;
const touchedLines: string[] = [];
const fpStart = performance.now();
for (const f of chosen) {
  const text = readFileSync(f, "utf8");
  const out = await redactSecrets(text);
  const before = text.split("\n");
  lines += before.length;
  if (out === text) continue;
  const after = out.split("\n");
  if (after.length === before.length) {
    for (let i = 0; i < before.length; i++) {
      if (before[i] !== after[i]) {
        touched++;
        touchedLines.push(
          `${relative(modules, f)}:${i + 1}: ${(after[i] ?? "").trim().slice(0, 160)}`,
        );
      }
    }
  } else {
    const kept = new Map<string, number>();
    for (const l of after) kept.set(l, (kept.get(l) ?? 0) + 1);
    for (const [i, l] of before.entries()) {
      const n = kept.get(l) ?? 0;
      if (n > 0) kept.set(l, n - 1);
      else {
        touched++;
        touchedLines.push(`${relative(modules, f)}:${i + 1}: (joined) ${l.trim().slice(0, 160)}`);
      }
    }
  }
}
const fpMs = performance.now() - fpStart;
const mb = fpBytes / (1024 * 1024);
console.log(
  `\nfalse positives: ${touched} of ${lines} lines touched (${((touched / lines) * 100).toFixed(3)}%) in ${chosen.length} files, ${mb.toFixed(2)} MB from ${byPackage.size} packages`,
);
for (const l of verbose ? touchedLines : touchedLines.slice(0, 15)) console.log(`  ${l}`);
console.log(
  `\nthroughput: ${(mb / (fpMs / 1000)).toFixed(2)} MB/s on the sources (${fpMs.toFixed(0)} ms), ` +
    `${(corpusBytes / 1024 / (recallMs / 1000)).toFixed(0)} KiB/s on the corpus (${recallMs.toFixed(0)} ms, each text twice)`,
);
console.log(`peak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
