import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { returnToPresent } from "../../src/timemachine/index.ts";

/** What a workspace holds, byte for byte (everything but `.timewarp/`). */
export type Tree = Map<string, string>;

/** Read a workspace into a comparable map: path → type, mode and exact content (hex). */
export function readTree(root: string): Tree {
  const out: Tree = new Map();
  const walk = (rel: string) => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      if (rel === "" && name === ".timewarp") continue;
      const r = rel === "" ? name : `${rel}/${name}`;
      const st = lstatSync(join(root, r));
      const mode = (st.mode & 0o777).toString(8);
      if (st.isDirectory()) {
        out.set(r, `dir ${mode}`);
        walk(r);
      } else if (st.isSymbolicLink()) {
        out.set(r, `link ${readlinkSync(join(root, r))}`);
      } else {
        out.set(r, `file ${mode} ${readFileSync(join(root, r)).toString("hex")}`);
      }
    }
  };
  walk("");
  return out;
}

/** The first few differences between two trees, for a readable assertion message. */
export function treeDiff(actual: Tree, expected: Tree, limit = 10): string[] {
  const out: string[] = [];
  for (const [k, v] of expected) {
    const a = actual.get(k);
    if (a === undefined) out.push(`missing ${k}`);
    else if (a !== v) out.push(`differs ${k}`);
  }
  for (const k of actual.keys()) if (!expected.has(k)) out.push(`extra ${k}`);
  return out.slice(0, limit);
}

export interface FileSpec {
  content: string | Buffer;
  mode?: number;
}

/** Write files (creating parents); a string spec is the content of a 0644 file. */
export function writeFiles(root: string, files: Record<string, string | FileSpec>): void {
  for (const [rel, spec] of Object.entries(files)) {
    const path = join(root, rel);
    mkdirSync(dirname(path), { recursive: true });
    const s = typeof spec === "string" ? { content: spec } : spec;
    rmSync(path, { force: true });
    writeFileSync(path, s.content);
    chmodSync(path, s.mode ?? 0o644);
  }
}

/**
 * Two states of one workspace for travel/return tests: `past` (what the snapshot holds) and the
 * changes that turn it into the `present`: modified, deleted and added files, a new directory,
 * a mode change and a symlink, plus excluded content that no restore may touch.
 */
export function buildPastState(root: string, files = 60): void {
  const spec: Record<string, string | FileSpec> = {};
  for (let i = 0; i < files; i++) {
    spec[`src/m${i % 7}/file${i}.txt`] = `past ${i}\n${"x".repeat(i * 37)}\n`;
  }
  spec["bin/run.sh"] = { content: "#!/bin/sh\necho past\n", mode: 0o755 };
  spec["README.md"] = "# demo\n";
  writeFiles(root, spec);
  symlinkSync("README.md", join(root, "link-to-readme"));
  writeFiles(root, { "node_modules/dep/index.js": "excluded, never touched\n" });
}

export function mutateToPresent(root: string, files = 60): void {
  const spec: Record<string, string | FileSpec> = {};
  for (let i = 0; i < files; i += 2) spec[`src/m${i % 7}/file${i}.txt`] = `present ${i}\n`;
  for (let i = 0; i < 6; i++) spec[`new/dir${i % 2}/added${i}.txt`] = `added ${i}\n`;
  spec["bin/run.sh"] = { content: "#!/bin/sh\necho present\n", mode: 0o700 };
  writeFiles(root, spec);
  for (let i = 1; i < files; i += 9) rmSync(join(root, `src/m${i % 7}/file${i}.txt`));
  chmodSync(join(root, "README.md"), 0o600);
  rmSync(join(root, "link-to-readme"));
  symlinkSync("bin/run.sh", join(root, "link-to-readme"));
  writeFiles(root, { "node_modules/dep/index.js": "excluded, changed in the present\n" });
}

/**
 * A return that `act` makes fail: `act` runs at the step named `at`. The error's code and data
 * (`{}` when the return went through).
 */
export function failedReturn(
  root: string,
  at: string,
  act: () => void,
): { code?: string; data?: Record<string, unknown> } {
  try {
    returnToPresent({ root, onStep: (s) => s === at && act() });
  } catch (error) {
    const e = error as { code?: string; data?: Record<string, unknown> };
    return { code: e.code, data: e.data };
  }
  return {};
}
