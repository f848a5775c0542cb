import type { TestResult } from "./schemas.ts";

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** Terminal colour codes removed, so summaries match in coloured logs too. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

const num = (s: string | undefined) => (s === undefined ? 0 : Number.parseInt(s, 10));

/**
 * Pass/fail counts from a test runner's output: pytest (`1 failed, 2 passed, 1 error in 0.1s`,
 * `no tests ran`), unittest and Django (`Ran N tests` then `OK (skipped=k)` / `FAILED
 * (failures=a, errors=b, skipped=c)`), jest, vitest, mocha, go test, maven surefire, gradle,
 * cargo, ctest (`75% tests passed, 1 tests failed out of 4`), `node --test` in its TAP and spec
 * reporters, and tox/nox session summaries around them. Returns undefined when no summary line
 * is found. When a log holds several summaries (a retry), the last one wins. `node --test`
 * output also yields the outcome of each named test (`tests`).
 */
export function parseTestOutput(output: string, hint?: string): TestResult | undefined {
  const scan: Scan = {
    output,
    hint,
    found: undefined,
    named: new Map(),
    repeating: false,
    nodeRun: undefined,
    unittestRan: undefined,
    sessions: { kind: "", ok: 0, failed: 0 },
  };
  for (const line of output.split("\n")) {
    const l = stripAnsi(line);
    for (const parse of LINE_PARSERS) if (parse(l, scan)) break;
  }
  return withSessions(scan.found ?? parseGoTest(output, hint), scan.sessions);
}

/** What `parseTestOutput` has read so far; the line parsers share it. */
interface Scan {
  output: string;
  hint: string | undefined;
  /** The last summary seen: a later one replaces it. */
  found: TestResult | undefined;
  /**
   * node --test: test lines seen since the last summary; the spec reporter repeats failures
   * after "✖ failing tests:" (`repeating`), so a name's first outcome in a run is kept.
   */
  named: Map<string, "pass" | "fail" | "skip">;
  repeating: boolean;
  nodeRun: TestResult | undefined;
  /** unittest's "Ran N tests" count, waiting for its OK/FAILED verdict. */
  unittestRan: number | undefined;
  /** tox/nox sessions around the runner. */
  sessions: Sessions;
}

interface Sessions {
  kind: string;
  ok: number;
  failed: number;
}

/** A parser for one runner's lines: true when it has consumed the line. */
type LineParser = (line: string, scan: Scan) => boolean;

function summary(scan: Scan, r: Omit<TestResult, "exit_code">): true {
  scan.found = { ...r, exit_code: null };
  return true;
}

/** Asked in this order for each line; the first that consumes it ends the line. */
const LINE_PARSERS: readonly LineParser[] = [
  nodeTestLine,
  nodeSummary,
  pytestNoTests,
  unittestSummary,
  ctestSummary,
  gradleSummary,
  toxSession,
  noxSession,
  pytestSummary,
  jestSummary,
  vitestSummary,
  mavenSummary,
  cargoSummary,
  mochaSummary,
];

/** node --test: a named test's outcome, and the spec reporter's "✖ failing tests:" recap. */
function nodeTestLine(l: string, scan: Scan): boolean {
  const nodeTest = parseNodeTestLine(l);
  if (nodeTest !== undefined) {
    if (!scan.repeating && !scan.named.has(nodeTest.name))
      scan.named.set(nodeTest.name, nodeTest.status);
    return true;
  }
  if (/^\s*✖ failing tests:\s*$/.test(l)) {
    scan.repeating = true;
    return true;
  }
  return false;
}

