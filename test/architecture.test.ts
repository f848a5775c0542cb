import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";

/**
 * DESIGN.md: imports point down (surfaces → capabilities → store/diff → core), and a folder is
 * entered only through its index.ts. This test walks every import in src/ and fails on either.
 */
const LAYER: Record<string, number> = {
  core: 0,
  store: 1,
  diff: 1,
  timemachine: 2,
  ledger: 2,
  runs: 2,
  memory: 2,
  cli: 3,
  mcp: 3,
  hooks: 3,
  ui: 3,
};

const SRC = join(REPO_ROOT, "src");

/**
 * Narrow doors: what a folder may take from another's index.ts. hooks/ reaches the store's
 * scanning (stat caches, the watcher's reports, file reads) only through its door for a kept
 * view of the workspace, store/workspace-scan.ts (every name it exports); besides that it only
 * controls the watch daemon and reads pre-images from the object store.
 */
const NARROW_DOORS: { from: string; to: string; door: string; also: string[] }[] = [
  {
    from: "hooks",
    to: "store",
    door: "workspace-scan.ts",
    also: [
      "createObjectStore",
      "ensureWatchDaemon",
      "runningWatchDaemon",
      "runWatchDaemon",
      "stopWatchDaemon",
    ],
  },
];

/** The names a module exports by declaration (`export function f`, `export interface I`, …). */
function exportedNames(text: string): string[] {
  return [
    ...text.matchAll(/^export\s+(?:async\s+)?(?:function|interface|type|const|class)\s+(\w+)/gm),
  ].map((m) => m[1] as string);
}

/**
 * The names the imports of `spec` in `text` take: `import { a, type B } from …`,
 * `const { a, b } = await import(…)`; `*` for an import that takes the whole module.
 */
function namesImportedFrom(text: string, spec: string): string[] {
  const q = spec.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const out: string[] = [];
  const braces = (list: string) =>
    list
      .split(",")
      .map(
        (n) =>
          n
            .trim()
            .replace(/^type\s+/, "")
            .split(/\s+as\s+|\s*:\s*/)[0] as string,
      )
      .filter((n) => n !== "");
  for (const m of text.matchAll(
    new RegExp(`import\\s+(?:type\\s+)?\\{([^}]*)\\}\\s*from\\s*["']${q}["']`, "g"),
  ))
    out.push(...braces(m[1] as string));
  for (const m of text.matchAll(
    new RegExp(
      `(?:const|let)\\s*\\{([^{}]*)\\}\\s*=\\s*await\\s+import\\(\\s*["']${q}["']\\s*\\)`,
      "g",
    ),
  ))
    out.push(...braces(m[1] as string));
  if (new RegExp(`import\\s+\\*\\s+as\\s+\\w+\\s+from\\s*["']${q}["']`).test(text)) out.push("*");
  return out;
}

function narrowDoorViolations(src: string): string[] {
  const problems: string[] = [];
  for (const rule of NARROW_DOORS) {
    const allowed = new Set([
      ...exportedNames(readFileSync(join(src, rule.to, rule.door), "utf8")),
      ...rule.also,
    ]);
    for (const file of sourceFiles(join(src, rule.from))) {
      const text = readFileSync(file, "utf8");
      for (const spec of new Set(importsOf(text))) {
        if (resolve(dirname(file), spec) !== join(src, rule.to, "index.ts")) continue;
        for (const name of namesImportedFrom(text, spec)) {
          if (!allowed.has(name))
            problems.push(
              `${relative(REPO_ROOT, file)} takes ${name} from ${rule.to}/; ${rule.from}/ reaches ${rule.to}/ through ${rule.to}/${rule.door}`,
            );
        }
      }
    }
  }
  return problems;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    if (d.isDirectory()) return sourceFiles(p);
    return d.name.endsWith(".ts") && !d.name.endsWith(".test.ts") ? [p] : [];
  });
}

const IMPORT_RE =
  /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

function importsOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT_RE)) {
    const spec = m[1] ?? m[2];
    if (spec) out.push(spec);
  }
  return out;
}

function folderOf(src: string, file: string): string | null {
  const rel = relative(src, file);
  const parts = rel.split(sep);
  return parts.length > 1 ? (parts[0] ?? null) : null;
}

function violations(src: string): string[] {
  const problems: string[] = [];
  for (const file of sourceFiles(src)) {
    const from = folderOf(src, file);
    for (const spec of importsOf(readFileSync(file, "utf8"))) {
      if (!spec.startsWith(".")) continue;
      const target = resolve(dirname(file), spec);
      if (!target.startsWith(src + sep)) {
        problems.push(`${relative(REPO_ROOT, file)} imports ${spec}, outside src/`);
        continue;
      }
      const to = folderOf(src, target);
      if (from === null || to === null || from === to) continue;
      const fromLayer = LAYER[from];
      const toLayer = LAYER[to];
      if (fromLayer === undefined || toLayer === undefined) {
        problems.push(
          `${relative(REPO_ROOT, file)}: folder ${from} or ${to} has no layer in the architecture test`,
        );
        continue;
      }
      if (toLayer > fromLayer) {
        problems.push(`${relative(REPO_ROOT, file)} (${from}) imports upward into ${to}: ${spec}`);
      }
      if (relative(join(src, to), target) !== "index.ts") {
        problems.push(
          `${relative(REPO_ROOT, file)} reaches into ${to}'s inner file ${spec}; import ${to}/index.ts`,
        );
      }
    }
  }
  return problems;
}

describe("architecture", () => {
  it("finds the imports it checks (the walker itself works)", () => {
    expect(
      importsOf(
        'import { a } from "../core/index.ts";\nconst m = await import("../store/scan.ts");',
      ),
    ).toEqual(["../core/index.ts", "../store/scan.ts"]);
    expect(sourceFiles(SRC).length).toBeGreaterThan(5);
  });

  it("catches an upward import and a reach into an inner file", () => {
    const tmp = makeTempDir();
    try {
      const src = join(tmp.dir, "src");
      mkdirSync(join(src, "core"), { recursive: true });
      mkdirSync(join(src, "store"), { recursive: true });
      writeFileSync(join(src, "core", "bad.ts"), 'import { x } from "../store/index.ts";\n');
      writeFileSync(join(src, "store", "index.ts"), 'export { y } from "../core/bad.ts";\n');
      const found = violations(src);
      expect(found.some((v) => v.includes("imports upward into store"))).toBe(true);
      expect(found.some((v) => v.includes("reaches into core's inner file"))).toBe(true);
    } finally {
      tmp.cleanup();
    }
  });

  it("imports point down and enter a folder only through its index.ts", () => {
    expect(violations(SRC)).toEqual([]);
  });

  it("hooks/ reaches the store's scanning only through store/workspace-scan.ts", () => {
    expect(narrowDoorViolations(SRC)).toEqual([]);
  });

  it("catches a name taken past a narrow door, static or dynamic", () => {
    const tmp = makeTempDir();
    try {
      const src = join(tmp.dir, "src");
      mkdirSync(join(src, "hooks"), { recursive: true });
      mkdirSync(join(src, "store"), { recursive: true });
      writeFileSync(join(src, "store", "index.ts"), "");
      writeFileSync(join(src, "store", "workspace-scan.ts"), "export function scanKept() {}\n");
      writeFileSync(
        join(src, "hooks", "a.ts"),
        'import { scanKept, type StatCache } from "../store/index.ts";\n' +
          'const { createObjectStore, readFileStable } = await import("../store/index.ts");\n',
      );
      expect(narrowDoorViolations(src)).toEqual([
        expect.stringContaining("takes StatCache from store/"),
        expect.stringContaining("takes readFileStable from store/"),
      ]);
    } finally {
      tmp.cleanup();
    }
  });
});
