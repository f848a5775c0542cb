import { beforeAll, describe, expect, it } from "vitest";
import { loadShellParser, readShellCommand, testFramework } from "./shell-command.ts";

beforeAll(() => loadShellParser());

const writes = (cmd: string) => readShellCommand(cmd).writes.map((w) => [w.path, w.how]);

describe("readShellCommand: what a command line writes", () => {
  it("redirections, here-documents, tee, sed -i, perl -i, cp/mv, rm, touch, git checkout/restore", () => {
    expect(writes("cat > src/fix.py <<'EOF'\nimport pytest\nx = 1\nEOF")).toEqual([
      ["src/fix.py", ">"],
    ]);
    expect(writes("echo 'x' >> notes.txt 2>&1")).toEqual([["notes.txt", ">>"]]);
    // mini-swe-agent's form: the redirect after the here-document's start, and a command after it
    const after = readShellCommand(
      "cat <<'EOF' >> tests/test_x.py && pytest -q tests/test_x.py\ndef test_y(): pass\nEOF",
    );
    expect(after.writes.map((w) => [w.path, w.how])).toEqual([["tests/test_x.py", ">>"]]);
    expect(after.tests.map((t) => t.framework)).toEqual(["pytest"]);
    expect(writes("pytest -q > /dev/null 2>&1")).toEqual([]);
    expect(writes("echo hi | tee -a log.txt out.txt > /dev/null")).toEqual([
      ["log.txt", "tee"],
      ["out.txt", "tee"],
    ]);
    expect(writes("sed -i 's/old/new/g' src/a.py src/b.py")).toEqual([
      ["src/a.py", "sed -i"],
      ["src/b.py", "sed -i"],
    ]);
    expect(writes("sed -i.bak -e 's/a/b/' -e 's/c/d/' conf.ini")).toEqual([["conf.ini", "sed -i"]]);
    expect(writes("perl -pi -e 's/foo/bar/' lib/x.pm")).toEqual([["lib/x.pm", "perl -i"]]);
    expect(writes("cp setup.cfg setup.cfg.orig && mv a.py pkg/")).toEqual([
      ["setup.cfg.orig", "cp"],
      ["pkg/a.py", "mv"],
      ["a.py", "mv"],
    ]);
    expect(readShellCommand("rm -f reproduce.py").writes).toMatchObject([
      { path: "reproduce.py", how: "rm", change: "deleted" },
    ]);
    expect(writes("touch pkg/__init__.py")).toEqual([["pkg/__init__.py", "touch"]]);
    expect(writes("git checkout -- src/a.py src/b.py")).toEqual([
      ["src/a.py", "git checkout"],
      ["src/b.py", "git checkout"],
    ]);
    expect(writes("git checkout astropy/units/core.py")).toEqual([
      ["astropy/units/core.py", "git checkout"],
    ]);
    expect(writes("git checkout -b fix/issue-12")).toEqual([]);
    expect(writes("sed -i '' 's/a/b/' mac.txt")).toEqual([["mac.txt", "sed -i"]]);
    expect(writes("git restore --staged requirements.txt")).toEqual([
      ["requirements.txt", "git restore"],
    ]);
  });

  it("a redirect is 0.9, cp 0.8, touch 0.6; cd moves relative paths; globs and variables are unknown", () => {
    const r = readShellCommand("cd /testbed && echo x > a.txt && cp a.txt b.txt && touch c.txt");
    expect(r.writes.map((w) => [w.path, w.confidence])).toEqual([
      ["/testbed/a.txt", 0.9],
      ["/testbed/b.txt", 0.8],
      ["/testbed/c.txt", 0.6],
    ]);
    expect(
      readShellCommand("(cd sub && echo x > y.txt); echo z > w.txt").writes.map((w) => w.path),
    ).toEqual(["sub/y.txt", "w.txt"]);
    const dyn = readShellCommand('echo x > "$OUT" && rm *.pyc');
    expect(dyn.writes).toEqual([]);
    expect(dyn.unknownWrite).toBe(true);
  });

  it("bash -c and sh -c are read recursively; a here-document fed to bash too", () => {
    const r = readShellCommand(
      `bash -lc "cd /repo && sed -i 's/a/b/' x.py && python -m pytest -q"`,
    );
    expect(r.writes.map((w) => w.path)).toEqual(["/repo/x.py"]);
    expect(r.tests.map((t) => t.framework)).toEqual(["pytest"]);
    expect(readShellCommand("sh -c 'echo 1 > one.txt'").writes.map((w) => w.path)).toEqual([
      "one.txt",
    ]);
    expect(
      readShellCommand("bash <<'EOF'\necho hi > from-stdin.txt\nEOF").writes.map((w) => w.path),
    ).toEqual(["from-stdin.txt"]);
  });

  it("patch / git apply / apply_patch name the files of their here-document diff", () => {
    const diff =
      "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1 +1 @@\n-a\n+b\n";
    expect(writes(`git apply <<'EOF'\n${diff}EOF`)).toEqual([
      ["src/m.py", "git apply (here-document)"],
    ]);
    expect(writes(`patch -p1 <<'EOF'\n${diff}EOF`)).toEqual([
      ["src/m.py", "patch (here-document)"],
    ]);
    expect(readShellCommand("git apply fix.diff").unknownWrite).toBe(true);
    const codex = readShellCommand(
      "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: docs/new.md\n+hi\n*** End Patch\nEOF",
    );
    expect(codex.writes.map((w) => [w.path, w.change])).toEqual([
      ["src/app.py", "modified"],
      ["docs/new.md", "added"],
    ]);
  });

  it("python - <<EOF, python -c and unknown programs write what cannot be named: no file, unknownWrite", () => {
    for (const cmd of [
      "python - <<'EOF'\nopen('a.py', 'w').write('x')\nEOF",
      "python3 -c \"open('b.py','w').write('y')\"",
      "vim src/a.py",
      "./configure",
    ]) {
      const r = readShellCommand(cmd);
      expect(r.writes, cmd).toEqual([]);
      expect(r.unknownWrite, cmd).toBe(true);
    }
  });
});

