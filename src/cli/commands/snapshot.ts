import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { acquireLock, workspacePaths } from "../../core/index.ts";
import type { CommandContext } from "../context.ts";
import { helpExamples } from "../help-examples.ts";
import { style } from "../output.ts";
import { scanProgress } from "../progress.ts";
import { action } from "../run.ts";

/** `timewarp snapshot create | list | show ID | diff A [B] | export ID DIR` and `timewarp gc`. */
export function registerSnapshotCommands(program: Command): void {
  const snapshot = program
    .command("snapshot")
    .description("content-addressed workspace snapshots")
    .addHelpText(
      "after",
      helpExamples([
        "take a snapshot by hand, then list them all",
        "timewarp snapshot create && timewarp snapshot list",
      ]),
    );

  snapshot
    .command("create")
    .addHelpText(
      "after",
      helpExamples(
        ["snapshot the workspace before a risky change", "timewarp snapshot create"],
        ["attach it to an agent session", "timewarp snapshot create --session-id s1"],
      ),
    )
    .description(
      "snapshot the workspace by hand (kept until you delete it; re-reads only files whose stat data changed)",
    )
    .option("--session-id <id>", "the session this snapshot belongs to")
    .action(
      action(async (ctx, opts: { sessionId?: string }) => {
        const { createManualSnapshot } = await import("../../timemachine/index.ts");
        let made: ReturnType<typeof createManualSnapshot>;
        try {
          made = createManualSnapshot({
            root: ctx.root,
            sessionId: opts.sessionId ?? null,
            clock: ctx.clock,
            random: ctx.random,
            onProgress: (p) => ctx.progress(scanProgress(p)),
          });
        } finally {
          ctx.progress("");
        }
        // Keep the watch daemon up (as the hooks do), so the next snapshot visits only what
        // changed instead of walking the tree.
        const { watchRunCommand } = await import("../../hooks/index.ts");
        const { ensureWatchDaemon } = await import("../../store/index.ts");
        ensureWatchDaemon(ctx.root, () => watchRunCommand(ctx.root));
        const r = made.record;
        const json = {
          snapshot_id: made.id,
          created_at: r.created_at,
          session_id: r.session_id,
          files: r.files,
          dirs: r.dirs,
          symlinks: r.symlinks,
          bytes: r.bytes,
          partial: r.partial,
          skipped: r.skipped,
          duration_ms: made.duration_ms,
          rehashed: made.rehashed,
          objects_written: made.objects_written,
          scan: made.scan,
          manifest_hash: r.manifest.hash,
        };
        const lines = [
          `${style.bold("snapshot")} ${made.id}  ${r.files} files, ${formatBytes(r.bytes)}  ` +
            style.dim(
              `(${made.duration_ms} ms by ${made.scan}, read ${made.rehashed}, new objects ${made.objects_written})`,
            ),
        ];
        if (r.partial) {
          lines.push(style.yellow(`partial: ${r.skipped.length} path(s) skipped`));
          for (const s of r.skipped.slice(0, 20))
            lines.push(`  ${s.path}  ${s.reason} (${s.detail})`);
          if (r.skipped.length > 20) lines.push(`  … and ${r.skipped.length - 20} more`);
        }
        return { json, human: lines.join("\n") };
      }),
    );

  snapshot
    .command("list")
    .addHelpText(
      "after",
      helpExamples(
        ["every snapshot, oldest first", "timewarp snapshot list"],
        ["the same as JSON", "timewarp snapshot list --json"],
      ),
    )
    .description("list snapshots, oldest first (and any whose record does not read)")
    .action(
      action(async (ctx) => {
        const { listSnapshotSummaries } = await import("../../timemachine/index.ts");
        const listing = listSnapshotSummaries(ctx.root);
        const { snapshots, corrupt } = listing;
        const lines = snapshots.map(
          (s) =>
            `${s.snapshot_id}  ${s.created_at}  ${String(s.files).padStart(7)} files  ${formatBytes(s.bytes).padStart(9)}` +
            `${s.partial ? style.yellow("  partial") : ""}${s.pinned ? style.green("  pinned") : ""}` +
            `${s.origin === "manual" ? "  by hand" : s.origin === "turn" ? "  turn" : ""}${s.session_id ? style.dim(`  ${s.session_id}`) : ""}`,
        );
        for (const c of corrupt) lines.push(style.red(`${c.id}  ${c.code}: ${c.message}`));
        return {
          json: listing,
          human: lines.length === 0 ? "no snapshots" : lines.join("\n"),
        };
      }),
    );

  for (const pinned of [true, false]) {
    snapshot
      .command(pinned ? "pin" : "unpin")
      .addHelpText(
        "after",
        pinned
          ? helpExamples([
              "keep a snapshot through every cleanup",
              "timewarp snapshot pin s_1a2b3c4d",
            ])
          : helpExamples([
              "let cleanup treat it as usual again",
              "timewarp snapshot unpin s_1a2b3c4d",
            ]),
      )
      .description(
        pinned
          ? "keep a snapshot: a session start's cleanup never deletes a pinned one"
          : "let cleanup treat a snapshot as usual again",
      )
      .argument("<id>", "snapshot id")
      .action(
        action(async (ctx, id: string) => {
          const { setSnapshotPinned } = await import("../../timemachine/index.ts");
          const r = setSnapshotPinned({ root: ctx.root, snapshotId: id, pinned, clock: ctx.clock });
          return {
            json: r,
            human: `${id} ${r.changed ? "" : "was already "}${pinned ? "pinned" : "unpinned"}`,
          };
        }),
      );
  }

  snapshot
    .command("delete")
    .addHelpText(
      "after",
      helpExamples(
        ["delete a snapshot you took by hand", "timewarp snapshot delete s_1a2b3c4d"],
        ["delete it even though it is pinned", "timewarp snapshot delete s_1a2b3c4d --force"],
      ),
    )
    .description(
      "delete a snapshot (its objects go at the next gc); refuses a pinned one, an issue's or the session's unless --force, and the one a travel is at",
    )
    .argument("<id>", "snapshot id")
    .option("--force", "delete it even when pinned or referenced")
    .action(
      action(async (ctx, id: string, opts: { force?: boolean }) => {
        const { deleteUserSnapshot } = await import("../../timemachine/index.ts");
        const r = deleteUserSnapshot({
          root: ctx.root,
          snapshotId: id,
          force: opts.force === true,
          clock: ctx.clock,
        });
        return {
          json: r,
          human: `deleted ${id}${r.forced.length > 0 ? ` (forced: ${r.forced.join(", ")})` : ""}; \`timewarp gc\` frees its objects`,
        };
      }),
    );

  snapshot
    .command("show")
    .addHelpText(
      "after",
      helpExamples([
        "a snapshot's record with its files",
        "timewarp snapshot show s_1a2b3c4d --files",
      ]),
    )
    .description("show a snapshot record")
    .argument("<id>", "snapshot id")
    .option("--files", "include the manifest entries")
    .action(
      action(async (ctx, id: string, opts: { files?: boolean }) => {
        const { readManifest, readSnapshot } = await import("../../store/index.ts");
        const record = readSnapshot(ctx.root, id);
        const entries = opts.files === true ? readManifest(ctx.root, record).entries : undefined;
        const lines = [
          `${style.bold("snapshot")}  ${record.snapshot_id}`,
          `created   ${record.created_at}`,
          `session   ${record.session_id ?? "-"}`,
          `contents  ${record.files} files, ${record.dirs} dirs, ${record.symlinks} symlinks, ${formatBytes(record.bytes)}`,
          `manifest  ${record.manifest.hash}`,
          `partial   ${record.partial ? style.yellow(`yes (${record.skipped.length} skipped)`) : "no"}`,
          ...record.skipped.map((s) => `  ${s.path}  ${s.reason} (${s.detail})`),
          ...(entries ?? []).map(
            (e) =>
              `${e.type === "dir" ? "d" : e.type === "symlink" ? "l" : "-"} ${e.mode.toString(8).padStart(4, "0")} ${String(e.size).padStart(9)} ${e.path}${e.type === "symlink" ? ` -> ${e.target ?? "(bytes)"}` : ""}`,
          ),
        ];
        return {
          json: entries === undefined ? record : { ...record, entries },
          human: lines.join("\n"),
        };
      }),
    );

  snapshot
    .command("diff")
    .addHelpText(
      "after",
      helpExamples(
        ["what changed since a snapshot", "timewarp snapshot diff s_1a2b3c4d"],
        ["what changed between two snapshots", "timewarp snapshot diff s_1a2b3c4d s_5e6f7a8b"],
      ),
    )
    .description("what changed from snapshot A to snapshot B (default: the current workspace)")
    .argument("<a>", "snapshot id")
    .argument("[b]", "snapshot id (default: the workspace now)")
    .action(action(async (ctx, a: string, b: string | undefined) => diffCommand(ctx, a, b)));

  snapshot
    .command("export")
    .addHelpText(
      "after",
      helpExamples([
        "write a snapshot out to a new directory",
        "timewarp snapshot export s_1a2b3c4d /tmp/then",
      ]),
    )
    .description("write a snapshot out as snapshot.json + workspace/ in a new directory")
    .argument("<id>", "snapshot id")
    .argument("<dir>", "target directory (must not exist or be empty)")
    .action(
      action(async (ctx, id: string, dir: string) => {
        const { exportSnapshot } = await import("../../store/index.ts");
        const out = exportSnapshot(ctx.root, id, resolve(ctx.cwd, dir), {
          onProgress: ctx.progress,
        });
        return {
          json: {
            snapshot_id: id,
            dir: out.dir,
            files: out.files,
            bytes: out.bytes,
            written: out.restore.written,
            skipped: out.skipped,
          },
          human:
            `exported ${id} to ${out.dir} (${out.files} files, ${formatBytes(out.bytes)})` +
            (out.skipped.length > 0
              ? `; not in it (the snapshot skipped them): ${out.skipped.map((s) => s.path).join(", ")}`
              : ""),
        };
      }),
    );

  program
    .command("fsck")
    .addHelpText(
      "after",
      helpExamples(
        ["check every object and record", "timewarp fsck"],
        ["as JSON, for a script", "timewarp fsck --json"],
      ),
    )
    .description(
      "check the store and the ledger: re-hash every object, read every record and manifest, check every cache and index",
    )
    .action(
      action(async (ctx) => {
        const { fsck } = await import("../../store/index.ts");
        const { fsckLedger } = await import("../../ledger/index.ts");
        const result = fsckLedger(ctx.root, fsck(ctx.root, { onProgress: ctx.progress }), {
          onProgress: ctx.progress,
        });
        const lines = result.problems.map(
          (p) =>
            `  ${p.code} ${p.kind} ${p.path}${p.subject === p.path ? "" : ` (${p.subject})`}: ${p.detail}`,
        );
        return {
          json: result,
          human: result.ok
            ? `ok: ${result.objects} objects, ${result.records} records, ${result.operations} operations, ${result.caches} caches${lines.length > 0 ? `\n${lines.join("\n")}` : ""}`
            : `${style.red("damaged")}: ${result.problems.length} problem(s) in ${result.objects} objects, ${result.records} records, ${result.operations} operations, ${result.caches} caches\n${lines.join("\n")}`,
          exitCode: result.ok ? 0 : 1,
        };
      }),
    );

  program
    .command("gc")
    .addHelpText("after", helpExamples(["drop objects nothing references any more", "timewarp gc"]))
    .description("drop objects no snapshot or backup references")
    .action(
      action(async (ctx) => {
        const { collectGarbage, collectReferencedOids } = await import("../../store/index.ts");
        const paths = workspacePaths(ctx.root);
        if (!existsSync(paths.data)) {
          const json = {
            removed_objects: 0,
            freed_bytes: 0,
            kept_objects: 0,
            removed_temp: 0,
            packed_objects: 0,
            delta_objects: 0,
          };
          return { json, human: "nothing to collect (no .timewarp/)" };
        }
        const { collectLedgerOids } = await import("../../ledger/index.ts");
        const lock = acquireLock(paths.lock, { command: "gc" });
        try {
          const names = new Map<string, string>();
          const roots = collectReferencedOids(ctx.root, { names, onProgress: ctx.progress });
          ctx.progress({ phase: "mark ledger" });
          for (const oid of collectLedgerOids(ctx.root)) roots.add(oid);
          const result = collectGarbage(ctx.root, {
            roots,
            names,
            clock: ctx.clock,
            onProgress: ctx.progress,
          });
          return {
            json: result,
            human: `removed ${result.removed_objects} objects (${formatBytes(result.freed_bytes)}), kept ${result.kept_objects}`,
          };
        } finally {
          lock.release();
        }
      }),
    );
}

async function diffCommand(ctx: CommandContext, a: string, b: string | undefined) {
  const { diffSnapshots } = await import("../../timemachine/index.ts");
  const json = diffSnapshots({ root: ctx.root, from: a, to: b });
  const lines = [
    ...json.added.map((p) => style.green(`A ${p}`)),
    ...json.removed.map((p) => style.red(`D ${p}`)),
    ...json.modified.map((p) => `M ${p}`),
    ...json.mode_changed.map((m) => `M ${m.path} (mode ${m.before} → ${m.after})`),
    ...json.type_changed.map((t) => `T ${t.path} (${t.before} → ${t.after})`),
    ...json.skipped.map((p) => `? ${p} (not captured: not compared)`),
  ];
  return { json, human: lines.length === 0 ? "no differences" : lines.join("\n") };
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}
