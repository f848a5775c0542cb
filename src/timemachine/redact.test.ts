import { describe, expect, it } from "vitest";
import { isSensitiveName, REDACTED, redactSecrets } from "./redact.ts";

// Real token shapes (random bodies, right prefixes and lengths). Assembled at run time so this
// file itself never looks like it holds a credential.
const b62 = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz";
const rep = (s: string, n: number) => s.repeat(Math.ceil(n / s.length)).slice(0, n);
const OPENAI = `sk-proj-${rep(b62, 74)}T3BlbkFJ${rep(b62, 74)}`;
const ANTHROPIC = `sk-ant-api03-${rep(b62, 93)}-${rep("Qw", 6)}AA`;
const GITHUB = `ghp_${rep(b62, 36)}`;
const AWS_ID = `AKIA${rep("Q7RZ4M2XKP", 16)}`;
const AWS_SECRET = rep("wJalrXUtnFEMI/K7MDENG/bPxRfiCYz", 40);
const PEM = [
  "-----BEGIN RSA PRIVATE KEY-----",
  "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
  "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
  "-----END RSA PRIVATE KEY-----",
].join("\n");

async function expectGone(input: string, secret: string) {
  const out = await redactSecrets(input);
  expect(out).not.toContain(secret);
  expect(out).toContain(REDACTED);
  return out;
}

describe("redactSecrets", () => {
  it("removes provider keys by prefix: sk-proj, sk-ant, ghp_, AKIA", async () => {
    for (const token of [OPENAI, ANTHROPIC, GITHUB, AWS_ID]) {
      const out = await expectGone(`the agent ran: curl -d key ${token} done`, token);
      expect(out).toMatch(/^the agent ran: curl/);
      expect(out).toMatch(/ done$/);
    }
  });

  it("removes Authorization Basic and Bearer credentials, keeping the scheme", async () => {
    const basic = await expectGone("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpw");
    expect(basic).toBe(`Authorization: Basic ${REDACTED}`);
    const bearer = await expectGone(
      `curl -H "Authorization: Bearer ${GITHUB}" https://api.github.com`,
      GITHUB,
    );
    expect(bearer).toContain("https://api.github.com");
    await expectGone(
      '{"headers":{"Authorization":"Bearer abcdef0123456789xyz"}}',
      "abcdef0123456789xyz",
    );
  });

  it("removes PEM private key bodies, raw and inside JSON strings", async () => {
    const out = await expectGone(`key file:\n${PEM}\nend`, "MIIEowIBAAKCAQEAu1SU1Lf");
    expect(out).toMatch(/^key file:\n/);
    const json = JSON.stringify({ content: PEM });
    await expectGone(json, "MIIEowIBAAKCAQEAu1SU1Lf");
  });

  it("removes key/value pairs in every spelling a transcript uses", async () => {
    const cases: [string, string][] = [
      ["auth_token=abc123secretvalue", "abc123secretvalue"],
      ["export GITHUB_TOKEN=plainvalue42", "plainvalue42"],
      ['export OPENAI_API_KEY="quoted value 9"', "quoted value 9"],
      ['{"command":"login","password":"hunter2!"}', "hunter2!"],
      ['{"input":"{\\"password\\": \\"s3cr3t-in-json\\"}"}', "s3cr3t-in-json"],
      ["DB_PASSWORD: Sup3rSecretPass", "Sup3rSecretPass"],
      ["x-api-key: 0123456789abcdef", "0123456789abcdef"],
      ["mysql --password hunter2pass -u root", "hunter2pass"],
      ["https://me:pa55word@example.com/repo.git", "pa55word"],
      ["GET /cb?access_token=tok987654&x=1", "tok987654"],
      [`aws_secret_access_key = ${AWS_SECRET}`, AWS_SECRET],
      ["{'api_key': 'py-dict-secret'}", "py-dict-secret"],
      ["apiKey=camelCaseSecret1", "camelCaseSecret1"],
    ];
    for (const [input, secret] of cases) await expectGone(input, secret);
  });

  it("leaves ordinary text, numbers and file paths alone", async () => {
    const text = [
      "input_tokens=1234 max_tokens: 4096",
      "Edit src/keyboard.ts and run npm test",
      '{"file_path":"/repo/src/index.ts","old_string":"a","new_string":"b"}',
      "The password field must be validated.",
      "export PATH=/usr/bin:$PATH",
    ].join("\n");
    expect(await redactSecrets(text)).toBe(text);
  });

  it("is a fixpoint", async () => {
    const once = await redactSecrets(`token=${GITHUB} and ${OPENAI}`);
    expect(await redactSecrets(once)).toBe(once);
  });

  it("names: sensitive by part or substring, not by accident", () => {
    expect(isSensitiveName("GITHUB_TOKEN")).toBe(true);
    expect(isSensitiveName("apiKey")).toBe(true);
    expect(isSensitiveName("x-api-key")).toBe(true);
    expect(isSensitiveName("keyboard")).toBe(false);
    expect(isSensitiveName("file_path")).toBe(false);
  });
});

