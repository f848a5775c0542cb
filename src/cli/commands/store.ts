import type { Command } from "commander";
import { style } from "../output.ts";
import { action } from "../run.ts";

/** `timewarp init | status` (and, from the store work, `snapshot …` and `gc`). */
export function registerStoreCommands(program: Command): void {
  program
    .command("init")
    .description("create .timewarp/ with a config.json holding the defaults (idempotent)")
    .action(
      action(async (ctx) => {
        const { initWorkspace } = await import("../../store/index.ts");
        const r = initWorkspace(ctx.root, { clock: ctx.clock });
        return {
          json: {
            workspace_root: r.workspace_root,
            created: r.created,
            config_path: r.config_path,
          },
          human: r.created
            ? `initialized ${r.config_path}`
            : `already initialized (${r.config_path})`,
        };
      }),
    );
  program
    .command("status")
    .description("mode, session, current snapshot, lock")
    .action(
      action(async (ctx) => {
        const { readStatus } = await import("../../timemachine/index.ts");
        const status = readStatus(ctx.root);
        const lines = [
          `${style.bold("workspace")} ${status.workspace_root}${status.initialized ? "" : style.dim(" (not initialized)")}`,
          `${style.bold("mode")}      ${status.mode === "past" ? style.yellow("past") : "present"}`,
          `${style.bold("session")}   ${status.session_id ?? "-"} ${status.session_snapshot_id ? `(snapshot ${status.session_snapshot_id})` : ""}`,
        ];
        if (status.mode === "past")
          lines.push(
            `${style.bold("at")}        ${status.current_snapshot_id} since ${status.entered_at}`,
          );
        lines.push(
          `${style.bold("lock")}      ${status.lock ? `held by pid ${status.lock.pid} (${status.lock.command ?? "?"})` : "free"}`,
          `${style.bold("watcher")}   ${status.watcher ? `pid ${status.watcher.pid}, ${status.watcher.directories} directories` : style.dim("none (scans walk the tree)")}`,
        );
        return { json: status, human: lines.join("\n") };
      }),
    );
}
