import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../core/index.ts";
import {
  claimedFile,
  HOOK_PROTOCOL,
  type HookReply,
  type HookRequestHeader,
  replyFile,
  requestFile,
  stderrFile,
  stdoutFile,
} from "./hook-protocol.ts";

/** Where a request's answer goes: its reply file, and with `reply: "files"` its output files. */
export interface ReplyTo {
  reply: string;
  files?: { stdout: string; stderr: string };
}

/** A request the server took: where to answer, and either the hook to run or why it declines. */
export type ClaimedRequest =
  | { to: ReplyTo; header: HookRequestHeader; input: string }
  | { to: ReplyTo; declined: string };

/**
 * Claim the request `id` in the hook directory `dir` by rename (at most once: undefined when its
 * client took it back, or a second event named it), read it and remove it.
 */
export function claimHookRequest(dir: string, id: string): ClaimedRequest | undefined {
  const claimed = join(dir, claimedFile(id));
  try {
    renameSync(join(dir, requestFile(id)), claimed);
  } catch {
    return undefined;
  }
  const to: ReplyTo = { reply: join(dir, replyFile(id)) };
  let bytes: Buffer;
  try {
    bytes = readFileSync(claimed);
  } catch (error) {
    return { to, declined: `cannot read the request: ${String(error)}` };
  } finally {
    rmSync(claimed, { force: true });
  }
  const newline = bytes.indexOf(0x0a);
  let header: HookRequestHeader | undefined;
  try {
    header = JSON.parse(bytes.subarray(0, newline).toString("utf8")) as HookRequestHeader;
  } catch {
    header = undefined;
  }
  if (newline < 0 || header?.protocol !== HOOK_PROTOCOL) {
    return { to, declined: "the request is not of this server's protocol" };
  }
  if (header.reply === "files") {
    to.files = { stdout: join(dir, stdoutFile(id)), stderr: join(dir, stderrFile(id)) };
  }
  return { to, header, input: bytes.subarray(newline + 1).toString("utf8") };
}

/** Answer a request: its output files first (with `reply: "files"`), then the reply that publishes them. */
export function writeHookReply(to: ReplyTo, body: HookReply, log: (line: string) => void): void {
  let json: HookReply | { exitCode: number } = body;
  if (to.files !== undefined && "exitCode" in body) {
    // Each output file only when there is some.
    json = { exitCode: body.exitCode };
    for (const [file, text] of [
      [to.files.stdout, body.stdout],
      [to.files.stderr, body.stderr],
    ] as const) {
      try {
        if (text !== "") writeFileSync(file, text, { mode: 0o600 });
      } catch (error) {
        log(`timewarp hooks: cannot write a hook's output: ${String(error)}`);
      }
    }
  }
  try {
    // whole or not at all (the client polls for the name), private, not fsynced: ephemeral
    writeFileAtomic(to.reply, JSON.stringify(json), { mode: 0o600, durable: false });
  } catch (error) {
    log(`timewarp hooks: cannot write a reply: ${String(error)}`);
  }
}
