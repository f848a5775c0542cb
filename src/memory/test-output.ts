import type { TestResult } from "./schemas.ts";

/** The test runners the extractors recognize in a command line, first match wins. */
const RUNNERS: { re: RegExp; framework: string }[] = [
  { re: /\b(python3?\s+-m\s+)?pytest\b|\bpy\.test\b|\btox\b/, framework: "pytest" },
  { re: /\bvitest\b/, framework: "vitest" },
  { re: /\bjest\b/, framework: "jest" },
  { re: /\bnode\b[^|;&\n]*\s--test\b/, framework: "node" },
  { re: /\b(npm|pnpm|yarn|bun)\s+(run\s+)?test\b|\bnpm\s+t\b/, framework: "npm" },
  { re: /\bgo\s+test\b/, framework: "go" },
  { re: /\b(mvn|mvnw|\.\/mvnw)\b[^|;&\n]*\b(test|verify)\b/, framework: "maven" },
  { re: /\bgradlew?\b[^|;&\n]*\btest\b/, framework: "gradle" },
  { re: /\bcargo\s+(test|nextest)\b/, framework: "cargo" },
  { re: /\bmake\s+(test|check)\b/, framework: "make" },
];

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** Terminal colour codes removed, so summaries match in coloured logs too. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

/** The framework a command runs tests with, or undefined when it is not a test command. */
export function testFramework(cmd: string): string | undefined {
  return RUNNERS.find((r) => r.re.test(cmd))?.framework;
}

/** A regex finding a test command inside prose (`run pytest -q tests/` → `pytest -q tests/`). */
export const TEST_CMD_IN_TEXT =
  /\b(?:python3?\s+-m\s+pytest|pytest|npx\s+(?:vitest|jest)|vitest|jest|node\s+--test|(?:npm|pnpm|yarn)\s+(?:run\s+)?test|go\s+test|mvn\s+(?:-\S+\s+)*(?:test|verify)|cargo\s+test|make\s+test)(?:\s+(?:-{1,2}[\w-]+(?:=\S+)?|[\w./:*-]+(?:::[\w.]+)?))*/;

const num = (s: string | undefined) => (s === undefined ? 0 : Number.parseInt(s, 10));

/**
 * Pass/fail counts from a test runner's output (pytest, jest, vitest, mocha, go test, maven,
 * cargo, `node --test` in its TAP and spec reporters). Returns undefined when no summary line is
 * found. When a log holds several summaries (a retry), the last one wins. `node --test` output
 * also yields the outcome of each named test (`tests`).
 */
