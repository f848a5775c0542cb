import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers/cli.ts";

/**
 * Issue 16 §2: the modules that write or delete workspace files (restore, the ledger's file
 * writer) do it only through core's safe path, never with `node:fs` write calls of their own.
 * (Writes into `.timewarp/` — records, objects, journals — are not workspace writes.)
 */
const WRITERS: Record<string, string[]> = {
  // The restore target's root itself may be created (an export's fresh folder).
  "src/store/restore-manifest.ts": ["mkdirSync"],
  "src/ledger/workspace-files.ts": [],
};

const WRITE_CALLS =
  /\b(writeFileSync|writeSync|appendFileSync|unlinkSync|rmSync|rmdirSync|mkdirSync|renameSync|chmodSync|fchmodSync|lchmodSync|symlinkSync|linkSync|copyFileSync|cpSync|truncateSync|utimesSync|writeFile|unlink|rm|rmdir|mkdir|rename|chmod|symlink|copyFile|writeFileAtomic|writeJsonAtomic)\b/g;

function fsImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*["']node:fs(?:\/promises)?["']/g))
    for (const name of (m[1] ?? "").split(",")) out.push(name.trim().split(/\s+as\s+/)[0] ?? "");
  for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*["'][./]*core\/index\.ts["']/g))
    for (const name of (m[1] ?? "").split(",")) out.push(name.trim().replace(/^type\s+/, ""));
  return out.filter((n) => n !== "");
}

describe("workspace writes go through core's safe path", () => {
  for (const [file, allowed] of Object.entries(WRITERS)) {
    it(`${file} imports no write call but the safe ones`, () => {
      const names = fsImports(readFileSync(join(REPO_ROOT, file), "utf8"));
      const writes = names.filter((n) => n.match(WRITE_CALLS) !== null && !allowed.includes(n));
      expect(writes).toEqual([]);
      expect(names.some((n) => n.startsWith("safe"))).toBe(true);
    });
  }
});
