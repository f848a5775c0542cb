import { readFileSync } from "node:fs";
import type { z } from "zod";
import { ErrorCode, errnoCode, fromSystemError, TimewarpError } from "./errors.ts";

/** Expected failures are values: the result of validating untrusted input. */
export type Result<T> = { ok: true; value: T } | { ok: false; issues: string[] };

/** `field.path: message; other.field: message` — the form every schema error uses. */
export function formatZodIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues.map(issueText).join("; ");
}

function issueText(issue: z.core.$ZodIssue): string {
  return `${issue.path.length > 0 ? issue.path.join(".") : "(root)"}: ${issue.message}`;
}

/** Validate `value` against `schema`, returning a Result rather than throwing. */
export function validate<T>(schema: z.ZodType<T>, value: unknown): Result<T> {
  const result = schema.safeParse(value);
  return result.success
    ? { ok: true, value: result.data }
    : {
        ok: false,
        issues: result.error.issues.map(issueText),
      };
}

/**
 * `JSON.parse`, with the caller's coded error in place of a SyntaxError: `fail` gets the
 * parser's reason and says what the text was and what to do.
 */
export function parseJsonText(text: string, fail: (reason: string) => TimewarpError): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw fail(error instanceof Error ? error.message : String(error));
  }
}

/**
 * Read a JSON file as an unchecked value. A missing file is NOT_FOUND and unreadable JSON is
 * CORRUPT_FILE, both naming the file, unless `code` names the one error of a kind of file (a
 * goal's GOAL_INVALID); `missing` says why the file is needed.
 */
export function readJsonValue(
  path: string,
  options: { code?: ErrorCode; missing?: string } = {},
): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") {
      throw new TimewarpError(
        options.code ?? ErrorCode.NOT_FOUND,
        `${path} does not exist${options.missing ? ` (${options.missing})` : ""}`,
        { data: { file: path } },
      );
    }
    throw fromSystemError(error, `reading ${path}`);
  }
  return parseJsonText(
    text,
    (reason) =>
      new TimewarpError(
        options.code ?? ErrorCode.CORRUPT_FILE,
        `${path}: not valid JSON (${reason})`,
        { data: { file: path } },
      ),
  );
}

/**
 * Read a JSON protocol file and validate it. A missing file is NOT_FOUND; unreadable JSON or a
 * schema mismatch is CORRUPT_FILE naming the file and the field — never a crash or a silent reset.
 */
export function readJsonFile<T>(path: string, schema: z.ZodType<T>): T {
  const result = schema.safeParse(readJsonValue(path));
  if (!result.success) {
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${path}: ${formatZodIssues(result.error.issues)}`,
      {
        data: { file: path, fields: result.error.issues.map((i) => i.path.join(".")) },
      },
    );
  }
  return result.data;
}

/**
 * Read every record of a listing, and flag the ones that do not read (any TimewarpError:
 * CORRUPT_FILE, NOT_FOUND, a file system code) with their error instead of failing the whole
 * listing: one damaged record must not hide the others (issue 16). Anything else throws.
 */
export function readEachFlagged<K, T>(
  keys: readonly K[],
  read: (key: K) => T,
): { read: T[]; failed: { key: K; error: TimewarpError }[] } {
  const out: T[] = [];
  const failed: { key: K; error: TimewarpError }[] = [];
  for (const key of keys) {
    try {
      out.push(read(key));
    } catch (error) {
      if (!(error instanceof TimewarpError)) throw error;
      failed.push({ key, error });
    }
  }
  return { read: out, failed };
}
