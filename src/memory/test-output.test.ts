import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parseTestOutput, testResultOf } from "./test-output.ts";

const real = (name: string) =>
  readFileSync(
    resolve(import.meta.dirname, "../../test/fixtures/memory/test-output", name),
    "utf8",
  );
const counts = (r: ReturnType<typeof parseTestOutput>) =>
  r === undefined ? undefined : [r.framework, r.passed, r.failed, r.skipped, r.exit_code];

describe("parseTestOutput on real runners' output", () => {
  it("unittest: Ran N tests + FAILED (failures, errors, skipped, expected failures) / OK (skipped)", () => {
    expect(counts(parseTestOutput(real("unittest-fail.log")))).toEqual(["unittest", 1, 2, 2, null]);
    expect(counts(parseTestOutput(real("unittest-ok.log")))).toEqual(["unittest", 2, 0, 1, null]);
  });

  it("pytest: passed, failed, skipped and errors; no tests ran is pytest's exit 5, not a pass", () => {
    expect(counts(parseTestOutput(real("pytest-mixed.log")))).toEqual(["pytest", 1, 2, 1, null]);
    expect(counts(parseTestOutput(real("pytest-none.log")))).toEqual(["pytest", 0, 0, 0, 5]);
    expect(counts(parseTestOutput("1 failed, 3 passed, 2 warnings in 0.51s (0:00:00)"))).toEqual([
      "pytest",
      3,
      1,
      0,
      null,
    ]);
  });

  it("ctest: the percentage line, skipped tests from the did-not-run list", () => {
    expect(counts(parseTestOutput(real("ctest-fail.log")))).toEqual(["ctest", 2, 1, 1, null]);
    expect(
      counts(parseTestOutput("100% tests passed, 0 tests failed out of 12\n\nTotal Test time")),
    ).toEqual(["ctest", 12, 0, 0, null]);
  });

  it("cargo test and node --test (TAP)", () => {
    expect(counts(parseTestOutput(real("cargo-fail.log")))).toEqual(["cargo", 1, 1, 1, null]);
    const node = parseTestOutput(real("node-tap.log"));
    expect(counts(node)).toEqual(["node", 1, 1, 1, null]);
    expect(node?.tests).toEqual([
      { name: "adds", status: "pass" },
      { name: "fails", status: "fail" },
      { name: "later", status: "skip" },
    ]);
  });
});

describe("parseTestOutput on the documented formats of runners not installed here", () => {
  it("Django's runner prints unittest's summary after its own lines", () => {
    const django = [
      "Creating test database for alias 'default'...",
      "System check identified no issues (0 silenced).",
      "..F.s",
      "======================================================================",
      "FAIL: test_filter (queries.tests.Queries1Tests.test_filter)",
      "----------------------------------------------------------------------",
      "Ran 5 tests in 0.215s",
      "",
      "FAILED (failures=1, skipped=1)",
      "Destroying test database for alias 'default'...",
    ].join("\n");
    expect(counts(parseTestOutput(django, "django"))).toEqual(["unittest", 3, 1, 1, null]);
  });

  it("jest, vitest, mocha (with pending), maven surefire, gradle", () => {
    expect(
      counts(parseTestOutput("Tests:       1 failed, 1 skipped, 5 passed, 7 total\nTime: 1 s")),
    ).toEqual(["jest", 5, 1, 1, null]);
    expect(
      counts(
        parseTestOutput(
          " Test Files  1 failed | 3 passed (4)\n      Tests  2 failed | 10 passed | 1 skipped (13)",
        ),
      ),
    ).toEqual(["vitest", 10, 2, 1, null]);
    expect(counts(parseTestOutput("  5 passing (12ms)\n  2 pending\n  1 failing\n"))).toEqual([
      "mocha",
      5,
      1,
      2,
      null,
    ]);
    const surefire = [
      "[INFO] Running com.example.AppTest",
      "[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 1, Time elapsed: 0.05 s <<< FAILURE! -- in com.example.AppTest",
      "[INFO] Results:",
      "[ERROR] Tests run: 7, Failures: 1, Errors: 1, Skipped: 1",
      "[INFO] BUILD FAILURE",
    ].join("\n");
    expect(counts(parseTestOutput(surefire))).toEqual(["maven", 4, 2, 1, null]);
    expect(
      counts(
        parseTestOutput(
          "> Task :test FAILED\n\n12 tests completed, 2 failed, 1 skipped\n\nBUILD FAILED in 4s",
        ),
      ),
    ).toEqual(["gradle", 9, 2, 1, null]);
    // a passing gradle build prints no counts: the build line is its result
    expect(
      counts(
        parseTestOutput("> Task :test\n\nBUILD SUCCESSFUL in 3s\n4 actionable tasks", "gradle"),
      ),
    ).toEqual(["gradle", 0, 0, 0, 0]);
  });

  it("go test -v lines, else package lines", () => {
    expect(
      counts(
        parseTestOutput(
          "=== RUN   TestA\n--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.01s)\n--- SKIP: TestC (0.00s)\nFAIL\nFAIL\texample.com/p\t0.02s",
        ),
      ),
    ).toEqual(["go", 1, 1, 1, null]);
    expect(
      counts(parseTestOutput("ok  \texample.com/p\t0.01s\nok  \texample.com/q\t(cached)", "go")),
    ).toEqual(["go", 2, 0, 0, null]);
  });

  it("tox and nox: the inner runner's counts; a failed session is a failure even without them", () => {
    const tox4 = [
      "py311: commands[0]> pytest -q",
      "3 passed in 0.05s",
      "  py311: OK (2.31=setup[1.20]+cmd[1.11] seconds)",
      "  congratulations :) (2.40 seconds)",
    ].join("\n");
    expect(counts(parseTestOutput(tox4, "tox"))).toEqual(["tox", 3, 0, 0, null]);
    const tox3 = "___ summary ___\n  py38: commands succeeded\nERROR:   py39: commands failed";
    expect(counts(parseTestOutput(tox3, "tox"))).toEqual(["tox", 1, 1, 0, null]);
    const nox = [
      "nox > Running session tests-3.11",
      "nox > pytest",
      "4 passed in 0.10s",
      "nox > Session tests-3.11 was successful in 3 seconds.",
      "nox > Running session tests-3.10",
      "nox > Session tests-3.10 failed.",
    ].join("\n");
    expect(counts(parseTestOutput(nox, "nox"))).toEqual(["nox", 4, 1, 0, null]);
  });
});

describe("testResultOf", () => {
  it("the summary with the exit code; the exit code alone without a summary; unknown stays unknown", () => {
    expect(counts(testResultOf(real("pytest-mixed.log"), "pytest", 1))).toEqual([
      "pytest",
      1,
      2,
      1,
      1,
    ]);
    expect(counts(testResultOf("Segmentation fault", "pytest", 139))).toEqual([
      "pytest",
      0,
      1,
      0,
      139,
    ]);
    expect(counts(testResultOf("", "make", 0))).toEqual(["make", 0, 0, 0, 0]);
    expect(testResultOf("collecting ...", "pytest", null)).toBeUndefined();
    expect(testResultOf(undefined, "pytest", undefined)).toBeUndefined();
  });
});