describe("readShellCommand: what only reads", () => {
  it("cat, grep, rg, sed -n, head, tail, ls, find, wc, nl, awk, git diff/log/show/status/blame never write", () => {
    for (const cmd of [
      "cat src/a.py",
      "cat -n src/a.py | head -n 50",
      "grep -rn 'def parse' src/",
      "rg -n TODO src tests",
      "sed -n '10,40p' src/a.py",
      "tail -20 log.txt",
      "less README.md",
      "ls -la src && find . -name '*.py' -type f",
      "wc -l src/*.py",
      "nl -ba src/a.py",
      "awk '{print $1}' data.csv",
      "git diff HEAD -- src/a.py",
      "git log --oneline -5",
      "git show HEAD:src/a.py",
      "git status --short",
      "git blame src/a.py",
      "find . -name '*.py' -exec grep -l foo {} +",
      "find src -name '*.py' | xargs grep -n 'import'",
    ]) {
      const r = readShellCommand(cmd);
      expect(r.writes, cmd).toEqual([]);
      expect(r.unknownWrite, cmd).toBe(false);
      expect(r.tests, cmd).toEqual([]);
    }
    expect(readShellCommand("cat -n src/a.py | head -n 50").reads).toEqual(["src/a.py"]);
    expect(readShellCommand("sed -n '10,40p' src/a.py").reads).toEqual(["src/a.py"]);
    expect(readShellCommand("grep -n foo src/a.py src/b.py").reads).toEqual([
      "src/a.py",
      "src/b.py",
    ]);
  });
});

describe("readShellCommand: which runner a command runs", () => {
  it("recognises the runners by the command actually run, behind cd, pipes, env, timeout and wrappers", () => {
    const cases: [string, string][] = [
      ["pytest -q tests/test_a.py", "pytest"],
      ["cd /testbed && python -m pytest tests/ -x 2>&1 | tail -30", "pytest"],
      ["python3 -m unittest tests.test_parser -v", "unittest"],
      ["./tests/runtests.py --settings=test_sqlite --parallel 1 admin_views", "django"],
      ["timeout 600 python tests/runtests.py queries.test_q", "django"],
      ["python manage.py test polls", "django"],
      ["./manage.py test polls", "django"],
      ["bundle exec rspec spec/models", "rspec"],
      ["dotnet test", "dotnet"],
      ["tox -e py311", "tox"],
      ["nox -s tests", "nox"],
      ["npx jest src/ --ci", "jest"],
      ["npx vitest run", "vitest"],
      ["mocha test/*.js", "mocha"],
      ["node --test test/", "node"],
      ["npm test", "npm"],
      ["npm run test:unit -- --watch=false", "npm"],
      ["yarn test", "npm"],
      ["pnpm test", "npm"],
      ["go test ./... -run TestParse", "go"],
      ["cargo test --release", "cargo"],
      ["mvn -q test", "maven"],
      ["./gradlew :app:test", "gradle"],
      ["gradle check", "gradle"],
      ["ctest --output-on-failure", "ctest"],
      ["make -C build test", "make"],
      ["make check", "make"],
      ["PYTHONPATH=src env DJANGO_SETTINGS_MODULE=x uv run pytest -k parse", "pytest"],
      ["bash -c 'cd /repo && pytest'", "pytest"],
      ["coverage run -m pytest", "pytest"],
    ];
    for (const [cmd, framework] of cases) expect(testFramework(cmd), cmd).toBe(framework);
  });

  it("code lines that mention pytest, installs and reads are not test commands (the issue's cases)", () => {
    for (const line of [
      "import pytest",
      'pd = pytest.importorskip("pandas")',
      "with pytest.raises(ValueError):",
      "@pytest.mark.parametrize('x', [1, 2])",
      "pip install pytest",
      "grep -rn pytest setup.cfg",
      "cat tests/test_a.py",
      "echo 'run pytest later'",
      "make build",
      "go build ./...",
      "npm install",
      "vitest --version",
    ])
      expect(testFramework(line), line).toBeUndefined();
  });

  it("a script run by an interpreter is a script, not a test", () => {
    const r = readShellCommand("cd /testbed && python reproduce_bug.py && node scratch.js");
    expect(r.tests).toEqual([]);
    expect(r.scripts).toEqual(["/testbed/reproduce_bug.py", "/testbed/scratch.js"]);
  });
});
