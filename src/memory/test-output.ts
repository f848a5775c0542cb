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
  let found: TestResult | undefined;
  const set = (r: Omit<TestResult, "exit_code">) => {
    found = { ...r, exit_code: null };
  };
  // node --test: test lines seen since the last summary; the spec reporter repeats failures
  // after "✖ failing tests:", so a name's first outcome in a run is kept.
  let named = new Map<string, "pass" | "fail" | "skip">();
  let repeating = false;
  let nodeRun: TestResult | undefined;
  let unittestRan: number | undefined;
  const sessions = { kind: "", ok: 0, failed: 0 };
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
    // pytest with nothing collected: "===== no tests ran in 0.01s =====" (pytest exits 5)
    if (/\bno tests ran\b.*\bin [\d.]+s\b/.test(l)) {
      found = { framework: "pytest", passed: 0, failed: 0, skipped: 0, exit_code: 5 };
      continue;
    }
    // unittest / Django: "Ran 5 tests in 0.001s", then "OK (skipped=1)" or "FAILED (failures=1, errors=1)"
    const ran = l.match(/^Ran (\d+) tests? in [\d.]+s\s*$/);
    if (ran) {
      unittestRan = num(ran[1]);
      continue;
    }
    if (unittestRan !== undefined) {
      const verdict = l.match(/^(OK|FAILED|NO TESTS RAN)\b(?:\s*\((.*)\))?\s*$/);
      if (verdict) {
        const detail = verdict[2] ?? "";
        const count = (k: string) => num(detail.match(new RegExp(`\\b${k}=(\\d+)`))?.[1]);
        const failed = count("failures") + count("errors") + count("unexpected successes");
        const skipped = count("skipped");
        const xfail = count("expected failures");
        set({
          framework: "unittest",
          passed: Math.max(0, unittestRan - failed - skipped - xfail),
          failed,
          skipped: skipped + xfail,
        });
        if (verdict[1] === "NO TESTS RAN" && found !== undefined) found.exit_code = 5;
        unittestRan = undefined;
        continue;
      }
    }
    // ctest: "75% tests passed, 1 tests failed out of 4"; skipped ones are listed after "did not run"
    const ctest = l.match(/^\d+% tests passed, (\d+) tests? failed out of (\d+)/);
    if (ctest) {
      const failed = num(ctest[1]);
      const skipped =
        output.match(/^\s*\d+ - .+\((?:Skipped|Disabled|Not Run)\)\s*$/gm)?.length ?? 0;
      set({
        framework: "ctest",
        passed: Math.max(0, num(ctest[2]) - failed - skipped),
        failed,
        skipped,
      });
      continue;
    }
    // gradle: "3 tests completed, 1 failed, 1 skipped"; a passing build prints only "BUILD SUCCESSFUL"
    const gradle = l.match(/^(\d+) tests? completed(?:, (\d+) failed)?(?:, (\d+) skipped)?/);
    if (gradle) {
      const failed = num(gradle[2]);
      const skipped = num(gradle[3]);
      set({ framework: "gradle", passed: num(gradle[1]) - failed - skipped, failed, skipped });
      continue;
    }
    if (hint === "gradle" && /^BUILD (SUCCESSFUL|FAILED)\b/.test(l)) {
      const ok = l.includes("SUCCESSFUL");
      if (found?.framework !== "gradle")
        found = {
          framework: "gradle",
          passed: 0,
          failed: ok ? 0 : 1,
          skipped: 0,
          exit_code: ok ? 0 : 1,
        };
      continue;
    }
    // tox 4 "  py311: OK (1.2 seconds)" / "  py39: FAIL code 1 (…)"; tox 3 "  py38: commands succeeded" / "ERROR:   py39: commands failed"
    const tox = l.match(
      /^(?:ERROR:)?\s+([\w.-]+): (OK|FAIL|commands succeeded|commands failed|SKIP|skipped)\b/,
    );
    if (tox && (hint === undefined || hint === "tox")) {
      if (/OK|succeeded/.test(tox[2] ?? "")) sessions.ok++;
      else if (/FAIL|failed/.test(tox[2] ?? "")) sessions.failed++;
      sessions.kind = "tox";
      continue;
    }
    // nox: "nox > Session tests-3.11 was successful in 2 seconds." / "nox > Session tests-3.10 failed."
    const nox = l.match(/^nox > Session \S+ (was successful|failed|was skipped)/);
    if (nox) {
      if (nox[1] === "was successful") sessions.ok++;
      else if (nox[1] === "failed") sessions.failed++;
      sessions.kind = "nox";
      continue;
    }
    // pytest: "==== 3 passed, 1 failed, 2 skipped in 0.12s ====" or "1 failed, 3 passed in 0.1s"
    if (
      /\b\d+ (passed|failed|error|errors)\b.*\bin [\d.]+s\b/.test(l) &&
      !/Tests?:|test result:/.test(l)
    ) {
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
    const pending = l.match(/^\s*(\d+) pending\b/);
    if (pending && found?.framework === "mocha") {
      found.skipped = num(pending[1]);
      continue;
    }
    const failing = l.match(/^\s*(\d+) failing\b/);
    if (failing && found?.framework === "mocha") {
      const m = failing;
      found.failed = num(m[1]);
    }
  }
  const inner = found ?? parseGoTest(output, hint);
  if (sessions.kind === "") return inner;
  // tox/nox ran sessions: the runner inside gives the counts, a failed session is a failure
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
