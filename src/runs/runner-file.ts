import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { Clock } from "../core/index.ts";
import {
  type OrphanFile,
  OrphanFileSchema,
  type RunnerFile,
  RunnerFileSchema,
  SCHEMA_VERSION,
} from "./protocol.ts";
import type { ProtocolIo, RunPaths } from "./run-dir.ts";

/**
 * Make this process the job's runner in session/runner.json (temp + rename: the tool never reads
 * half of it). The tool compares the pid there with the living processes of its host.
 */
export function writeRunnerFile(
  paths: RunPaths,
  io: ProtocolIo,
  o: { clock: Clock; orphanGraceMs: number },
): RunnerFile {
  const runner: RunnerFile = {
    schema_version: SCHEMA_VERSION,
    pid: process.pid,
    host: hostname(),
    since: o.clock.now().toISOString(),
    orphan_grace_ms: o.orphanGraceMs,
  };
  io.writeFile(paths.runner, `${JSON.stringify(runner, null, 2)}\n`);
  return runner;
}

function readJson<T>(path: string, parse: (v: unknown) => T): T | undefined {
  try {
    return parse(JSON.parse(readFileSync(path, "utf8")));
  } catch {
    return undefined;
  }
}

/** session/runner.json when present and valid. */
export function readRunnerFile(paths: RunPaths): RunnerFile | undefined {
  return readJson(paths.runner, (v) => RunnerFileSchema.parse(v));
}

/** session/orphan.json when present and valid (the tool writes it atomically). */
export function readOrphanFile(paths: RunPaths): OrphanFile | undefined {
  return readJson(paths.orphan, (v) => OrphanFileSchema.parse(v));
}
