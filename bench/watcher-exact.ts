/**
 * The exactness part of `npm run bench:watcher` (issue 22, item 6): random creates, edits,
 * renames and deletes (in new subdirectories too) on a real tree, and at each checkpoint the
 * truth a walk gives beside what each change source reported since the last one. A report
 * covers a changed path when it names the path or a directory above it (a scan visits whole
 * subtrees for directories). Over-reports cost time, never correctness; misses are wrong.
 */
import {
  appendFileSync,
  type Dirent,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { createPrng } from "./snapshot-fixtures.ts";

/** Path → identity (files: size, mtime, inode; directories: inode) of every entry. */
export function truthListing(root: string, skip: ReadonlySet<string>): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    let entries: Dirent[];
    try {
      entries = readdirSync(join(root, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel === "" ? e.name : `${rel}/${e.name}`;
      if (rel === "" && skip.has(e.name)) continue;
      const st = lstatSync(join(root, r));
      if (e.isDirectory()) {
        out.set(r, `d${st.ino}`);
        walk(r);
      } else out.set(r, `${st.size}:${st.mtimeMs}:${st.ino}`);
    }
  };
  walk("");
  return out;
}

/** Paths whose identity differs between two listings (created, changed or gone). */
export function truthChanges(a: Map<string, string>, b: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [p, v] of b) if (a.get(p) !== v) out.push(p);
  for (const p of a.keys()) if (!b.has(p)) out.push(p);
  return out;
}

/** Truth paths that no reported path names, itself or through a directory above it. */
export function missed(truth: string[], reported: Iterable<string>): string[] {
  const set = new Set(reported);
  return truth.filter((p) => {
    for (let q = p; q !== ""; q = q.includes("/") ? q.slice(0, q.lastIndexOf("/")) : "") {
      if (set.has(q)) return false;
    }
    return true;
  });
}

export const relativeTo = (root: string, abs: string) => relative(root, abs).split("\\").join("/");

/**
 * `n` random operations on the tree under `root` (entries of `skip` at the root left alone):
 * edits, creates in existing and new nested directories, file and directory renames, deletes,
 * and a new directory filled and renamed at once (the race a per-directory watcher must win).
 */
export function randomOps(root: string, n: number, seed: number, skip: ReadonlySet<string>): void {
  const rnd = createPrng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const listing = truthListing(root, skip);
  const files = [...listing].filter(([, v]) => !v.startsWith("d")).map(([p]) => p);
  const dirs = [...listing].filter(([, v]) => v.startsWith("d")).map(([p]) => p);
  const small = dirs.filter((d) => d.split("/").length >= 3);
  let made = 0;
  const fresh = () => `bench-${seed}-${made++}`;
  for (let i = 0; i < n; i++) {
    const kind = Math.floor(rnd() * 8);
    const dir = dirs.length > 0 ? pick(dirs) : "";
    try {
      if (kind === 0 || files.length === 0)
        writeFileSync(join(root, dir, `${fresh()}.txt`), `new ${i}\n`);
      else if (kind === 1) appendFileSync(join(root, pick(files)), `// edit ${seed} ${i}\n`);
      else if (kind === 2) {
        const nested = join(dir, fresh(), fresh());
        mkdirSync(join(root, nested), { recursive: true });
        writeFileSync(join(root, nested, "inside.js"), `nested ${i}\n`);
      } else if (kind === 3)
        renameSync(join(root, pick(files)), join(root, dir, `${fresh()}.moved`));
      else if (kind === 4 && small.length > 0)
        renameSync(join(root, pick(small)), join(root, dir, fresh()));
      else if (kind === 5) rmSync(join(root, pick(files)), { force: true });
      else if (kind === 6 && small.length > 0)
        rmSync(join(root, pick(small)), { recursive: true, force: true });
      else {
        const d = join(root, dir, fresh());
        mkdirSync(d);
        for (let k = 0; k < 5; k++) writeFileSync(join(d, `f${k}.ts`), `burst ${k}\n`);
        renameSync(d, `${d}-renamed`);
      }
    } catch {
      // an earlier operation of this round moved or removed what this one picked
    }
  }
}
