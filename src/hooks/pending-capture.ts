import { lstatSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import {
  type Clock,
  ErrorCode,
  errnoCode,
  fromSystemError,
  isTimewarpError,
  readJsonFile,
  writeJsonAtomic,
} from "../core/index.ts";

/** Whole pre-images above this size are not kept (reported as skipped, never silent). */
export const MAX_CAPTURE_BYTES = 8 * 1024 * 1024;

export const CapturedFileSchema = z.object({
  path: z.string(),
  /** False: the file did not exist before the tool ran (a creation). */
  exists: z.boolean(),
  mode: z.number().int().nullable(),
  content_b64: z.string().nullable(),
  /** Why the content was not kept (not a regular file, too large), or null. */
  skipped: z.string().nullable(),
});
export type CapturedFile = z.infer<typeof CapturedFileSchema>;

/** `.timewarp/hooks/pending/<session>/<key>.json`: what PreToolUse saw, for PostToolUse. */
export const PendingCaptureSchema = z
  .object({
    schema_version: z.literal(1),
    session_id: z.string(),
    tool_name: z.string(),
    tool_use_id: z.string().nullable(),
    captured_at: z.string(),
    files: z.array(CapturedFileSchema),
    /** Shell tools: the id of the manifest scanned before the command ran (store's hash). */
    baseline_manifest: z.string().nullable(),
    /**
     * A drift warning PreToolUse could not put before the model (Gemini CLI's BeforeTool has no
     * context field): PostToolUse of the same call delivers it, once, since it consumes the file.
     */
    warning: z.string().optional(),
  })
  .passthrough();
export type PendingCapture = z.infer<typeof PendingCaptureSchema>;

/** Read one workspace file as a pre-image (never follows a symlink out of the workspace). */
export function captureFile(root: string, path: string): CapturedFile {
  const abs = join(root, path);
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(abs);
  } catch (error) {
    if (errnoCode(error) === "ENOENT" || errnoCode(error) === "ENOTDIR")
      return { path, exists: false, mode: null, content_b64: null, skipped: null };
    throw fromSystemError(error, `capturing the pre-image of ${abs}`);
  }
  if (!st.isFile())
    return { path, exists: true, mode: st.mode, content_b64: null, skipped: "not a regular file" };
  if (st.size > MAX_CAPTURE_BYTES)
    return {
      path,
      exists: true,
      mode: st.mode,
      content_b64: null,
      skipped: `larger than ${MAX_CAPTURE_BYTES} bytes`,
    };
  const bytes = readFileSync(abs);
  return {
    path,
    exists: true,
    mode: st.mode,
    content_b64: bytes.toString("base64"),
    skipped: null,
  };
}

export interface WritePendingOptions {
  file: string;
  capture: {
    session_id: string;
    tool_name: string;
    tool_use_id: string | null;
    files: CapturedFile[];
    baseline_manifest: string | null;
    warning?: string;
  };
  clock: Clock;
}

/** Store a capture atomically (a reader sees the old file or the whole new one). */
export function writePendingCapture(options: WritePendingOptions): PendingCapture {
  const record: PendingCapture = {
    schema_version: 1,
    captured_at: options.clock.now().toISOString(),
    ...options.capture,
  };
  mkdirSync(dirname(options.file), { recursive: true });
  // Pre-images are scratch that PostToolUse consumes a moment later; the fsync is not worth its
  // cost on every edit (a crash loses at most a capture, and PostToolUse then says so).
  writeJsonAtomic(options.file, record, { durable: false });
  return record;
}

/** The capture for a tool call, or null when PreToolUse did not run (or ran for another call). */
export function readPendingCapture(file: string): PendingCapture | null {
  try {
    return readJsonFile(file, PendingCaptureSchema);
  } catch (error) {
    if (isTimewarpError(error, ErrorCode.NOT_FOUND)) return null;
    throw error;
  }
}

export function removePendingCapture(file: string): void {
  rmSync(file, { force: true });
}

/** The bytes of a captured pre-image (null for a creation or a skipped file). */
export function capturedBytes(file: CapturedFile): Buffer | null {
  return file.content_b64 === null ? null : Buffer.from(file.content_b64, "base64");
}
