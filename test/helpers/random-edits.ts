import { chmodSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backdate } from "./backdate.ts";

/**
 * A small workspace (four directories with a `sub/` each, 40 files, an excluded
 * `node_modules/`) and a seeded editor that changes it the ways a watcher must report:
 * edits, deletions, new files, new subtrees (only their top reported, as a mkdir is), chmod,
 * symlinks, renamed directories (both names), excluded files and paths that never existed.
 * `round()` makes three random edits and returns the paths a watcher would report.
 */
export function randomEditor(root: string, seed = 7): { round: () => string[] } {
  let state = seed;
  const rnd = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const files: string[] = [];
  for (let d = 0; d < 4; d++) {
    mkdirSync(join(root, `d${d}`, "sub"), { recursive: true });
    for (let f = 0; f < 10; f++) {
      const rel = `d${d}/${f % 2 === 0 ? "sub/" : ""}f${f}.txt`;
      writeFileSync(join(root, rel), `file ${rel}\n`);
      files.push(rel);
    }
  }
  mkdirSync(join(root, "node_modules", "x"), { recursive: true });
  backdate(root, files);
  let serial = 0;
  const live = () => files.filter((f) => f !== "");
  const edit = (changed: string[]) => {
    const op = Math.floor(rnd() * 9);
    serial++;
    if (op === 0 && live().length > 0) {
      const f = pick(live());
      writeFileSync(join(root, f), `edited ${serial}\n`);
      changed.push(f);
    } else if (op === 1 && live().length > 0) {
      const f = pick(live());
      rmSync(join(root, f));
      files[files.indexOf(f)] = "";
      changed.push(f);
    } else if (op === 2) {
      const dir = pick(["d0", "d1/sub", "d2", "d3/sub"]);
      const f = `${dir}/new${serial}.txt`;
      try {
        writeFileSync(join(root, f), `new ${serial}\n`);
        files.push(f);
        changed.push(f);
      } catch {
        // its directory was moved away this round
      }
    } else if (op === 3) {
      const top = `t${serial}`;
      mkdirSync(join(root, top, "a", "b"), { recursive: true });
      writeFileSync(join(root, top, "a", "b", "deep.txt"), "deep\n");
      writeFileSync(join(root, top, "x.txt"), "x\n");
      files.push(`${top}/a/b/deep.txt`, `${top}/x.txt`);
      changed.push(top);
    } else if (op === 4 && live().length > 0) {
      const f = pick(live());
      chmodSync(join(root, f), rnd() < 0.5 ? 0o755 : 0o644);
      changed.push(f);
    } else if (op === 5) {
      const link = `link${serial}`;
      symlinkSync(pick(["d0", "missing", "d1/f1.txt"]), join(root, link));
      changed.push(link);
    } else if (op === 6) {
      const from = pick(["d0/sub", "d1/sub", "d2/sub", "d3/sub"]);
      const to = `${from.split("/")[0]}/moved${serial}`;
      try {
        renameSync(join(root, from), join(root, to));
        for (let i = 0; i < files.length; i++) {
          const f = files[i] as string;
          if (f.startsWith(`${from}/`)) files[i] = `${to}${f.slice(from.length)}`;
        }
        mkdirSync(join(root, from));
        changed.push(from, to);
      } catch {
        // already moved
      }
    } else if (op === 7) {
      writeFileSync(join(root, "d2", `run${serial}.log`), "log\n");
      writeFileSync(join(root, "node_modules", "x", `i${serial}.js`), "js\n");
      changed.push(`d2/run${serial}.log`);
    } else {
      changed.push(`ghost${serial}/nothing`);
    }
  };
  return {
    round: () => {
      const changed: string[] = [];
      for (let k = 0; k < 3; k++) edit(changed);
      return changed;
    },
  };
}
