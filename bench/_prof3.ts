import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { returnToPresent, startSession, travel } from "../src/timemachine/index.ts";
const base = mkdtempSync(join(tmpdir(), "prof3-"));
const w = join(base, "w");
const content = (i: number, v: number) => `// file ${i} v${v}\n${`export const value${i} = ${i * 31 + v};\n`.repeat(1 + (i % 40))}`;
for (let i = 0; i < 10000; i++) {
  const dir = join(w, `pkg${Math.floor(i / 1000)}`, `mod${Math.floor(i / 100) % 10}`);
  if (i % 100 === 0) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `file${i}.ts`), content(i, 0));
}
const { snapshot_id } = await startSession({ root: w, sessionId: "b" });
execFileSync(process.execPath, ["bin/timewarp.cjs", "watch", "start", "-C", w]);
for (let k = 0; k < 20; k++) { const i = k * 500; writeFileSync(join(w, `pkg${Math.floor(i / 1000)}`, `mod${Math.floor(i / 100) % 10}`, `file${i}.ts`), content(i, 1)); }
travel({ root: w, snapshotId: snapshot_id }); returnToPresent({ root: w });
const t = (name: string, f: () => void) => { const s = performance.now(); f(); console.log(name, (performance.now() - s).toFixed(1)); };
let last = 0; const marks: string[] = [];
const onStep = (name: string) => { const n = performance.now(); marks.push(`${name}+${(n - last).toFixed(1)}`); last = n; };
for (let r = 0; r < 6; r++) {
  marks.length = 0; last = performance.now();
  t("travel", () => travel({ root: w, snapshotId: snapshot_id, onStep }));
  console.log("  ", marks.join(" ")); marks.length = 0; last = performance.now();
  t("return", () => returnToPresent({ root: w, onStep }));
  console.log("  ", marks.join(" "));
}
execFileSync(process.execPath, ["bin/timewarp.cjs", "watch", "stop", "-C", w]);
