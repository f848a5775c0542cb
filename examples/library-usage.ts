/**
 * timewarp as a library: a session snapshot, a recorded edit, its undo, travel and return.
 *
 *   npx tsx examples/library-usage.ts [DIR]     (a fresh temp dir by default)
 *
 * In a project that depends on timewarp, import from "timewarp" (or "timewarp/ledger", …)
 * instead of the relative path.
 */
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ledger, timemachine } from "../src/index.ts";

const root = resolve(process.argv[2] ?? mkdtempSync(join(tmpdir(), "timewarp-lib-")));
cpSync(resolve(import.meta.dirname, "demo-project"), root, { recursive: true });

// 1. A session snapshot, as the SessionStart hook takes it.
const session = await timemachine.startSession({ root, sessionId: "lib-demo" });
console.log(`snapshot ${session.snapshot_id}: ${session.files} files, ${session.bytes} bytes`);

// 2. An edit through the ledger: previewed, applied, recorded with its reverse diff.
const ctx = { root };
const edit = {
  path: "src/slugify.js",
  searchBlock: "    .toLowerCase()",
  replaceBlock: '    .normalize("NFKD")\n    .replace(/[\\u0300-\\u036f]/g, "")\n    .toLowerCase()',
  description: "transliterate accents",
};
const preview = await ledger.applyEditBlock(ctx, { ...edit, dryRun: true });
console.log(preview.previewDiff);
const applied = await ledger.applyEditBlock(ctx, edit);
console.log(`recorded operation ${applied.snapshotId}`);

// 3. Travel to the session snapshot (the present is backed up first) and return, verified.
const trip = await timemachine.travel({ root, snapshotId: session.snapshot_id });
console.log(`in the past (${trip.written} file(s) rewritten); fix present: ${readFileSync(join(root, "src/slugify.js"), "utf8").includes("NFKD")}`);
const back = await timemachine.returnToPresent({ root });
console.log(`back in the present (${back.written} file(s) rewritten); fix present: ${readFileSync(join(root, "src/slugify.js"), "utf8").includes("NFKD")}`);

// 4. Undo the edit by the rollback ladder.
const undo = await ledger.reverseOp(ctx, { snapshotId: String(applied.snapshotId) });
console.log(`reverted: ${undo.success}; fix present: ${readFileSync(join(root, "src/slugify.js"), "utf8").includes("NFKD")}`);
