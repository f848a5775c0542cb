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
