import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildSync } from "esbuild";
import { REPO_ROOT } from "./cli.ts";

/**
 * A child process that runs one time-machine operation and prints `{"ok":…}` or
 * `{"error":{code}}` as JSON. Bundled once with esbuild so a child starts in ~0.1 s (tests that
 * spawn many processes cannot afford compiling TypeScript in each).
 */
export function buildTimemachineChild(dir: string): string {
  const src = join(dir, "tm-child.ts");
  writeFileSync(
    src,
    `import { travel, returnToPresent, recover } from ${JSON.stringify(join(REPO_ROOT, "src/timemachine/index.ts"))};
const [op, root, id] = process.argv.slice(2);
try {
  const r = op === "travel" ? travel({ root, snapshotId: id }) : op === "return" ? returnToPresent({ root }) : recover({ root });
  process.stdout.write(JSON.stringify({ ok: r }) + "\\n");
} catch (e) {
  process.stdout.write(JSON.stringify({ error: { code: e.code, message: e.message } }) + "\\n");
  process.exitCode = 1;
}
`,
  );
  const out = join(dir, "tm-child.mjs");
  buildSync({
    entryPoints: [src],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: out,
    logLevel: "error",
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  });
  return out;
}

export interface ChildResult {
  ok?: Record<string, unknown>;
  error?: { code: string; message: string };
}

export function runTimemachineChild(
  child: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    p.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    p.on("error", reject);
    p.on("close", () => {
      try {
        resolve(JSON.parse(out) as ChildResult);
      } catch {
        reject(new Error(`child printed no JSON: ${out}${err}`));
      }
    });
  });
}