// ---- issue 16, class 8: what a realistic transcript leaked, each in every wrapping ----

/** Any `width` characters of `secret` that survived in `out`, read as written or decoded. */
function survivor(out: string, secret: string, width = 8): string | null {
  const decoded = [
    out,
    decodeURIComponentSafe(out),
    out.replace(/\\n/g, "\n").replace(/\\"/g, '"'),
  ];
  const views = [...decoded, ...decoded.map((v) => v.replace(/\r?\n[ \t]*/g, ""))];
  const w = Math.min(width, secret.length);
  for (let i = 0; i + w <= secret.length; i++) {
    const piece = secret.slice(i, i + w);
    if (views.some((v) => v.includes(piece))) return piece;
  }
  return null;
}

function decodeURIComponentSafe(s: string): string {
  let out = s;
  for (let i = 0; i < 3; i++)
    out = out.replace(/%[0-9a-f]{2}/gi, (m) =>
      String.fromCharCode(Number.parseInt(m.slice(1), 16)),
    );
  return out;
}

/** The ways a transcript carries a line: as written, in JSON, fenced, in `next=`, wrapped, .env. */
function wrappings(carrier: string, secret: string): [string, string][] {
  const at = Math.floor(secret.length / 2);
  return [
    ["plain", `[user] look:\n${carrier}\nok`],
    ["json", `[tool:Bash] input: ${JSON.stringify({ command: carrier })}`],
    ["code block", `Run:\n\n\`\`\`sh\n${carrier}\n\`\`\`\n`],
    ["url-encoded", `GET https://app.example.com/login?next=${encodeURIComponent(carrier)}&x=1`],
    ["split", carrier.replace(secret, `${secret.slice(0, at)}\n${secret.slice(at)}`)],
    ["env file", `NODE_ENV=production\nDEPLOY_NOTE="${carrier.replace(/"/g, '\\"')}"\nPORT=8080`],
  ];
}

const TELEGRAM = `${"8123456"}70:AA${rep("Hfq9Kz_x-4WmR2zSjiQ7v", 33)}`;
const AWS_DOC_ID = ["AKIA", "IOSFODNN7", "EXAMPLE"].join("");
const AWS_DOC_SECRET = ["wJalrXUtnFEMI", "K7MDENG", "bPxRfiCYEXAMPLEKEY"].join("/");
const RANDOM40 = ["Zq3+Yt8/Lm0xRw5vKb2N", "jH7cPd4sGf1ue9aTy6WE"].join("");
const HEX32 = "9dcc4f0b1e2a7c3d5e6f8091a2b3c4d5";

const LEAKS: { name: string; carrier: string; secret: string }[] = [
  {
    name: "mysql -pPASSWORD",
    carrier: "mysql -u root -pS3cretPassw0rd shop < dump.sql",
    secret: "S3cretPassw0rd",
  },
  {
    name: "a password percent-encoded in next=",
    carrier:
      "curl 'https://app.example.com/login?next=%2Fcallback%3Fuser%3Dme%26password%3DHunter2Secret%21'",
    secret: "Hunter2Secret",
  },
  {
    name: "a Telegram bot token",
    carrier: `curl https://api.telegram.org/bot${TELEGRAM}/getMe`,
    secret: TELEGRAM,
  },
  {
    name: "the secret is …",
    carrier: "ok, the secret is Xk9vQ2mLp7RtZ4wB, keep it safe",
    secret: "Xk9vQ2mLp7RtZ4wB",
  },
  {
    name: "auth token 9dcc4…",
    carrier: `I used the auth token ${HEX32} for that call`,
    secret: HEX32,
  },
  {
    name: "AWS_SECRET_ACCESS_KEY=… (whole, not its last 22 characters)",
    carrier: `AWS_SECRET_ACCESS_KEY=${AWS_SECRET.slice(0, 18)}+${AWS_SECRET.slice(19)} aws s3 ls`,
    secret: `${AWS_SECRET.slice(0, 18)}+${AWS_SECRET.slice(19)}`,
  },
  {
    name: "a bare AWS secret next to its key id",
    carrier: `found ${AWS_DOC_ID} ${AWS_DOC_SECRET} in the backup`,
    secret: AWS_DOC_SECRET,
  },
  {
    name: "PGPASSWORD=",
    carrier: "PGPASSWORD='pa55-Word!x' psql -h db -U app",
    secret: "pa55-Word!x",
  },
  {
    name: "--password=",
    carrier: "pg_dump --dbname=app --password=Tr0ub4dor.3 > x.sql",
    secret: "Tr0ub4dor.3",
  },
  {
    name: "user:pass@host",
    carrier: "git clone https://deploy:Gx7_pQ2w~zz@git.example.com/app.git",
    secret: "Gx7_pQ2w~zz",
  },
  {
    name: "redis://:pass@host",
    carrier: "REDIS=redis://:Rd1s-Pa55w0rd@cache:6379/0",
    secret: "Rd1s-Pa55w0rd",
  },
  { name: "an OpenAI key", carrier: `export KEY_FOR_LATER=${OPENAI}`, secret: OPENAI },
  { name: "a GitHub token", carrier: `gh auth login --with-token <<< ${GITHUB}`, secret: GITHUB },
];

describe("redactSecrets: the leaks of issue 16, in every wrapping", () => {
  for (const leak of LEAKS) {
    it(leak.name, async () => {
      for (const [wrapping, text] of wrappings(leak.carrier, leak.secret)) {
        const out = await redactSecrets(text);
        expect({ wrapping, leaked: survivor(out, leak.secret), out }).toMatchObject({
          wrapping,
          leaked: null,
        });
        expect(await redactSecrets(out)).toBe(out);
      }
    });
  }

  it("a key split over two lines: both halves go, with or without a prefix", async () => {
    const azure = rep("q8Zr/T2+vWk9LmNp3XyB7cDf", 86);
    for (const [secret, text] of [
      [OPENAI, `key: ${OPENAI.slice(0, 40)}\n${OPENAI.slice(40)}\nnext line`],
      [azure, `AccountKey=${azure.slice(0, 50)}\n   ${azure.slice(50)}==;EndpointSuffix=core`],
      [RANDOM40, `here: ${RANDOM40.slice(0, 9)}\n${RANDOM40.slice(9)}\n`],
    ] as const) {
      expect(survivor(await redactSecrets(text), secret)).toBeNull();
    }
  });

  it("a PEM key cut before its END line", async () => {
    const cut = PEM.split("\n").slice(0, 3).join("\n");
    const out = await redactSecrets(`$ cat id_rsa\n${cut}\n(truncated)`);
    expect(survivor(out, "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u")).toBeNull();
    expect(out).toContain("-----BEGIN RSA PRIVATE KEY-----");
  });

  it("leaves what transcripts are full of and is not secret", async () => {
    const text = [
      "index 3f2a9c1e4b5d6f708192a3b4c5d6e7f8091a2b3c..9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807 100644",
      "commit 3f2a9c1e4b5d6f708192a3b4c5d6e7f8091a2b3c",
      "session 7f3c2a10-4b1d-4e2a-9c3b-5d6e7f8091a2 snapshot s_20260228_153012_ab12cd issue i_20260228_153012_x9y8z7",
      '"integrity": "sha512-Q1lYbXkQXRmIkr3eKfGv8pQ2n0y7vR4s9TzW1aB3cD5eF7gH9iJ0kL2mN4oP6qR8sT0uV2wX4yZ6==",',
      "node_modules/@secretlint/secretlint-rule-preset-recommend/lib/index.js",
      "src/timemachine/redact-entropy.ts: walkTSTypeParameterInstantiation, AsymmetricMatchersContaining",
      "The password field must be validated; the key is to retry; token count: 4096",
      "this.tokens = tokens;",
      "const token = await getToken(options.scope);",
      "  key: IdentifierReference;",
      "TWFueSBoYW5kcyBtYWtlIGxpZ2h0IHdvcms= is base64 for a proverb",
      "Authorization: Bearer $TOKEN",
    ].join("\n");
    expect(await redactSecrets(text)).toBe(text);
  });
});
