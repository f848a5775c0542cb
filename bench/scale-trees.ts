/**
 * The real trees of `npm run bench:scale` (issue 22): popular npm packages, pinned, packed with
 * `npm pack` into a cache outside the repo (kept between runs) and extracted with `tar`. The
 * 10k tree holds one copy of each package; the 100k tree ten copies of the 10k tree. Folders
 * the default excludes drop (`dist/`, `build/`) are renamed with a `_` suffix, so they count.
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Chosen to reach ~10,400 files / ~56 MB: lodash and typescript also feed the diff rows; the
 * others are many small modules (date-fns, rxjs) and a few large bundles (prettier, react-dom).
 */
export const PACKAGES: readonly string[] = [
  "typescript@5.6.3",
  "lodash@4.17.21",
  "date-fns@2.30.0",
  "rxjs@7.8.1",
  "webpack@5.95.0",
  "eslint@9.12.0",
  "prettier@3.3.3",
  "react-dom@18.3.1",
  "zod@3.23.8",
];

/** Directory names the default excludes drop, renamed so the tree keeps them. */
const RENAMED = new Set(["dist", "build", "target", "node_modules", ".next", ".cache"]);

/** The cache folder: `TIMEWARP_BENCH_CACHE`, else ~/.cache/timewarp-bench (else the temp dir). */
export function benchCache(): string {
  if (process.env.TIMEWARP_BENCH_CACHE) return process.env.TIMEWARP_BENCH_CACHE;
  const home = homedir();
  return home ? join(home, ".cache", "timewarp-bench") : join(tmpdir(), "timewarp-bench");
}

/** `npm pack` each package into `packs/` unless its tarball is there already. */
function packAll(packs: string): string[] {
  mkdirSync(packs, { recursive: true });
  return PACKAGES.map((spec) => {
    const at = spec.lastIndexOf("@");
    const name = spec.slice(0, at).replace(/^@/, "").replace("/", "-");
    const file = join(packs, `${name}-${spec.slice(at + 1)}.tgz`);
    if (!existsSync(file)) {
      process.stderr.write(`npm pack ${spec} …\n`);
      execFileSync("npm", ["pack", spec, "--silent", "--pack-destination", packs], {
        stdio: ["ignore", "ignore", "inherit"],
      });
    }
    if (!existsSync(file)) throw new Error(`npm pack ${spec} wrote no ${file}`);
    return file;
  });
}

function renameExcludedDirs(dir: string): void {
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    let name = d.name;
    if (RENAMED.has(name)) {
      name = `${name}_`;
      renameSync(join(dir, d.name), join(dir, name));
    }
    renameExcludedDirs(join(dir, name));
  }
}

/** Files and bytes of a tree (regular files only). */
export function countTree(dir: string): { files: number; bytes: number; dirs: number } {
  const out = { files: 0, bytes: 0, dirs: 0 };
  const walk = (d: string): void => {
    out.dirs++;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        out.files++;
        out.bytes += statSync(p).size;
      }
    }
  };
  walk(dir);
  return out;
}

/** Built once per list of packages: `<tree>.stamp` beside it says which list built it. */
function ready(dir: string, stamp: string): boolean {
  try {
    return readFileSync(`${dir}.stamp`, "utf8") === stamp;
  } catch {
    return false;
  }
}

function build10k(dir: string, stamp: string): void {
  const tgzs = packAll(join(benchCache(), "packs"));
  rmSync(dir, { recursive: true, force: true });
  for (const [i, tgz] of tgzs.entries()) {
    const spec = PACKAGES[i] ?? "";
    const into = join(dir, spec.slice(0, spec.lastIndexOf("@")).replace("/", "__"));
    mkdirSync(into, { recursive: true });
    execFileSync("tar", ["xzf", tgz, "-C", into, "--strip-components=1", "--no-same-owner"]);
  }
  renameExcludedDirs(dir);
  writeFileSync(`${dir}.stamp`, stamp);
}

/**
 * The pristine tree of `size` ("10k" or "100k") in the cache, built when missing. Benches copy
 * it (`cp -a`) before changing anything.
 */
export function pristineTree(size: "10k" | "100k"): string {
  const stamp = PACKAGES.join("\n");
  const t10 = join(benchCache(), "tree-10k");
  if (!ready(t10, stamp)) build10k(t10, stamp);
  if (size === "10k") return t10;
  const t100 = join(benchCache(), "tree-100k");
  if (!ready(t100, stamp)) {
    rmSync(t100, { recursive: true, force: true });
    mkdirSync(t100, { recursive: true });
    for (let c = 0; c < 10; c++) {
      execFileSync("cp", ["-a", t10, join(t100, `copy${c}`)]);
    }
    writeFileSync(`${t100}.stamp`, stamp);
  }
  return t100;
}
