import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BusEvent, readEvents, workspacePaths } from "../src/core/index.ts";
import { type OperationRecord, OperationRecordSchema } from "../src/ledger/index.ts";
import { createObjectStore } from "../src/store/index.ts";
import { type CliRun, runCli } from "./helpers/cli.ts";

/** Pipe a hook payload into the real CLI, as an agent does. */
export function hook(
  event: string,
  payload: unknown,
  cwd: string,
  options: { args?: string[]; env?: NodeJS.ProcessEnv } = {},
): CliRun {
  return runCli(["hook", event, ...(options.args ?? [])], {
    input: JSON.stringify(payload),
    cwd,
    ...(options.env !== undefined ? { env: options.env } : {}),
  });
}

function walk(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((n) => (n.endsWith(".json") ? [join(dir, n)] : walk(join(dir, n))));
}

/** Every ledger operation record on disk, oldest first. */
export function ledgerRecords(root: string): OperationRecord[] {
  return walk(join(workspacePaths(root).history, "snapshots"))
    .map((f) => OperationRecordSchema.parse(JSON.parse(readFileSync(f, "utf8"))))
    .sort((a, b) =>
      a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : a.id < b.id ? -1 : 1,
    );
}

/** The exact bytes behind a record's pre- or post-image (null for a creation or deletion). */
export function imageText(root: string, image: { oid: string } | null): string | null {
  if (image === null) return null;
  return createObjectStore(workspacePaths(root).objects).read(image.oid).toString("utf8");
}

export function events(root: string): BusEvent[] {
  return readEvents(workspacePaths(root).events).events;
}

/**
 * The goal the drift-guard tests score against (`.timewarp/memory/goal.json`): the greeting in
 * `src/`, `package.json` off limits; `extra` adds weights or thresholds.
 */
export function writeGoal(dir: string, extra: Record<string, unknown> = {}): void {
  mkdirSync(join(dir, ".timewarp", "memory"), { recursive: true });
  writeFileSync(
    join(dir, ".timewarp", "memory", "goal.json"),
    JSON.stringify({
      objective: "fix the greeting",
      whitelist: ["src/**"],
      blacklist: ["package.json"],
      checkpoints: [],
      ...extra,
    }),
  );
}
