import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { delimiter, join } from "node:path";
import { z } from "zod";
import { writeJsonAtomic } from "../core/index.ts";

/** The zh seed's `snapshot.json.env_fingerprint`: platform and the toolchain versions found. */
export const EnvFingerprintSchema = z
  .object({
    platform: z.string(),
    arch: z.string().optional(),
    node: z.string().optional(),
    python: z.string().optional(),
    go: z.string().optional(),
  })
  .passthrough();

export type EnvFingerprint = z.infer<typeof EnvFingerprintSchema>;

interface Probe {
  name: "node" | "python" | "go";
  commands: string[];
  args: string[];
  parse: (output: string) => string | undefined;
}

const PROBES: Probe[] = [
  { name: "node", commands: ["node"], args: ["--version"], parse: (s) => s.match(/v\d+\S*/)?.[0] },
  {
    name: "python",
    commands: ["python3", "python"],
    args: ["--version"],
    parse: (s) => s.match(/Python (\d+\.\d+\S*)/)?.[1],
  },
  {
    name: "go",
    commands: ["go"],
    args: ["version"],
    parse: (s) => s.match(/go(\d+\.\d+\S*)/)?.[1],
  },
];

/** Each probe is bounded: a hung shim (pyenv, asdf) costs at most this, and probes run in parallel. */
export const PROBE_TIMEOUT_MS = 2_000;

function which(command: string, pathEnv: string): string | undefined {
  for (const dir of pathEnv.split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, command);
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function run(file: string, args: string[], timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, killSignal: "SIGKILL" }, (error, stdout, stderr) => {
      resolve(error ? undefined : `${stdout}${stderr}`);
    });
  });
}

/**
 * What the cache depends on: PATH, the version-selecting variables of the usual managers, and
 * each resolved binary with its mtime (an upgrade replaces the file). Version files in the
 * workspace (`.python-version`, `.nvmrc`, `.tool-versions`, `go.mod`) count too: shims read them.
 */
function cacheKey(root: string, pathEnv: string): string {
  const parts: string[] = [process.platform, process.arch, pathEnv];
  for (const v of ["PYENV_VERSION", "NODE_VERSION", "GOTOOLCHAIN", "ASDF_PYTHON_VERSION"]) {
    parts.push(`${v}=${process.env[v] ?? ""}`);
  }
  for (const probe of PROBES) {
    for (const c of probe.commands) {
      const at = which(c, pathEnv);
      parts.push(at ? `${at}@${statSync(at).mtimeMs}` : `${c}:-`);
    }
  }
  for (const f of [".python-version", ".nvmrc", ".node-version", ".tool-versions", "go.mod"]) {
    const p = join(root, f);
    parts.push(existsSync(p) ? `${f}@${statSync(p).mtimeMs}` : `${f}:-`);
  }
  return parts.join("\n");
}

/** Where a workspace keeps its last fingerprint (see `probeEnvFingerprint`). */
export function envFingerprintCacheFile(dataDir: string): string {
  return join(dataDir, "cache", "env-fingerprint.json");
}

const CacheSchema = z.object({ key: z.string(), fingerprint: EnvFingerprintSchema });

export interface ProbeEnvOptions {
  /** The workspace (its version files select the shims' versions). */
  root: string;
  /** Where to cache the result; no cache when absent. */
  cacheFile?: string;
  timeoutMs?: number;
}

/**
 * Probe platform, node, python and go: in parallel, each bounded by a timeout, and cached on a
 * key that changes whenever the answer could (see `cacheKey`). A tool that is absent, fails or
 * times out is left out of the fingerprint rather than failing the session start.
 */
export async function probeEnvFingerprint(options: ProbeEnvOptions): Promise<EnvFingerprint> {
  const pathEnv = process.env.PATH ?? "";
  const key = cacheKey(options.root, pathEnv);
  if (options.cacheFile && existsSync(options.cacheFile)) {
    try {
      const cached = CacheSchema.parse(JSON.parse(readFileSync(options.cacheFile, "utf8")));
      if (cached.key === key) return cached.fingerprint;
    } catch {
      // a cache is disposable: a torn or stale one is simply rebuilt
    }
  }
  const timeout = options.timeoutMs ?? PROBE_TIMEOUT_MS;
  const found = await Promise.all(
    PROBES.map(async (probe) => {
      for (const c of probe.commands) {
        const at = which(c, pathEnv);
        if (!at) continue;
        const out = await run(at, probe.args, timeout);
        const version = out === undefined ? undefined : probe.parse(out);
        if (version) return [probe.name, version] as const;
      }
      return undefined;
    }),
  );
  const fingerprint: EnvFingerprint = { platform: process.platform, arch: process.arch };
  for (const f of found) if (f) fingerprint[f[0]] = f[1];
  if (options.cacheFile) {
    try {
      mkdirSync(join(options.cacheFile, ".."), { recursive: true });
      writeJsonAtomic(options.cacheFile, { key, fingerprint }, { durable: false });
    } catch {
      // failing to cache must not fail the snapshot
    }
  }
  return fingerprint;
}
