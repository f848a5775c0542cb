import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Files written a moment ago are "racy" for a scan (always re-read); give them the times of
 * files that sat on disk for a minute.
 */
export function backdate(root: string, names: string[]): void {
  const past = new Date(Date.now() - 60_000);
  for (const n of names) utimesSync(join(root, n), past, past);
}

/**
 * `dirs` directories × `files` files, `d<i>/f<j>.txt` holding `<i>/<j>` and a newline, all with
 * the times of files a minute old (none racy for a scan).
 */
export function writeOldGrid(root: string, dirs: number, files: number): void {
  const past = new Date(Date.now() - 60_000);
  for (let d = 0; d < dirs; d++) {
    mkdirSync(join(root, `d${d}`));
    for (let f = 0; f < files; f++) {
      const p = join(root, `d${d}`, `f${f}.txt`);
      writeFileSync(p, `${d}/${f}\n`);
      utimesSync(p, past, past);
    }
  }
}
