/**
 * MCP parallel-edit benchmark (issue 16, class 5): how long a batch of parallel small
 * `ApplyWholeFileEdit` calls takes against one real `timewarp mcp` server over stdio, and
 * against two servers on one workspace. Before the ledger lock was made asynchronous and
 * queued, 3 parallel calls took 10 s and one failed LOCKED by the server itself.
 *
 *   npm run bench:mcp                  # 10 parallel edits, 15 rounds
 *   npm run bench:mcp -- 10 5          # PARALLEL ROUNDS (or PARALLEL=10 ROUNDS=5)
 *   TIMEWARP_BENCH_CLI=bin npm run bench:mcp   # the built bin (npm run build first)
 *
 * Prints, per setting, the median and the slowest round's wall time, and how many calls failed.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const REPO = dirname(dirname(fileURLToPath(import.meta.url)));
const PARALLEL = Number(process.argv[2] ?? process.env.PARALLEL ?? 10);
const ROUNDS = Number(process.argv[3] ?? process.env.ROUNDS ?? 15);
const command =
  process.env.TIMEWARP_BENCH_CLI === "bin"
    ? { command: process.execPath, args: [join(REPO, "bin", "timewarp.cjs")] }
    : {
        command: join(REPO, "node_modules", ".bin", "tsx"),
        args: [join(REPO, "src", "cli", "entry.ts")],
      };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] ?? Number.NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};
const fmt = (n: number) => `${n.toFixed(1).padStart(8)} ms`;

async function connect(cwd: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: command.command,
    args: [...command.args, "mcp"],
    cwd,
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1" },
    stderr: "ignore",
  });
  const client = new Client({ name: "timewarp-bench", version: "0.0.0" });
  await client.connect(transport);
  return client;
}

async function bench(label: string, servers: number, sameFile: boolean): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "tw-bench-mcp-"));
  writeFileSync(join(dir, "w.txt"), "v0\n");
  const clients = await Promise.all(Array.from({ length: servers }, () => connect(dir)));
  try {
    // warm up: each server loads the ledger code once
    for (const c of clients)
      await c.callTool({
        name: "ApplyWholeFileEdit",
        arguments: { path: "warm.txt", content: "w" },
      });
    const times: number[] = [];
    let failed = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const t = performance.now();
      const results = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) =>
          (clients[i % servers] as Client).callTool(
            {
              name: "ApplyWholeFileEdit",
              arguments: {
                path: sameFile ? "w.txt" : `f${i}.txt`,
                content: `v${round}.${i}\n`,
              },
            },
            { timeout: 120_000 },
          ),
        ),
      );
      times.push(performance.now() - t);
      failed += results.filter((r) => r.isError).length;
    }
    console.log(
      `${label.padEnd(44)} median ${fmt(median(times))}   slowest ${fmt(Math.max(...times))}   failed ${failed}/${PARALLEL * ROUNDS}`,
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `timewarp mcp: ${PARALLEL} parallel ApplyWholeFileEdit per round, ${ROUNDS} rounds ` +
    `(${command.command === process.execPath ? "built bin" : "tsx from source"}; ` +
    `${cpus().length} cores, load ${loadavg()[0]?.toFixed(2)})`,
);
await bench(`one server, ${PARALLEL} files`, 1, false);
await bench("one server, one file", 1, true);
await bench("two servers, one workspace, one file", 2, true);