/** node --test summary: "# tests 3" / "ℹ tests 3" opens it, "# pass 2", "# fail 1", … follow. */
function nodeSummary(l: string, scan: Scan): boolean {
  const nodeSum = l.match(/^(?:#|ℹ) (tests|pass|fail|skipped|todo|cancelled) (\d+)\s*$/);
  if (!nodeSum) return false;
  const [, key, n] = nodeSum;
  let nodeRun = scan.nodeRun;
  if (key === "tests" || nodeRun === undefined || scan.found !== nodeRun) {
    nodeRun = { framework: "node", passed: 0, failed: 0, skipped: 0, exit_code: null };
    if (scan.named.size > 0)
      nodeRun.tests = [...scan.named].map(([name, status]) => ({ name, status }));
    scan.nodeRun = nodeRun;
    scan.found = nodeRun;
    scan.named = new Map();
    scan.repeating = false;
  }
  if (key === "pass") nodeRun.passed = num(n);
  else if (key === "fail" || key === "cancelled") nodeRun.failed += num(n);
  else if (key === "skipped" || key === "todo") nodeRun.skipped += num(n);
  return true;
}

/** pytest with nothing collected: "===== no tests ran in 0.01s =====" (pytest exits 5). */
function pytestNoTests(l: string, scan: Scan): boolean {
  if (!/\bno tests ran\b.*\bin [\d.]+s\b/.test(l)) return false;
  scan.found = { framework: "pytest", passed: 0, failed: 0, skipped: 0, exit_code: 5 };
  return true;
}

/** unittest / Django: "Ran 5 tests in 0.001s", then "OK (skipped=1)" or "FAILED (failures=1, errors=1)". */
function unittestSummary(l: string, scan: Scan): boolean {
  const ran = l.match(/^Ran (\d+) tests? in [\d.]+s\s*$/);
  if (ran) {
    scan.unittestRan = num(ran[1]);
    return true;
  }
  const unittestRan = scan.unittestRan;
  if (unittestRan === undefined) return false;
  const verdict = l.match(/^(OK|FAILED|NO TESTS RAN)\b(?:\s*\((.*)\))?\s*$/);
  if (!verdict) return false;
  const detail = verdict[2] ?? "";
  const count = (k: string) => num(detail.match(new RegExp(`\\b${k}=(\\d+)`))?.[1]);
  const failed = count("failures") + count("errors") + count("unexpected successes");
  const skipped = count("skipped");
  const xfail = count("expected failures");
  summary(scan, {
    framework: "unittest",
    passed: Math.max(0, unittestRan - failed - skipped - xfail),
    failed,
    skipped: skipped + xfail,
  });
  if (verdict[1] === "NO TESTS RAN" && scan.found !== undefined) scan.found.exit_code = 5;
  scan.unittestRan = undefined;
  return true;
}

/** ctest: "75% tests passed, 1 tests failed out of 4"; skipped ones are listed after "did not run". */
function ctestSummary(l: string, scan: Scan): boolean {
  const ctest = l.match(/^\d+% tests passed, (\d+) tests? failed out of (\d+)/);
  if (!ctest) return false;
  const failed = num(ctest[1]);
  const skipped =
    scan.output.match(/^\s*\d+ - .+\((?:Skipped|Disabled|Not Run)\)\s*$/gm)?.length ?? 0;
  return summary(scan, {
    framework: "ctest",
    passed: Math.max(0, num(ctest[2]) - failed - skipped),
    failed,
    skipped,
  });
}

/** gradle: "3 tests completed, 1 failed, 1 skipped"; a passing build prints only "BUILD SUCCESSFUL". */
function gradleSummary(l: string, scan: Scan): boolean {
  const gradle = l.match(/^(\d+) tests? completed(?:, (\d+) failed)?(?:, (\d+) skipped)?/);
  if (gradle) {
    const failed = num(gradle[2]);
    const skipped = num(gradle[3]);
    return summary(scan, {
      framework: "gradle",
      passed: num(gradle[1]) - failed - skipped,
      failed,
      skipped,
    });
  }
  if (scan.hint !== "gradle" || !/^BUILD (SUCCESSFUL|FAILED)\b/.test(l)) return false;
  const ok = l.includes("SUCCESSFUL");
  if (scan.found?.framework !== "gradle")
    scan.found = {
      framework: "gradle",
      passed: 0,
      failed: ok ? 0 : 1,
      skipped: 0,
      exit_code: ok ? 0 : 1,
    };
  return true;
}

/** tox 4 "  py311: OK (1.2 seconds)" / "  py39: FAIL code 1 (…)"; tox 3 "  py38: commands succeeded" / "ERROR:   py39: commands failed". */
function toxSession(l: string, scan: Scan): boolean {
  const tox = l.match(
    /^(?:ERROR:)?\s+([\w.-]+): (OK|FAIL|commands succeeded|commands failed|SKIP|skipped)\b/,
  );
  if (!tox || (scan.hint !== undefined && scan.hint !== "tox")) return false;
  if (/OK|succeeded/.test(tox[2] ?? "")) scan.sessions.ok++;
  else if (/FAIL|failed/.test(tox[2] ?? "")) scan.sessions.failed++;
  scan.sessions.kind = "tox";
  return true;
}

/** nox: "nox > Session tests-3.11 was successful in 2 seconds." / "nox > Session tests-3.10 failed." */
function noxSession(l: string, scan: Scan): boolean {
  const nox = l.match(/^nox > Session \S+ (was successful|failed|was skipped)/);
  if (!nox) return false;
  if (nox[1] === "was successful") scan.sessions.ok++;
  else if (nox[1] === "failed") scan.sessions.failed++;
  scan.sessions.kind = "nox";
  return true;
}

/** pytest: "==== 3 passed, 1 failed, 2 skipped in 0.12s ====" or "1 failed, 3 passed in 0.1s". */
function pytestSummary(l: string, scan: Scan): boolean {
  if (
    !/\b\d+ (passed|failed|error|errors)\b.*\bin [\d.]+s\b/.test(l) ||
    /Tests?:|test result:/.test(l)
  )
    return false;
  return summary(scan, {
    framework: "pytest",
    passed: num(l.match(/(\d+) passed/)?.[1]),
    failed: num(l.match(/(\d+) failed/)?.[1]) + num(l.match(/(\d+) errors?\b/)?.[1]),
    skipped: num(l.match(/(\d+) skipped/)?.[1]) + num(l.match(/(\d+) xfailed/)?.[1]),
  });
}

/** jest: "Tests:       1 failed, 5 passed, 6 total". */
function jestSummary(l: string, scan: Scan): boolean {
  const m = l.match(/^\s*Tests:\s+(.*)total/);
  if (!m) return false;
  return summary(scan, {
    framework: "jest",
    passed: num(m[1]?.match(/(\d+) passed/)?.[1]),
    failed: num(m[1]?.match(/(\d+) failed/)?.[1]),
    skipped: num(m[1]?.match(/(\d+) (skipped|todo)/)?.[1]),
  });
}

/** vitest: " Tests  2 failed | 10 passed (12)". */
function vitestSummary(l: string, scan: Scan): boolean {
  const m = l.match(/^\s*Tests\s+(.*\(\d+\))\s*$/);
  if (!m) return false;
  return summary(scan, {
    framework: "vitest",
    passed: num(m[1]?.match(/(\d+) passed/)?.[1]),
    failed: num(m[1]?.match(/(\d+) failed/)?.[1]),
    skipped: num(m[1]?.match(/(\d+) skipped/)?.[1]),
  });
}

/** maven: "Tests run: 10, Failures: 1, Errors: 0, Skipped: 2" (the last, aggregated line wins). */
function mavenSummary(l: string, scan: Scan): boolean {
  const m = l.match(
    /Tests run:\s*(\d+),\s*Failures:\s*(\d+),\s*Errors:\s*(\d+)(?:,\s*Skipped:\s*(\d+))?/,
  );
  if (!m) return false;
  const run = num(m[1]);
  const bad = num(m[2]) + num(m[3]);
  const skipped = num(m[4]);
  return summary(scan, {
    framework: "maven",
    passed: Math.max(0, run - bad - skipped),
    failed: bad,
    skipped,
  });
}

/** cargo: "test result: ok. 5 passed; 0 failed; 1 ignored", one per test binary, added up. */
function cargoSummary(l: string, scan: Scan): boolean {
  const m = l.match(/test result: \w+\. (\d+) passed; (\d+) failed(?:; (\d+) ignored)?/);
  if (!m) return false;
  const prev = scan.found?.framework === "cargo" ? scan.found : undefined;
  return summary(scan, {
    framework: "cargo",
    passed: num(m[1]) + (prev?.passed ?? 0),
    failed: num(m[2]) + (prev?.failed ?? 0),
    skipped: num(m[3]) + (prev?.skipped ?? 0),
  });
}

/** mocha: "5 passing" opens a summary, "1 pending" / "1 failing" complete it. */
function mochaSummary(l: string, scan: Scan): boolean {
  const passing = l.match(/^\s*(\d+) passing\b/);
  if (passing)
    return summary(scan, { framework: "mocha", passed: num(passing[1]), failed: 0, skipped: 0 });
  const found = scan.found;
  if (found?.framework !== "mocha") return false;
  const pending = l.match(/^\s*(\d+) pending\b/);
  if (pending) {
    found.skipped = num(pending[1]);
    return true;
  }
  const failing = l.match(/^\s*(\d+) failing\b/);
  if (failing) found.failed = num(failing[1]);
  return failing !== null;
}

/** tox/nox ran sessions: the runner inside gives the counts, a failed session is a failure. */
function withSessions(inner: TestResult | undefined, sessions: Sessions): TestResult | undefined {
  if (sessions.kind === "") return inner;
  return {
    framework: sessions.kind,
    passed: inner?.passed ?? sessions.ok,
    failed: Math.max(inner?.failed ?? 0, sessions.failed),
    skipped: inner?.skipped ?? 0,
    exit_code: null,
    ...(inner?.tests ? { tests: inner.tests } : {}),
  };
}

/**
 * A test command's result from its output and exit code: the runner's summary when the output
 * has one (with the exit code attached), else the exit code alone (0: passed, else one failure);
 * undefined when neither is known — an unknown result is never a success.
 */
export function testResultOf(
  output: string | undefined,
  framework: string,
  exitCode: number | null | undefined,
): TestResult | undefined {
  const parsed = output === undefined ? undefined : parseTestOutput(output, framework);
  const exit = exitCode ?? null;
  if (parsed !== undefined) return { ...parsed, exit_code: exit ?? parsed.exit_code };
  if (exit === null) return undefined;
  return { framework, passed: 0, failed: exit === 0 ? 0 : 1, skipped: 0, exit_code: exit };
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
