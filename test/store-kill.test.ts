import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_EXCLUDES, workspacePaths } from "../src/core/index.ts";
import {
  createSnapshot,
  fsck,
  listSnapshots,
  readManifest,
  verifyWorkspace,
} from "../src/store/index.ts";
import { bundledSource } from "./helpers/bundle.ts";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";

/**
 * A child that snapshots `root` (once, or forever while editing a file), printing as it goes;
 * bundled once (a start through tsx's loader took seconds on a loaded machine).
 */
function childScript(): string {
  return bundledSource(
    `import { writeFileSync } from "node:fs";
import { createSnapshot } from ${JSON.stringify(join(REPO_ROOT, "src/store/index.ts"))};
const [root, mode] = process.argv.slice(2);
// "once": stop for good at the first progress report, in the middle of writing objects, so the
// kill lands there however slow the machine is (a kill after a delay might come too late).
const progress = (p: { entries: number }) => {
  process.stdout.write(\`progress \${p.entries}\\n\`);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
};
if (mode === "once") createSnapshot(root, { onProgress: progress });
else for (let i = 0; ; i++) {
  writeFileSync(\`\${root}/d0/f0.txt\`, \`edit \${i}\`);
  createSnapshot(root, {});
  process.stdout.write(\`snap \${i}\\n\`);
}
`,
  );
}

/** Run the child and SIGKILL it when `when(line)` first says so; resolves with the lines seen. */
function runAndKill(
  script: string,
  args: string[],
  when: (line: string, count: number) => boolean,
  afterMs = 0,
): Promise<string[]> {
  return new Promise((resolve, reject) => {
    // One process (node itself), not a wrapper: SIGKILL must hit the writer itself.
    const child: ChildProcess = spawn(process.execPath, [script, ...args], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines: string[] = [];
    let killed = false;
    let buffer = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const parts = buffer.split("\n");
      buffer = parts.pop() ?? "";
      for (const line of parts) {
        lines.push(line);
        if (!killed && when(line, lines.length)) {
          killed = true;
          setTimeout(() => child.kill("SIGKILL"), afterMs);
        }
      }
    });
    let stderr = "";
    child.stderr?.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    child.on("close", (_code, signal) => {
      if (signal === "SIGKILL") resolve(lines);
      else reject(new Error(`child ended without being killed (${String(signal)}): ${stderr}`));
    });
  });
}

function assertConsistent(root: string): void {
  const report = fsck(root);
  // Temp files of the killed writer may remain (gc removes them); nothing may be corrupt or missing.
  expect(report.problems.filter((p) => p.kind !== "temp_file")).toEqual([]);
  for (const record of listSnapshots(root)) {
    const manifest = readManifest(root, record);
    expect(manifest.entries.length).toBe(record.manifest.entries);
  }
}

describe("kill -9 during a snapshot", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("leaves the store consistent, and the next snapshot succeeds and matches the workspace", async () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    const root = join(t.dir, "w");
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(root, `d${d}`), { recursive: true });
      for (let f = 0; f < 75; f++)
        writeFileSync(join(root, `d${d}`, `f${f}.txt`), randomBytes(1024));
    }
    const script = childScript();

    // 1. killed while writing objects (the first progress report comes after 500 entries)
    const seen = await runAndKill(script, [root, "once"], (l) => l.startsWith("progress"));
    expect(seen.some((l) => l.startsWith("progress"))).toBe(true);
    expect(listSnapshots(root)).toEqual([]);
    assertConsistent(root);

    // 2. killed at an arbitrary point of back-to-back incremental snapshots (record writing,
    //    stat cache writing), a few times at different moments; wherever each kill lands (the
    //    child loops until killed, so it always does), the store is consistent
    for (const delay of [0, 15]) {
      await runAndKill(script, [root, "loop"], (l, n) => l.startsWith("snap") && n >= 2, delay);
      assertConsistent(root);
    }
    const before = listSnapshots(root).length;
    expect(before).toBeGreaterThanOrEqual(2);

    // 3. the next snapshot succeeds, cleans the dead writers' temp folders, and is exact
    const next = createSnapshot(root, {});
    expect(listSnapshots(root).length).toBe(before + 1);
    expect(verifyWorkspace(root, next.manifest, { excludes: [...DEFAULT_EXCLUDES] })).toMatchObject(
      {
        ok: true,
      },
    );
    expect(readdirSync(workspacePaths(root).tmp).filter((n) => n.startsWith("rec-"))).toEqual([]);
    assertConsistent(root);
  }, 120_000);
});
