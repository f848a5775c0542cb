import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, runCli } from "./helpers/cli.ts";

// Issue 16, class 8: nothing secret leaves the machine in an issue. Key shapes are assembled at
// run time so this file never looks like it holds a credential.
const b62 = "Qx7Lm2Rt9Vb4Nc8Zp1Kd6Hs3Wf5Jg0Ty";
const rep = (s: string, n: number) => s.repeat(Math.ceil(n / s.length)).slice(0, n);
const SECRETS = {
  mysql: "S3cretPassw0rd",
  next: "Hunter2Secret",
  telegram: `81234567${"70"}:AA${rep("Hfq9Kz_x-4WmR2zSjiQ7v", 33)}`,
  prose: "Xk9vQ2mLp7RtZ4wB",
  hex: "9dcc4f0b1e2a7c3d5e6f8091a2b3c4d5",
  aws: rep("Zq3+Yt8/Lm0xRw5vKb2NjH7cPd4sGf1ue9aTy6WE", 40),
  github: `ghp_${rep(b62, 36)}`,
  pg: "pa55-Word!x",
};

/** Any 8 characters of `secret` left in `text`, read as written and decoded. */
function survivor(text: string, secret: string): string | null {
  const decoded = text.replace(/\\n/g, "\n").replace(/\\"/g, '"');
  const views = [text, decoded, decoded.replace(/\r?\n[ \t]*/g, "")];
  for (let i = 0; i + 8 <= secret.length; i++) {
    const piece = secret.slice(i, i + 8);
    if (views.some((v) => v.includes(piece))) return piece;
  }
  return null;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

describe("issue report: every field that leaves the machine is redacted", () => {
  it("issue.json's free-text fields, chat.md and experiment.md keep no secret, in any wrapping", () => {
    const t = makeTempDir("tw-cli-redact-");
    cleanups.push(t.cleanup);
    const ws = t.dir;
    writeFileSync(join(ws, "a.txt"), "x\n");
    const tw = (...args: string[]) => runCli(["--json", ...args], { cwd: ws });
    expect(tw("session", "start", "--session-id", "redact-1").status).toBe(0);

    const transcript = join(ws, "t.jsonl");
    const line = (role: "user" | "assistant", content: unknown) =>
      JSON.stringify({ type: role, message: { role, content } });
    writeFileSync(
      transcript,
      [
        line("user", `deploy; the secret is ${SECRETS.prose} and the bot is ${SECRETS.telegram}`),
        line("assistant", [
          {
            type: "tool_use",
            id: "t1",
            name: "Bash",
            input: { command: `mysql -u root -p${SECRETS.mysql} shop < dump.sql` },
          },
        ]),
        line("user", [
          {
            type: "tool_result",
            tool_use_id: "t1",
            content: `GET /login?next=%2Fcb%3Fpassword%3D${SECRETS.next}%26x%3D1\nAWS_SECRET_ACCESS_KEY=${SECRETS.aws.slice(0, 20)}\n${SECRETS.aws.slice(20)}\n`,
          },
        ]),
        line("assistant", `I used auth token ${SECRETS.hex} and ${SECRETS.github}`),
      ].join("\n"),
    );
    const r = tw(
      "issue",
      "report",
      "--task-context",
      `deploy with PGPASSWORD=${SECRETS.pg} psql`,
      "--symptom",
      `retries; the token is ${SECRETS.github}`,
      "--success-criteria",
      `deploy works without ${SECRETS.hex} in the logs`,
      "--suspected-cause",
      `the secret is ${SECRETS.prose}, hard-coded`,
      "--chat-summary",
      `we ran mysql -u root -p${SECRETS.mysql} and curl https://api.telegram.org/bot${SECRETS.telegram}/getMe`,
      "--transcript",
      transcript,
    );
    expect(r.status).toBe(0);
    const { path } = r.json() as { path: string };
    const issueText = readFileSync(join(path, "issue.json"), "utf8");
    const issue = JSON.parse(issueText) as Record<string, string>;
    for (const field of [
      "task_context",
      "symptom",
      "success_criteria",
      "suspected_cause",
      "chat_summary",
    ]) {
      expect(issue[field], field).toContain("***REDACTED***");
    }
    const files = {
      "issue.json": issueText,
      "chat.md": readFileSync(join(path, "chat.md"), "utf8"),
      "experiment.md": readFileSync(join(path, "experiment.md"), "utf8"),
      "issue get": tw("issue", "get", (r.json() as { issue_id: string }).issue_id).stdout,
    };
    for (const [file, text] of Object.entries(files)) {
      for (const [name, secret] of Object.entries(SECRETS)) {
        expect({ file, name, leaked: survivor(text, secret) }).toEqual({
          file,
          name,
          leaked: null,
        });
      }
    }
    // what is not secret stays readable
    expect(issue.task_context).toBe("deploy with PGPASSWORD=***REDACTED*** psql");
    expect(files["chat.md"]).toContain("mysql -u root -p***REDACTED*** shop < dump.sql");
  }, 120_000);
});
