import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, fromSystemError } from "../core/index.ts";
import { getIssue, type IssueDetail } from "./issues.ts";
import { type ParsedChat, parseChatMarkdown } from "./transcript.ts";

/** A patch kept in an issue's folder (`return --save-patch`): its file name and text. */
export interface IssuePatch {
  name: string;
  bytes: number;
  text: string;
}

/** An issue with what its folder holds, as a reader shows it. */
export interface IssueFiles {
  issue: IssueDetail;
  /** issue.json's text as it is on disk. */
  raw: string;
  /** chat.md as stored (redacted when it was written), and read back into entries. */
  chat: { text: string; parsed: ParsedChat } | null;
  experiment: string | null;
  /** `experiment-*.patch`, oldest first. */
  patches: IssuePatch[];
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return null;
    throw fromSystemError(error, `reading ${path}`);
  }
}

/**
 * `getIssue` and the files of its folder: chat.md (as stored: `reportIssue` redacted it), the
 * experiment log, and the patches `return --save-patch` saved there. Reads only. Errors: those of
 * `getIssue` (INVALID_ISSUE_ID, ISSUE_NOT_FOUND, CORRUPT_FILE, TRANSITION_INTERRUPTED).
 */
export function readIssueFiles(options: { root: string; issueId: string }): IssueFiles {
  const issue = getIssue(options);
  const chatText = readText(issue.chat_path);
  const names = readdirSync(issue.path)
    .filter((n) => /^experiment-.*\.patch$/.test(n))
    .sort();
  const patches = names.flatMap((name) => {
    const text = readText(join(issue.path, name));
    return text === null ? [] : [{ name, bytes: Buffer.byteLength(text), text }];
  });
  return {
    issue,
    raw: readText(issue.issue_path) ?? "",
    chat: chatText === null ? null : { text: chatText, parsed: parseChatMarkdown(chatText) },
    experiment: readText(issue.experiment_path),
    patches,
  };
}
