import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";

/** One entry of a tree on disk: git mode and bytes (a symlink's bytes are its target). */
export interface DiskEntry {
  mode: "100644" | "100755" | "120000";
  data: Buffer;
}

/** A tree keyed by each name's bytes read as latin1 (one char per byte, so no name is mangled). */
export type DiskTree = Map<string, DiskEntry>;

export const latin1Key = (bytes: Uint8Array): string => Buffer.from(bytes).toString("latin1");

/** The files and symlinks under `dir` (`.timewarp/` and `.git/` skipped), and every folder. */
export function readDiskTree(dir: string): { tree: DiskTree; dirs: string[] } {
  const tree: DiskTree = new Map();
  const dirs: string[] = [];
  const walk = (rel: Buffer) => {
    const abs = rel.length > 0 ? Buffer.concat([Buffer.from(`${dir}/`), rel]) : Buffer.from(dir);
    for (const n of readdirSync(abs, { encoding: "buffer" })) {
      if (rel.length === 0 && (latin1Key(n) === ".timewarp" || latin1Key(n) === ".git")) continue;
      const r = rel.length > 0 ? Buffer.concat([rel, Buffer.from("/"), n]) : n;
      const p = Buffer.concat([abs, Buffer.from("/"), n]);
      const st = lstatSync(p);
      if (st.isDirectory()) {
        dirs.push(latin1Key(r));
        walk(r);
      } else if (st.isSymbolicLink())
        tree.set(latin1Key(r), { mode: "120000", data: readlinkSync(p, { encoding: "buffer" }) });
      else
        tree.set(latin1Key(r), {
          mode: (st.mode & 0o111) !== 0 ? "100755" : "100644",
          data: readFileSync(p),
        });
    }
  };
  walk(Buffer.alloc(0));
  return { tree, dirs: dirs.sort() };
}

/** A tree as sorted lines (name, mode, hex bytes), for a readable `toEqual`. */
export function treeLines(tree: DiskTree): string[] {
  return [...tree.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${JSON.stringify(k)} ${v.mode} ${v.data.toString("hex")}`);
}