export function parseTestOutput(output: string, hint?: string): TestResult | undefined {
  let found: TestResult | undefined;
  const set = (r: Omit<TestResult, "exit_code">) => {
    found = { ...r, exit_code: null };
  };
  // node --test: test lines seen since the last summary; the spec reporter repeats failures
  // after "✖ failing tests:", so a name's first outcome in a run is kept.
  let named = new Map<string, "pass" | "fail" | "skip">();
  let repeating = false;
  let nodeRun: TestResult | undefined;
  for (const line of output.split("\n")) {
    const l = stripAnsi(line);
    const nodeTest = parseNodeTestLine(l);
    if (nodeTest !== undefined) {
      if (!repeating && !named.has(nodeTest.name)) named.set(nodeTest.name, nodeTest.status);
      continue;
    }
    if (/^\s*✖ failing tests:\s*$/.test(l)) {
      repeating = true;
      continue;
    }
    // node --test summary: "# tests 3" / "ℹ tests 3" opens it, "# pass 2", "# fail 1", … follow
    const nodeSum = l.match(/^(?:#|ℹ) (tests|pass|fail|skipped|todo|cancelled) (\d+)\s*$/);
    if (nodeSum) {
      const [, key, n] = nodeSum;
      if (key === "tests" || nodeRun === undefined || found !== nodeRun) {
        nodeRun = { framework: "node", passed: 0, failed: 0, skipped: 0, exit_code: null };
        if (named.size > 0) nodeRun.tests = [...named].map(([name, status]) => ({ name, status }));
        found = nodeRun;
        named = new Map();
        repeating = false;
      }
      if (key === "pass") nodeRun.passed = num(n);
      else if (key === "fail" || key === "cancelled") nodeRun.failed += num(n);
      else if (key === "skipped" || key === "todo") nodeRun.skipped += num(n);
      continue;
    }
    // pytest: "==== 3 passed, 1 failed, 2 skipped in 0.12s ====" or "1 failed, 3 passed in 0.1s"
    if (/\b\d+ (passed|failed|error|errors)\b.*\bin [\d.]+s\b/.test(l) && !/Tests?:/.test(l)) {
      set({
        framework: "pytest",
        passed: num(l.match(/(\d+) passed/)?.[1]),
        failed: num(l.match(/(\d+) failed/)?.[1]) + num(l.match(/(\d+) errors?\b/)?.[1]),
        skipped: num(l.match(/(\d+) skipped/)?.[1]) + num(l.match(/(\d+) xfailed/)?.[1]),
      });
      continue;
    }
    // jest: "Tests:       1 failed, 5 passed, 6 total"
    const jest = l.match(/^\s*Tests:\s+(.*)total/);
    if (jest) {
      const m = jest;
      set({
        framework: "jest",
        passed: num(m[1]?.match(/(\d+) passed/)?.[1]),
        failed: num(m[1]?.match(/(\d+) failed/)?.[1]),
        skipped: num(m[1]?.match(/(\d+) (skipped|todo)/)?.[1]),
      });
      continue;
    }
    // vitest: " Tests  2 failed | 10 passed (12)"
    const vitest = l.match(/^\s*Tests\s+(.*\(\d+\))\s*$/);
    if (vitest) {
      const m = vitest;
      set({
        framework: "vitest",
        passed: num(m[1]?.match(/(\d+) passed/)?.[1]),
        failed: num(m[1]?.match(/(\d+) failed/)?.[1]),
        skipped: num(m[1]?.match(/(\d+) skipped/)?.[1]),
      });
      continue;
    }
    // maven: "Tests run: 10, Failures: 1, Errors: 0, Skipped: 2" (the last, aggregated line wins)
    const mvn = l.match(
      /Tests run:\s*(\d+),\s*Failures:\s*(\d+),\s*Errors:\s*(\d+)(?:,\s*Skipped:\s*(\d+))?/,
    );
    if (mvn) {
      const m = mvn;
      const run = num(m[1]);
      const bad = num(m[2]) + num(m[3]);
      const skipped = num(m[4]);
      set({ framework: "maven", passed: Math.max(0, run - bad - skipped), failed: bad, skipped });
      continue;
    }
    // cargo: "test result: ok. 5 passed; 0 failed; 1 ignored"
    const cargo = l.match(/test result: \w+\. (\d+) passed; (\d+) failed(?:; (\d+) ignored)?/);
    if (cargo) {
      const m = cargo;
      const prev = found?.framework === "cargo" ? found : undefined;
      set({
        framework: "cargo",
        passed: num(m[1]) + (prev?.passed ?? 0),
        failed: num(m[2]) + (prev?.failed ?? 0),
        skipped: num(m[3]) + (prev?.skipped ?? 0),
      });
      continue;
    }
    // mocha: "5 passing" / "1 failing"
    const passing = l.match(/^\s*(\d+) passing\b/);
    if (passing) {
      const m = passing;
      set({ framework: "mocha", passed: num(m[1]), failed: 0, skipped: 0 });
      continue;
    }
    const failing = l.match(/^\s*(\d+) failing\b/);
    if (failing && found?.framework === "mocha") {
      const m = failing;
      found.failed = num(m[1]);
    }
  }
  if (found !== undefined) return found;
  return parseGoTest(output, hint);
}

const TAP_LINE = /^\s*(not )?ok \d+ - (.+?)(?:\s+#\s*(SKIP|TODO)\b.*)?$/i;
const SPEC_LINE = /^\s*([✔✖﹣])\s+(.+?)(?:\s+\([\d.]+m?s\))?(?:\s+#\s*(SKIP|TODO)\b.*)?$/;

/** One `node --test` test line: TAP `ok 1 - name` / `not ok 2 - name`, spec `✔ name (1.2ms)` / `✖ name`. */
function parseNodeTestLine(
  l: string,
): { name: string; status: "pass" | "fail" | "skip" } | undefined {
  const tap = l.match(TAP_LINE);
  if (tap) {
    const status = tap[3] !== undefined ? "skip" : tap[1] !== undefined ? "fail" : "pass";
    return { name: (tap[2] ?? "").trim(), status };
  }
  const spec = l.match(SPEC_LINE);
  if (spec && !/^failing tests:/.test(spec[2] ?? "")) {
    const status =
      spec[3] !== undefined || spec[1] === "﹣" ? "skip" : spec[1] === "✖" ? "fail" : "pass";
    return { name: (spec[2] ?? "").trim(), status };
  }
  return undefined;
}

/** `go test`: count `--- PASS/FAIL/SKIP` lines, else package lines (`ok  pkg`, `FAIL pkg`). */
function parseGoTest(output: string, hint?: string): TestResult | undefined {
  const pass = output.match(/^\s*--- PASS:/gm)?.length ?? 0;
  const fail = output.match(/^\s*--- FAIL:/gm)?.length ?? 0;
  const skip = output.match(/^\s*--- SKIP:/gm)?.length ?? 0;
  if (pass + fail + skip > 0)
    return { framework: "go", passed: pass, failed: fail, skipped: skip, exit_code: null };
  const okPkgs = output.match(/^ok\s+\S+/gm)?.length ?? 0;
  const failPkgs = output.match(/^FAIL\s+\S+/gm)?.length ?? 0;
  if (okPkgs + failPkgs > 0 && (hint === undefined || hint === "go")) {
    return { framework: "go", passed: okPkgs, failed: failPkgs, skipped: 0, exit_code: null };
  }
  return undefined;
}
